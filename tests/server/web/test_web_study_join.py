"""A study's one URL, as a recruitment platform hands it out (Prolific's ``PROLIFIC_PID``,
``STUDY_ID``, ``SESSION_ID``): admitted once per label up to the study's capacity, sent to the
seat page with a token in the fragment, refusals one line with a code that change nothing; the
label private (no log, no other participant's page), in the completion link and the exports."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp_support import ADMIN, http_server, tls

from dealroom.cli import main as cli_main
from dealroom.protocol.study_rows import PaymentRow
from dealroom.store.results import ResultsStore

pytestmark = pytest.mark.anyio

SECRET = "5f0c2a9e7d13b84f6a21c9e0d57b3a18"
PID_A, PID_B = "60ffe5c8371090c7041d43f8", "5e9a:b1"  # Prolific-like, and one needing encoding
JOIN = "/web/study/s1/join"


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def token_of(response: httpx2.Response) -> str:
    assert response.status_code == 303, response.text
    location = response.headers["location"]
    assert location.startswith("/web/seat#token=") and "?" not in location
    assert response.headers["cache-control"] == "no-store" and "set-cookie" not in response.headers
    return location.removeprefix("/web/seat#token=")


async def test_the_study_url_admits_each_label_once_up_to_capacity_and_pays_by_label(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", ADMIN)
    logged: list[str] = []  # at the loggers themselves (structlog caches them)
    for module in ("study", "web.study", "web.routes", "studies"):
        monkeypatch.setattr(
            f"dealroom.server.{module}.log.info",
            lambda event, **kw: logged.append(f"{event} {kw}"),
        )
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        url = server.url
        argv = [
            *("study", "create", "--server", url, "--id", "s1", "--open", "2"),
            *("--join-label", "PROLIFIC_PID", "--join-ids", "STUDY_ID,SESSION_ID"),
            *("--house", "accept-any", "--secret", SECRET, "--clock", "virtual"),
            *("--consent", "I agree.", "--exchange-rate", "0.5", "--show-up-fee", "2"),
            *("--currency", "GBP", "--links", str(tmp_path / "links.csv"), "--json"),
            *("--completion-url", "https://app.prolific.com/submissions/complete?cc=C1&p={label}"),
        ]
        capsys.readouterr()
        assert await anyio.to_thread.run_sync(cli_main, argv) == 0
        created = json.loads(capsys.readouterr().out)
        assert created["join"] == (
            f"{url}{JOIN}?PROLIFIC_PID=<PROLIFIC_PID>&STUDY_ID=<STUDY_ID>&SESSION_ID=<SESSION_ID>"
        )
        assert created["participants"] == {} and not (tmp_path / "links.csv").exists()
        study = server.registry.studies.studies["s1"]
        researcher = auth(created["page"].partition("#token=")[2])

        first = await http.get(
            f"{url}{JOIN}",
            params={"PROLIFIC_PID": PID_A, "STUDY_ID": "st1", "SESSION_ID": "se1", "x": "y"},
        )
        token_a = token_of(first)
        again = await http.get(f"{url}{JOIN}", params={"PROLIFIC_PID": PID_A})  # a return
        assert token_of(again) == token_a and list(study.participants) == ["J0001"]
        token_b = token_of(await http.get(f"{url}{JOIN}", params={"PROLIFIC_PID": PID_B}))
        assert token_b != token_a and list(study.participants) == ["J0001", "J0002"]
        full = await http.get(f"{url}{JOIN}", params={"PROLIFIC_PID": "third"})
        assert full.status_code == 410 and full.text.startswith("study_full: this study is full")
        assert full.text.count("\n") == 1 and len(study.participants) == 2
        assert token_of(await http.get(f"{url}{JOIN}?PROLIFIC_PID={PID_B}")) == token_b  # still

        view = (await http.get(f"{url}/web/api/study", headers=researcher)).json()
        assert view["join_places"] == 0 and view["join"].startswith(JOIN)
        assert [(p["label"], p["join_label"]) for p in view["participants"]] == [
            ("J0001", PID_A), ("J0002", PID_B)
        ]  # fmt: skip

        # A plays to a deal; their page never shows another's label, nor theirs to others
        await http.post(f"{url}/web/api/seat/consent", headers=auth(token_a))
        await http.post(f"{url}/web/api/seat/consent", headers=auth(token_b))
        seat = (await http.get(f"{url}/web/api/seat", headers=auth(token_a))).json()
        assert seat["kind"] == "seat" and seat["participant"] == "J0001"
        price = float(seat["observation"]["private_value"]) - 5  # worth 5 to A, the buyer
        body = {"tool": "make_offer", "arguments": {"price": price}}
        await http.post(f"{url}/web/api/seat/call", json=body, headers=auth(token_a))
        wait = {"tool": "wait_for_opponent", "arguments": {"timeout_s": 30}}
        await http.post(f"{url}/web/api/seat/call", json=wait, headers=auth(token_a))
        final = await http.get(f"{url}/web/api/seat", headers=auth(token_a))
        completion = final.json()["completion"]
        assert completion["url"] == (
            f"https://app.prolific.com/submissions/complete?cc=C1&p={PID_A}"
        )
        other = await http.get(f"{url}/web/api/seat", headers=auth(token_b))
        assert PID_A not in other.text and PID_B not in final.text
        for _ in range(200):  # the writer stores results as they come: bounded wait
            with ResultsStore(tmp_path / "results.db", create=False) as store:
                stored = [row.record.model_dump_json() for row in store.iter("s1")]
            if stored:
                break
            await anyio.sleep(0.05)
        assert len(stored) == 1 and PID_A not in stored[0]  # the store names J0001

        exports = {
            name: (await http.get(f"{url}/web/api/study/{name}.csv", headers=researcher)).text
            for name in ("payments", "bonus")
        }
    payments = rows(exports["payments"])
    assert list(payments[0]) == list(PaymentRow.model_fields)
    a, b = payments
    assert (a["participant"], a["join_label"], a["join_ids"]) == (
        "J0001", PID_A, "STUDY_ID=st1;SESSION_ID=se1"
    )  # fmt: skip
    assert (b["join_label"], b["join_ids"], b["state"]) == (PID_B, "", "playing")
    assert a["joined_at"] <= b["joined_at"] and a["joined_at"].endswith("+00:00")
    assert a["consented_at"] and a["state"] == "done"
    earnings = Decimal(a["earnings"])
    assert earnings == Decimal("2.50") and Decimal(a["total"]) == Decimal("4.50")
    assert exports["bonus"] == f"{PID_A},2.50\n"  # B's part is not over: no bonus yet
    assert not [line for line in logged if PID_A in line or PID_B in line or "st1" in line]
    assert any("participant joined" in line and "J0002" in line for line in logged)


async def test_a_visit_the_study_url_refuses_is_one_line_with_a_code_and_admits_nobody(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        url = server.url
        body: dict[str, Any] = {
            "id": "s1",
            "house": "boulware",
            "join": {"capacity": 3, "label": "PROLIFIC_PID", "ids": ["STUDY_ID"]},
        }
        invited = {"id": "s2", "house": "boulware", "participants": ["a"]}
        for request in (body, invited):
            created = await http.post(f"{url}/admin/studies", json=request, headers=auth(ADMIN))
            assert created.status_code == 201, created.text
        for path, status, code in [
            (f"{JOIN}?label=ab", 400, "bad_label"),  # the study's parameter is PROLIFIC_PID
            (f"{JOIN}?PROLIFIC_PID=", 400, "bad_label"),
            (f"{JOIN}?PROLIFIC_PID=a&PROLIFIC_PID=b", 400, "bad_label"),
            (f"{JOIN}?PROLIFIC_PID=%3Cscript%3E", 400, "bad_label"),
            (f"{JOIN}?PROLIFIC_PID={'a' * 129}", 400, "bad_label"),
            (f"{JOIN}?PROLIFIC_PID=ab&STUDY_ID=x%20y", 400, "bad_platform_id"),
            (f"{JOIN}?PROLIFIC_PID=ab&STUDY_ID=x&STUDY_ID=y", 400, "bad_platform_id"),
            ("/web/study/s9/join?PROLIFIC_PID=ab", 404, "no_study"),
            ("/web/study/s2/join?label=ab", 403, "study_not_open"),
        ]:
            response = await http.get(f"{url}{path}")
            assert response.status_code == status, path
            assert response.text.startswith(f"{code}: ") and response.text.count("\n") == 1
            assert response.headers["content-type"].startswith("text/plain")
        studies = server.registry.studies.studies
        assert len(studies["s1"].participants) == 0 and list(studies["s2"].participants) == ["a"]

        for bad, words in [
            ({**body, "join": {"capacity": 0}}, "join.capacity"),
            ({**body, "join": {"capacity": 1, "label": "1x"}}, "join.label"),
            ({**body, "join": {"capacity": 1, "ids": ["a", "a"]}}, "unique"),
            ({**body, "join": {"capacity": 1, "ids": ["label"]}}, "the label's parameter"),
            ({**body, "join": {"capacity": 1, "ids": list("abcdefghi")}}, "join.ids"),
            ({**body, "join": {"capacity": 2000}, "participants": ["a"]}, "at most 2000"),
            ({"id": "s3", "house": "boulware"}, "a join capacity"),
            ({**body, "completion_url": "https://x.org/?p={nope}"}, "placeholder"),
            ({**body, "completion_url": "https://{label}.x.org/"}, "not the host"),
        ]:
            bad = {**bad, "id": "s3"}
            response = await http.post(f"{url}/admin/studies", json=bad, headers=auth(ADMIN))
            error = response.json()["error"]
            assert response.status_code == 400 and words in error and "\n" not in error, bad
        assert set(studies) == {"s1", "s2"}


def test_study_create_refuses_join_flags_without_open_and_bad_parameter_names(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", ADMIN)
    base = ["study", "create", "--server", "http://127.0.0.1:9", "--id", "s1", "--house", "b"]
    links = ["--links", str(tmp_path / "l.csv")]
    for argv, words in [
        ([*base, *links], "one of --participants, --participants-file, --count or --open"),
        ([*base, *links, "--count", "2", "--join-ids", "STUDY_ID"], "go with --open N"),
        ([*base, *links, "--open", "2", "--join-label", "a b"], "--join-label: "),
        ([*base, *links, "--open", "2", "--join-ids", "A,A"], "--join-ids: "),
        ([*base, *links, "--open", "0"], "--open"),
    ]:
        assert cli_main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err, err

"""A study over HTTP, as a researcher runs it: created by ``dealroom study create`` (the admin
API), played by its participants through their seat-page links, followed on the study page and
exported as CSV, the CSV and the payments checked against the results store."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp_support import ADMIN, HttpServer, http_server, tls

from dealroom.cli import main as cli_main
from dealroom.protocol.study_rows import EventRow, NegotiationRow, PageEventRow, PaymentRow
from dealroom.server import study_export
from dealroom.store.results import ResultsStore

pytestmark = pytest.mark.anyio

SECRET = "5f0c2a9e7d13b84f6a21c9e0d57b3a18"


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


async def create(
    tmp_path: Path, server: HttpServer, capsys: pytest.CaptureFixture[str], *extra: str
) -> dict[str, Any]:
    """``dealroom study create --json`` against the server; its printed JSON."""
    argv = [
        *("study", "create", "--server", f"{server.url}/mcp", "--id", "s1", "--count", "2"),
        *("--house", "accept-any", "--role", "alternate", "--negotiations", "2"),
        *("--secret", SECRET, "--clock", "virtual", "--consent", "I agree."),
        *("--exchange-rate", "0.5", "--show-up-fee", "3", "--currency", "EUR"),
        *("--completion-code", "DONE42", "--links", str(tmp_path / "links.csv"), "--json"),
        *extra,
    ]
    capsys.readouterr()
    assert await anyio.to_thread.run_sync(cli_main, argv) == 0
    return dict(json.loads(capsys.readouterr().out))


async def call(http: httpx2.AsyncClient, url: str, token: str, tool: str, **args: Any) -> Any:
    body = {"tool": tool, "arguments": args}
    response = await http.post(f"{url}/web/api/seat/call", json=body, headers=auth(token))
    assert response.status_code == 200, response.text
    return response.json()


async def play_to_a_deal(http: httpx2.AsyncClient, url: str, token: str, price: float) -> None:
    """Against ``accept-any``: the participant offers, the house accepts."""
    view = (await http.get(f"{url}/web/api/seat", headers=auth(token))).json()
    assert view["kind"] == "seat" and view["observation"]["outcome"] is None
    assert "error" not in await call(http, url, token, "make_offer", price=price)
    ended = await call(http, url, token, "wait_for_opponent", timeout_s=30)
    assert ended["result"]["outcome"]["status"] == "deal"


async def test_a_study_is_created_played_followed_and_exported_as_the_store_holds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", ADMIN)
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        created = await create(tmp_path, server, capsys)
        links = tmp_path / "links.csv"
        assert stat.S_IMODE(os.stat(links).st_mode) == 0o600  # the links are credentials
        linked = {row["participant"]: row["link"] for row in rows(links.read_text())}
        assert linked == created["participants"] and set(linked) == {"p01", "p02"}
        page = created["page"]
        assert page.startswith(f"{server.url}/web/study#token=")
        study = page.partition("#token=")[2]
        tokens = {label: link.partition("#token=")[2] for label, link in linked.items()}

        view = (await http.get(f"{server.url}/web/api/study", headers=auth(study))).json()
        assert view["states"] == {
            "invited": 2, "consenting": 0, "waiting": 0, "playing": 0, "done": 0,
            "timed_out": 0, "dropped": 0, "quiz_failed": 0, "closed": 0,
        }  # fmt: skip

        # p01 (buyer) plays both negotiations; p02 (seller) one, and reloads their page once
        for label in ("p01", "p02"):
            lobby = await http.get(f"{server.url}/web/api/seat", headers=auth(tokens[label]))
            assert lobby.json()["kind"] == "lobby" and lobby.json()["needs_consent"]
            await http.post(f"{server.url}/web/api/seat/consent", headers=auth(tokens[label]))
            await http.post(
                f"{server.url}/web/api/seat/page",
                json={"event": "open"},
                headers=auth(tokens[label]),
            )
        url = server.url
        await play_to_a_deal(http, url, tokens["p01"], 5.0)
        assert "error" not in await call(http, url, tokens["p01"], "new_negotiation")
        await play_to_a_deal(http, url, tokens["p01"], 6.0)
        await play_to_a_deal(http, url, tokens["p02"], 900.0)
        await http.post(
            f"{url}/web/api/seat/page", json={"event": "hidden"}, headers=auth(tokens["p02"])
        )

        final = (await http.get(f"{url}/web/api/seat", headers=auth(tokens["p01"]))).json()
        assert final["series_over"] and not final["can_start_next"]
        assert final["completion"]["code"] == "DONE42"
        view = (await http.get(f"{url}/web/api/study", headers=auth(study))).json()
        lines = {line["label"]: line for line in view["participants"]}
        assert (lines["p01"]["state"], lines["p01"]["played"]) == ("done", 2)
        assert (lines["p02"]["state"], lines["p02"]["role"]) == ("playing", "seller")
        assert lines["p02"]["last_event"] == "hidden"
        assert Decimal(lines["p02"]["payment"]) >= Decimal("3.00")  # owed so far: the fee at least
        for line in lines.values():  # a watch link: the room page of where they play
            watch = line["watch"].partition("#token=")[2]
            room = await http.get(f"{url}/web/api/room", headers=auth(watch))
            assert room.status_code == 200 and room.json()["room"] == line["room"]

        for _ in range(200):  # the writer stores results as they come: bounded wait
            with ResultsStore(tmp_path / "results.db", create=False) as store:
                stored = {row.key: row for row in store.iter("s1")}
            if len(stored) == 3:
                break
            await anyio.sleep(0.05)

        exports = {
            name: (await http.get(f"{url}/web/api/study/{name}.csv", headers=auth(study)))
            for name in view["exports"]
        }
        assert all(r.status_code == 200 for r in exports.values())
        assert exports["payments"].headers["content-type"].startswith("text/csv")
        # the same exports through the admin API (what `dealroom study export` saves)
        out = tmp_path / "export"
        out.mkdir()
        argv = ["study", "export", "--server", url, "--out", str(out), "s1"]
        assert await anyio.to_thread.run_sync(cli_main, argv) == 0
        for name, response in exports.items():
            assert (out / f"s1-{name}.csv").read_bytes() == response.content
            assert stat.S_IMODE(os.stat(out / f"s1-{name}.csv").st_mode) == 0o600
        (out / "s1-events.csv").write_text("an earlier export")
        for name in ("negotiations", "payments", "page_events"):
            (out / f"s1-{name}.csv").unlink()
        capsys.readouterr()
        assert await anyio.to_thread.run_sync(cli_main, argv) == 2
        assert "never overwritten" in capsys.readouterr().err
        assert (out / "s1-events.csv").read_text() == "an earlier export"
        assert not (out / "s1-payments.csv").exists()  # refused before anything was written
        cited = tmp_path / "cited"
        cited.mkdir()
        argv = ["study", "export", "--server", url, "--out", str(cited), "--with-secret", "s1"]
        assert await anyio.to_thread.run_sync(cli_main, argv) == 0
        config = json.loads((cited / "s1-config.json").read_text())
        assert config["secret"] == SECRET and config["payoff"]["currency"] == "EUR"
        assert stat.S_IMODE(os.stat(cited / "s1-config.json").st_mode) == 0o600
        codebook = rows((cited / "s1-codebook.csv").read_text())
        assert {"file", "column", "type", "description"} == set(codebook[0])
        assert (
            await http.get(f"{url}/web/api/study/config.csv", headers=auth(study))
        ).status_code == 404
        # the study page's token never reads the secret
        assert (
            await http.get(f"{url}/admin/studies/s1/config.json", headers=auth(study))
        ).status_code == 401

    negotiations = rows(exports["negotiations"].text)
    assert list(negotiations[0]) == list(NegotiationRow.model_fields)
    assert [(r["participant"], r["negotiation"], r["role"]) for r in negotiations] == [
        ("p01", "1", "buyer"), ("p01", "2", "buyer"), ("p02", "1", "seller")
    ]  # fmt: skip
    assert set(stored) == {r["key"] for r in negotiations}
    p01_first = negotiations[0]["key"]
    for row in negotiations:  # every value, price and surplus as the store holds it
        record = stored[row["key"]].record
        scenario, outcome = record.scenario, record.outcome
        assert Decimal(row["buyer_value"]) == scenario.buyer_value
        assert Decimal(row["seller_cost"]) == scenario.seller_cost
        assert Decimal(row["price"]) == outcome.price and row["status"] == outcome.status
        own = outcome.buyer_surplus if row["role"] == "buyer" else outcome.seller_surplus
        assert Decimal(row["surplus"]) == own and row["counterpart"] == "accept-any"
        assert row["currency"] == scenario.currency and row["pays"] == "true"  # rule: all
        assert Decimal(row["payoff"]) == (Decimal("0.5") * own).quantize(Decimal("0.01"))
    # the pages' opens came before their first negotiation began (its clock starts at the first
    # view or move), p02's hidden after its deal: between negotiations, counted against none
    assert [r["page_opens"] for r in negotiations] == ["0", "0", "0"]
    assert negotiations[2]["page_hidden"] == "0"

    events = rows(exports["events"].text)  # every event, who acted, read from the store
    assert list(events[0]) == list(EventRow.model_fields)
    assert len(events) == sum(len(record.record.events) for record in stored.values())
    first = [
        (e["type"], e["by"], e["price"], e["end_reason"]) for e in events if e["key"] == p01_first
    ]
    assert first[0] == ("offer_made", "p01", "5.00", "")
    assert first[1][:2] == ("offer_accepted", "accept-any")
    assert (first[-1][0], first[-1][3]) == ("negotiation_ended", "accepted")

    payments = {r["participant"]: r for r in rows(exports["payments"].text)}
    assert list(rows(exports["payments"].text)[0]) == list(PaymentRow.model_fields)
    p01 = [r for r in negotiations if r["participant"] == "p01"]
    earnings = max(sum(Decimal(r["surplus"]) for r in p01) * Decimal("0.5"), Decimal(0))
    assert Decimal(payments["p01"]["total"]) == Decimal("3.00") + earnings.quantize(Decimal("0.01"))
    assert (payments["p01"]["paid"], payments["p01"]["completion_code"]) == ("1;2", "DONE42")
    p02 = next(r for r in negotiations if r["participant"] == "p02")  # owed so far
    owed = Decimal("3.00") + max(Decimal(p02["surplus"]) * Decimal("0.5"), Decimal(0)).quantize(
        Decimal("0.01")
    )
    assert (payments["p02"]["state"], Decimal(payments["p02"]["total"])) == ("playing", owed)
    assert payments["p02"]["completion_code"] == ""  # only once their part is over
    events = rows(exports["page_events"].text)
    assert list(events[0]) == list(PageEventRow.model_fields)
    assert [(e["participant"], e["event"]) for e in events] == [
        ("p01", "open"), ("p02", "open"), ("p02", "hidden")
    ]  # fmt: skip


async def test_study_tokens_open_only_their_own_routes_and_bad_requests_change_nothing(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        url = server.url
        body = {"id": "s2", "participants": ["a", "b"], "house": "boulware"}
        for bad, status, words in [
            ({**body, "house": "nosuch"}, 400, "nosuch"),
            ({**body, "participants": ["a", "a"]}, 400, "unique"),
            ({**body, "id": "bad id"}, 400, "id"),
            ({**body, "matching": "pairs"}, 400, "house: a pair study's house agent plays only"),
            ({**body, "after_wait": "house"}, 400, "after_wait: a house agent after the wait"),
        ]:
            response = await http.post(f"{url}/admin/studies", json=bad, headers=auth(ADMIN))
            assert response.status_code == status and words in response.json()["error"], bad
            assert "\n" not in response.json()["error"]
        assert server.registry.studies.studies == {} and server.registry.rooms == {}
        assert (await http.post(f"{url}/admin/studies", json=body)).status_code == 401
        created = await http.post(f"{url}/admin/studies", json=body, headers=auth(ADMIN))
        assert created.status_code == 201
        again = await http.post(f"{url}/admin/studies", json=body, headers=auth(ADMIN))
        assert again.status_code == 409 and "already a study" in again.json()["error"]
        study, participant = created.json()["token"], created.json()["participants"]["a"]

        assert (
            await http.get(f"{url}/web/api/study", headers=auth(participant))
        ).status_code == 401
        assert (await http.get(f"{url}/web/api/seat", headers=auth(study))).status_code == 401
        assert (await http.get(f"{url}/web/api/study", headers=auth(ADMIN))).status_code == 401
        assert (await http.get(f"{url}/web/api/runs", headers=auth(study))).status_code == 401
        missing = await http.get(f"{url}/web/api/study/nope.csv", headers=auth(study))
        assert missing.status_code == 404 and "negotiations" in missing.json()["error"]
        shown = await http.get(f"{url}/admin/studies/s2", headers=auth(ADMIN))
        assert shown.status_code == 200 and shown.json()["states"]["invited"] == 2
        assert (await http.get(f"{url}/admin/studies/s9", headers=auth(ADMIN))).status_code == 404
        assert (await http.get(f"{url}/admin/studies/s2", headers=auth(study))).status_code == 401
        page = await http.get(f"{url}/web/study")
        assert (
            page.status_code == 200
            and "unsafe-inline" not in page.headers["content-security-policy"]
        )


def test_study_create_refuses_bad_flags_and_an_existing_links_file_before_opening_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", ADMIN)
    links = tmp_path / "links.csv"
    links.write_text("kept\n")
    base = ["study", "create", "--server", "http://127.0.0.1:9", "--id", "s1", "--count", "2"]
    cases = [
        ([*base, "--house", "boulware", "--links", str(links)], "never overwritten"),
        ([*base, "--links", str(tmp_path / "x.csv")], "--house: a solo study needs a house"),
        ([*base, "--matching", "pairs", "--role", "seller"], "--role: a pair study has no fixed"),
        ([*base, "--house", "b", "--exchange-rate", "lots"], "--exchange-rate"),
        ([*base, "--house", "b", "--completion-url", "ftp://x"], "--completion-url"),
        ([*base, "--house", "b", "--participants", "a"], "not allowed with argument --count"),
    ]
    for argv, words in cases:
        assert cli_main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err, err
    assert links.read_text() == "kept\n" and not (tmp_path / "x.csv").exists()


async def test_links_that_cannot_be_written_are_printed_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", ADMIN)

    def full_disk(path: Path, text: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("dealroom.cli.study.write_private", full_disk)
    async with http_server(tmp_path) as server:
        argv = [
            *("study", "create", "--server", server.url, "--id", "s3", "--count", "2"),
            *("--house", "boulware", "--links", str(tmp_path / "links.csv")),
        ]
        assert await anyio.to_thread.run_sync(cli_main, argv) == 1
        captured = capsys.readouterr()
        assert captured.err.count("\n") == 1 and "No space left on device" in captured.err
        printed = rows(captured.out.split("\n", 1)[1])  # after the study page's line
        assert [row["participant"] for row in printed] == ["p01", "p02"]
        token = printed[0]["link"].partition("#token=")[2]
        ticket = server.registry.studies.lookup(token)
        assert ticket is not None and ticket.who is not None and ticket.who.label == "p01"


async def test_events_exports_at_once_are_built_once_off_the_event_loop_one_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", ADMIN)
    built: list[int] = []
    active = [0, 0]  # now, most at once
    lock = threading.Lock()
    original = study_export.event_rows

    def counted(study: Any, stored: Any) -> list[EventRow]:
        with lock:
            active[0] += 1
            active[1] = max(active)
        time.sleep(0.05)  # long enough for exports at once to overlap, if they may
        try:
            return original(study, stored)
        finally:
            with lock:
                active[0] -= 1
                built.append(1)

    monkeypatch.setattr(study_export, "event_rows", counted)
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        created = await create(tmp_path, server, capsys)
        study = created["page"].partition("#token=")[2]
        token = created["participants"]["p01"].partition("#token=")[2]
        await http.post(f"{server.url}/web/api/seat/consent", headers=auth(token))
        await play_to_a_deal(http, server.url, token, 5.0)
        for _ in range(200):  # the writer stores results as they come: bounded wait
            with ResultsStore(tmp_path / "results.db", create=False) as store:
                if len(store.keys("s1")) == 1:
                    break
            await anyio.sleep(0.05)
        url = f"{server.url}/web/api/study/events.csv"
        bodies: list[str] = []

        async def export() -> None:
            response = await http.get(url, headers=auth(study))
            assert response.status_code == 200, response.text
            bodies.append(response.text)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                for _ in range(32):
                    group.start_soon(export)
            assert (len(built), active[1]) == (1, 1)  # built once, never two at once
            assert len(set(bodies)) == 1 and "offer_made" in bodies[0]
            assert "error" not in await call(http, server.url, token, "new_negotiation")
            await play_to_a_deal(http, server.url, token, 6.0)
            for _ in range(200):
                after = (await http.get(url, headers=auth(study))).text
                if len(rows(after)) > len(rows(bodies[0])):
                    break
                await anyio.sleep(0.05)
    assert {row["key"] for row in rows(after)} > {row["key"] for row in rows(bodies[0])}

"""The researcher's controls: a study paused admits no new label through its URL (everyone in
goes on); resumed, it admits again; closed, for good, nobody new and every part ends
(``closed``) once its open negotiation has ended, paid by the rule for what was finished; a
closed study stays closed; the status survives a restart; the study page's token and the admin
token set it, a participant's cannot; bad bodies are one-line 400s that change nothing."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp_support import ADMIN, http_server, tls
from test_study import SECRET, registry
from test_study_dropouts import four_in_play

from dealroom.cli import main as cli_main
from dealroom.protocol import MakeOffer, WalkAway
from dealroom.server.seat import RoomSeat
from dealroom.server.study_export import export_csv
from dealroom.server.web.views import lobby_view

pytestmark = pytest.mark.anyio

JOIN = "/web/study/s1/join"


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_a_closed_study_ends_every_part_once_its_negotiation_has_ended(
    tmp_path: Path,
) -> None:
    rooms = registry(tmp_path)
    study, (a, b, c, d) = four_in_play(rooms)
    people = study.participants
    seated = study.current(a)
    assert seated is not None
    room, role = seated
    await RoomSeat(room, role).act(MakeOffer(price=Decimal(1)))

    assert study.control.set("closed") is None
    await study.tick()
    states = {label: study.state(who) for label, who in people.items()}
    assert states == {"a": "playing", "b": "playing", "c": "closed", "d": "closed"}
    assert room.current.is_open  # played to its end: nobody's partner is left alone
    completion = study.completion(c)
    assert completion is not None and completion.ended == "closed"
    assert "The researcher has closed the study" in completion.message
    assert completion.code == "C0DE" and completion.payoff is not None
    assert completion.payoff.total == Decimal("5.00")
    lobby = lobby_view(study, d)
    assert lobby.completion is not None and lobby.completion.payoff is None  # never took part

    other = "seller" if role == "buyer" else "buyer"
    await RoomSeat(room, other).act(WalkAway())  # the negotiation ends as any other
    assert not room.current.is_open
    await study.tick()
    assert study.state(a) == "closed" and study.state(b) == "closed"
    payments = {
        r["participant"]: r for r in csv.DictReader(io.StringIO(export_csv(study, "payments")))
    }
    assert {label: r["state"] for label, r in payments.items()} == {
        label: "closed" for label in "abcd"
    }
    assert [payments[label]["total"] for label in "abc"] == ["5.00"] * 3
    assert payments["d"]["total"] == ""

    assert study.control.set("open") == "a closed study stays closed"
    assert study.control.status == "closed"
    again = registry(tmp_path)
    again.restore()
    back = again.studies.studies["pairs"]
    assert back.control.status == "closed" and back.control.since == study.control.since
    assert {label: back.state(who) for label, who in back.participants.items()} == {
        label: "closed" for label in "abcd"
    }


async def test_pause_resume_and_close_over_http_and_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", ADMIN)
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        url = server.url
        body = {
            "id": "s1",
            "join": {"capacity": 5, "label": "PID"},
            "house": "conceder",
            "secret": SECRET,
        }
        created = (await http.post(f"{url}/admin/studies", json=body, headers=auth(ADMIN))).json()
        researcher = auth(created["token"])
        study = server.registry.studies.studies["s1"]
        first = await http.get(f"{url}{JOIN}", params={"PID": "p1"})
        assert first.status_code == 303
        token = first.headers["location"].partition("#token=")[2]

        status = f"{url}/web/api/study/status"
        for bad, words in [
            ({"status": "shut"}, "status: Input should be 'open', 'paused' or 'closed'"),
            ({}, "status: Field required"),
        ]:
            refused = await http.post(status, json=bad, headers=researcher)
            assert refused.status_code == 400 and refused.json()["error"].startswith(words)
        assert (
            await http.post(status, json={"status": "paused"}, headers=auth(token))
        ).status_code == 401
        assert study.control.status == "open"

        paused = await http.post(status, json={"status": "paused"}, headers=researcher)
        assert paused.status_code == 200 and paused.json()["status"] == "paused"
        assert paused.json()["status_since"].endswith("+00:00")
        refused = await http.get(f"{url}{JOIN}", params={"PID": "p2"})
        assert refused.status_code == 503
        assert refused.text == "study_paused: this study is paused: please try again later\n"
        assert len(study.participants) == 1
        back = await http.get(f"{url}{JOIN}", params={"PID": "p1"})  # already in: goes on
        assert back.status_code == 303 and back.headers["location"].endswith(token)

        capsys.readouterr()
        argv = ["study", "resume", "--server", url, "s1"]
        assert await anyio.to_thread.run_sync(cli_main, argv) == 0
        assert capsys.readouterr().out == "study s1: open (1 invited)\n"
        assert (await http.get(f"{url}{JOIN}", params={"PID": "p2"})).status_code == 303

        argv = ["study", "close", "--server", url, "s1"]
        assert await anyio.to_thread.run_sync(cli_main, argv) == 0
        assert capsys.readouterr().out.startswith("study s1: closed (")
        closed = await http.get(f"{url}{JOIN}", params={"PID": "p3"})
        assert closed.status_code == 410 and closed.text.startswith("study_closed: ")
        reopen = await http.post(
            f"{url}/admin/studies/s1/status", json={"status": "open"}, headers=auth(ADMIN)
        )
        assert reopen.status_code == 400
        assert reopen.json() == {"error": "status: a closed study stays closed"}
        argv = ["study", "pause", "--server", url, "nosuch"]
        assert await anyio.to_thread.run_sync(cli_main, argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "no such study" in err
        view = (await http.get(f"{url}/web/api/study", headers=researcher)).json()
        assert view["status"] == "closed"
        assert json.dumps(view).count(SECRET) == 0

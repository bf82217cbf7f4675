"""The web pages' routes on a real loopback server: tokens, the seat's calls, live streams,
experiments (consent, participant ids) and the tournament data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp_support import (
    ADMIN,
    HttpServer,
    http_server,
    ok,
    refused,
    share_schema_validators,
    text_of,
    tls,
)

from dealroom.analysis.report import FEATURE_LABELS
from dealroom.cli import main as cli_main
from dealroom.play.backends import SerialBackend
from dealroom.play.tournament import Tournament, TournamentConfig
from dealroom.protocol import ActionResult, ToolErrorPayload, WaitResult, people_text, seat_text
from dealroom.server.web.tournament import REBUILD_FACTOR, _Reports, run_view  # pyright: ignore[reportPrivateUsage]
from dealroom.store.results import ResultsStore

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _shared_validators(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def call(
    http: httpx2.AsyncClient, server: HttpServer, token: str, tool: str, **arguments: Any
) -> dict[str, Any]:
    body = {"tool": tool, "arguments": arguments}
    response = await http.post(f"{server.url}/web/api/seat/call", json=body, headers=auth(token))
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_pages_are_static_with_a_strict_content_security_policy(tmp_path: Path) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        for page in ("room", "seat", "tournament"):
            response = await http.get(f"{server.url}/web/{page}")
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/html")
            csp = response.headers["content-security-policy"]
            assert "script-src 'self'" in csp and "unsafe-inline" not in csp
            assert response.headers["x-content-type-options"] == "nosniff"
            assert "<script>" not in response.text  # no inline script: every script is a file
        # The ready line's link: an index of the pages (it once answered 404).
        index = await http.get(f"{server.url}/web/")
        assert index.status_code == 200 and "content-security-policy" in index.headers
        for page in ("room", "seat", "tournament", "study"):
            assert f'href="/web/{page}"' in index.text
        css = (await http.get(f"{server.url}/web/static/web.css")).text
        # Event numbers past 9 keep their digits (20 px cut the first one off).
        assert "ol.log, ul.msgs { margin: 0; padding-left: 3.5em;" in css
        script = await http.get(f"{server.url}/web/static/seat.js")
        assert script.headers["content-type"].startswith("text/javascript")
        assert (await http.get(f"{server.url}/web/static/nope.js")).status_code == 404
        assert (await http.get(f"{server.url}/web/static/..%2Fviews.py")).status_code == 404


async def test_each_token_opens_only_its_own_routes(tmp_path: Path) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        created = await server.create_room(house_seller="hardliner")
        seat, spectator = created["tokens"]["buyer"], created["spectator"]
        assert spectator not in created["tokens"].values()
        cases = [
            ("/web/api/room", spectator, 200),
            ("/web/api/room", seat, 401),
            ("/web/api/room", ADMIN, 401),
            ("/web/api/room", spectator[:-1], 401),
            ("/web/api/seat", seat, 200),
            ("/web/api/seat", spectator, 401),
            ("/web/api/runs", seat, 401),
            ("/web/api/runs", spectator, 401),
            ("/web/api/runs", ADMIN, 200),
        ]
        for path, token, status in cases:
            response = await http.get(f"{server.url}{path}", headers=auth(token))
            assert response.status_code == status, (path, token == seat, response.text)
        assert (await http.get(f"{server.url}/web/api/room")).status_code == 401
        posted = await http.post(
            f"{server.url}/web/api/seat/call",
            json={"tool": "get_state", "arguments": {}},
            headers=auth(spectator),
        )
        assert posted.status_code == 401
        # A spectator token is no MCP seat token either.
        mcp = await http.post(f"{server.url}/mcp", json={}, headers=auth(spectator))
        assert mcp.status_code == 401


async def test_the_seat_page_calls_the_same_tools_with_the_same_refusals_as_mcp(
    tmp_path: Path,
) -> None:
    """Same results and refusal codes; the page's texts are a person's (people_text)."""
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        web = (
            await server.create_room(
                house_seller="hardliner", secret="fb8e20fc2e4c3f248c60c39bd652f3c1"
            )
        )["tokens"]
        mcp = (
            await server.create_room(
                house_seller="hardliner", secret="fb8e20fc2e4c3f248c60c39bd652f3c1"
            )
        )["tokens"]
        async with server.seat(mcp["buyer"]) as client:
            for tool, arguments in [
                ("make_offer", {"price": "100"}),
                ("make_offer", {"price": -5}),
                ("accept", {"offer_id": "o99"}),
                ("make_offer", {"price": 10, "note": "x"}),
                ("get_secret", {}),
                ("make_offer", {"price": 100.0, "message": "hello"}),
                ("wait_for_opponent", {"timeout_s": 30}),
            ]:
                mine = await call(http, server, web["buyer"], tool, **arguments)
                theirs = await client.call_tool(tool, arguments)
                if theirs.is_error:
                    code = ToolErrorPayload.parse(text_of(theirs)).code
                    assert mine["error"]["code"] == code, tool
                    assert mine["error"]["text"] == people_text.refusal(
                        ToolErrorPayload.parse(text_of(theirs)), "web"
                    )
                else:
                    assert "error" not in mine, mine
                    assert mine["result"] == theirs.structured_content
                    assert people_text.tool_names_in(mine["text"]) == []
        unknown = await call(http, server, web["buyer"], "get_secret")
        assert unknown["error"]["code"] == "unknown_tool"
        bad = await http.post(
            f"{server.url}/web/api/seat/call", content=b"{", headers=auth(web["buyer"])
        )
        assert bad.status_code == 400 and "JSON" in bad.json()["error"]


async def test_a_room_of_two_clients_offers_the_web_seat_no_series_tool(tmp_path: Path) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        tokens = (await server.create_room())["tokens"]
        view = (await http.get(f"{server.url}/web/api/seat", headers=auth(tokens["buyer"]))).json()
        assert not view["can_start_next"] and not view["series_over"]
        refused = await call(http, server, tokens["buyer"], "new_negotiation")
        assert refused["error"]["code"] == "unknown_tool"


async def read_events(response: httpx2.Response, count: int) -> list[dict[str, Any]]:
    """The first ``count`` views of a live stream."""
    views: list[dict[str, Any]] = []
    with anyio.fail_after(10):
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                views.append(json.loads(line[6:]))
                if len(views) == count:
                    break
    return views


async def test_the_room_stream_sends_a_new_view_when_a_seat_acts(tmp_path: Path) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        created = await server.create_room(house_seller="hardliner")
        url = f"{server.url}/web/api/room/events"
        async with http.stream("GET", url, headers=auth(created["spectator"])) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = response.aiter_lines()
            first = await anext_view(lines)
            assert first["events"] == [] and first["open"]
            await call(http, server, created["tokens"]["buyer"], "make_offer", price=50.0)
            second = await anext_view(lines)
            assert [e["type"] for e in second["events"]][-1] == "offer_made"


async def anext_view(lines: Any) -> dict[str, Any]:
    with anyio.fail_after(10):
        async for line in lines:
            if line.startswith("data: "):
                return dict(json.loads(line[6:]))
    raise AssertionError("the stream ended")


async def test_an_experiment_room_asks_for_consent_and_stores_under_the_participant(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        created = await server.create_room(
            house_seller="accept-any", participant="p07", consent="I agree to take part."
        )
        token = created["tokens"]["buyer"]
        view = (await http.get(f"{server.url}/web/api/seat", headers=auth(token))).json()
        assert view["needs_consent"] and view["consent"] == "I agree to take part."
        refused = await call(http, server, token, "make_offer", price=10.0)
        assert refused["error"]["code"] == "consent_required"
        assert "error" not in await call(http, server, token, "get_state")
        agreed = await http.post(f"{server.url}/web/api/seat/consent", headers=auth(token))
        assert agreed.status_code == 200
        offered = await call(http, server, token, "make_offer", price=10.0)
        ended = await call(http, server, token, "wait_for_opponent", timeout_s=30)
        assert ended["result"]["outcome"]["status"] == "deal"
        # What the page's calls that reached the seat read as a model's text (the person read
        # people_text's words; the record keeps the model's, for training).
        read = [
            seat_text.update_text(ActionResult.model_validate(offered["result"]), "buyer", "USD"),
            seat_text.update_text(WaitResult.model_validate(ended["result"]), "buyer", "USD"),
        ]
        assert people_text.tool_names_in(offered["text"] + ended["text"]) == []
        runs = (await http.get(f"{server.url}/web/api/runs", headers=auth(ADMIN))).json()
        (p07,) = runs["runs"]
        assert (p07["run"], p07["stored"], p07["planned"], p07["deals"]) == ("p07", 1, None, 1)
        assert p07["state"] == "running"  # a result just stored; no plan to finish
    with ResultsStore(tmp_path / "results.db", create=False) as store:
        (stored,) = store.iter("p07")
        assert stored.extra["participant"] == "p07"
        assert stored.extra["consent"]["text"] == "I agree to take part."
        assert set(stored.extra["consent"]["agreed"]) == {"buyer"}
    out = tmp_path / "p07.jsonl"  # the person's seat exports like any other
    assert (
        cli_main(["export-sft", str(tmp_path / "results.db"), "--run", "p07", "--out", str(out)])
        == 0
    )
    (example,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert example["metadata"]["role"] == "buyer"
    calls = example["messages"][1:]
    assert [m["tool_calls"][0]["function"]["name"] for m in calls[::2]] == [
        "get_state",
        "make_offer",
        "wait_for_opponent",
    ]
    assert [m["content"] for m in calls[1::2]][1:] == read


async def test_an_experiment_seat_over_mcp_cannot_play_before_its_person_consents(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        created = await server.create_room(
            house_seller="accept-any", participant="p08", consent="I agree to take part."
        )
        token = created["tokens"]["buyer"]
        room = server.registry.rooms[created["room"]]
        async with server.seat(token) as client:  # the same token, over /mcp
            texts = [
                await refused(client, "make_offer", price=10.0),
                await refused(client, "walk_away"),
                await refused(client, "wait_for_opponent", timeout_s=1),
            ]
            await ok(client, "get_state")
            assert room.current.is_open and room.series.finished == 0
            agreed = await http.post(f"{server.url}/web/api/seat/consent", headers=auth(token))
            assert agreed.status_code == 200
            await ok(client, "walk_away")
    assert all(text.startswith("consent_required: ") for text in texts), texts
    with ResultsStore(tmp_path / "results.db", create=False) as store:
        (stored,) = store.iter("p08")
    assert set(stored.extra["consent"]["agreed"]) == {"buyer"}


async def test_the_tournament_data_is_the_reports_leaderboard_and_progress(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "results.db") as store:
        config = TournamentConfig(agents=("hardliner", "conceder"), tiers=("low",), per_pair=1)
        Tournament(config, store, "cup").run(backend=SerialBackend())
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        runs = (await http.get(f"{server.url}/web/api/runs", headers=auth(ADMIN))).json()
        (listed,) = runs["runs"]
        assert (listed["run"], listed["stored"], listed["planned"]) == ("cup", 2, 2)
        assert listed["state"] == "finished"
        cup = (await http.get(f"{server.url}/web/api/runs/cup", headers=auth(ADMIN))).json()
        assert cup["stored"] == cup["planned"] == 2 and cup["state"] == "finished"
        assert sorted(cup["agents"]) == ["conceder", "hardliner"]
        assert {row["agent"] for row in cup["leaderboard"]} == {"conceder", "hardliner"}
        assert cup["report_of"] == 2 and cup["models"] is None  # no LLM seat in this run
        plots = cup["plots"]
        assert [len(plots["surplus-by-tier"]), len(plots["feature"])] == [2, len(FEATURE_LABELS)]
        assert all(svg.startswith("<svg ") for svgs in cup["plots"].values() for svg in svgs)
        assert set(cup["colors"]) == set(cup["agents"])
        missing = await http.get(f"{server.url}/web/api/runs/nope", headers=auth(ADMIN))
        assert missing.status_code == 404
        assert (await http.get(f"{server.url}/web/api/runs/cup")).status_code == 401


async def test_room_create_prints_each_pages_link_and_takes_the_experiment_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", ADMIN)
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        argv = [
            *("room", "create", "--server", f"{server.url}/mcp", "--house-seller", "boulware"),
            *("--participant", "p01", "--consent", "I agree.", "--negotiations", "2"),
        ]
        assert await anyio.to_thread.run_sync(cli_main, argv) == 0
        out = capsys.readouterr().out
        lines = dict(line.split(maxsplit=1) for line in out.splitlines() if " page " not in line)
        links = {line.split()[0]: line.split()[-1] for line in out.splitlines() if " page " in line}
        assert links["buyer"] == f"{server.url}/web/seat#token={lines['buyer']}"
        assert links["spectator"].startswith(f"{server.url}/web/room#token=")
        room = server.registry.rooms[lines["room"]]
        assert (room.settings.experiment.participant, room.consent.text, room.run) == (
            "p01",
            "I agree.",
            "p01",
        )
        spectator = links["spectator"].partition("#token=")[2]
        view = await http.get(f"{server.url}/web/api/room", headers=auth(spectator))
        assert view.status_code == 200 and view.json()["room"] == room.id
    assert cli_main([*argv[:4], "--participant", "no spaces"]) == 2


async def test_a_series_of_n_negotiations_ends_after_n(tmp_path: Path) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        token = (await server.create_room(house_seller="accept-any", negotiations=2))["tokens"]
        for n in (1, 2):
            assert "error" not in await call(http, server, token["buyer"], "make_offer", price=5.0)
            ended = await call(http, server, token["buyer"], "wait_for_opponent", timeout_s=30)
            assert ended["result"]["outcome"]["status"] == "deal", n
            started = await call(http, server, token["buyer"], "new_negotiation")
            if n == 1:
                assert started["result"]["negotiation"] == 2
        assert started["error"]["code"] == "series_over"


def test_a_growing_runs_report_is_rebuilt_only_once_the_last_build_is_old_enough(
    tmp_path: Path,
) -> None:
    now = [0.0]
    reports = _Reports(timer=lambda: now[0])
    builds: list[int] = []
    with ResultsStore(tmp_path / "results.db") as store:
        config = TournamentConfig(agents=("hardliner", "conceder"), tiers=("low",), per_pair=1)
        Tournament(config, store, "cup").run(backend=SerialBackend())

        def counting(store: ResultsStore, run: str) -> dict[str, Any] | None:
            view = run_view(store, run)
            builds.append(0 if view is None else view["stored"])
            now[0] += 1.0  # each build "takes" one second
            return view

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("dealroom.server.web.tournament.run_view", counting)
            first = reports.view(store, "cup")
            assert first is not None and (first["stored"], first["report_of"]) == (2, 2)
            assert reports.view(store, "cup") is not None  # unchanged run: no rebuild
            for n, row in enumerate(list(store.iter("cup"))):  # the run goes on
                store.add(f"more/{n}", row.record, run="cup")
            grown = reports.view(store, "cup")  # grown, but the last build is 0 s old
            assert grown is not None and (grown["stored"], grown["report_of"]) == (4, 2)
            now[0] += REBUILD_FACTOR * 1.0
            caught_up = reports.view(store, "cup")
            assert caught_up is not None and caught_up["report_of"] == 4
            assert reports.view(store, "nope") is None
    assert builds == [2, 4]

"""The room page of a market room over loopback HTTP: its spectator token, the view's JSON while
the market runs (every thread as the seller sees it, no private value) and once it is over
(every value, the scoring, the market measures), live, and only for its own token."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp_support import ADMIN, HttpServer, house_resolver, http_server, ok, secret_of, tls

from dealroom.agents.market import market_seller
from dealroom.analysis.market import market_measures
from dealroom.cli import main as cli_main
from dealroom.protocol import OfferMade, RoomRequest
from dealroom.server.market_room import open_market
from dealroom.server.web.market_views import MarketSpectatorView, market_spectator_view
from leaks import leaked

pytestmark = pytest.mark.anyio

SECRET = secret_of(38).hex()
LINEAR = {"b1": "linear", "b2": "linear", "b3": "linear"}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def room_page(server: HttpServer, token: str) -> tuple[MarketSpectatorView, str]:
    async with httpx2.AsyncClient(verify=tls()) as http:
        response = await http.get(f"{server.url}/web/api/room", headers=auth(token))
    assert response.status_code == 200, response.text
    return MarketSpectatorView.model_validate_json(response.text), response.text


async def sell(client: Client) -> dict[str, Any]:
    """Wait for bids; accept the highest once it clears the cost by 5%: the seller's view at
    the end."""
    view = await ok(client, "get_state")
    floor = Decimal(str(view["private_value"])) * Decimal("1.05")
    for _ in range(100):
        if view["outcome"] is not None:
            return view
        bids = [
            (Decimal(str(offer["price"])), thread["buyer"], offer["offer_id"])
            for thread in view["threads"]
            for offer in thread["live_offers"]
            if offer["by"] == "buyer"
        ]
        if bids and max(bids)[0] >= floor:
            _, buyer, offer_id = max(bids)
            view = await ok(client, "accept", buyer=buyer, offer_id=offer_id)
        else:
            view = await ok(client, "wait_for_opponent", timeout_s=10)
    raise AssertionError("the market did not end")


async def test_the_room_page_of_a_market_shows_every_thread_then_the_outcome_and_scoring(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path, resolve_seller=market_seller) as server:
        created = await server.create_room(buyers=3, house_buyers=LINEAR, secret=SECRET)
        spectator = created["spectator"]
        assert spectator and spectator not in created["tokens"].values()
        market = server.registry.markets[created["room"]].current
        first, _ = await room_page(server, spectator)
        assert first.kind == "market" and first.open and first.result is None
        assert first.room == created["room"] and first.market == market.market.id
        assert first.seller == "mcp" and [(t.buyer, t.seat) for t in first.threads] == [
            ("b1", "linear"),
            ("b2", "linear"),
            ("b3", "linear"),
        ]
        assert first.seller_actions == 0 and first.seller_budget == 100

        async with server.seat(created["tokens"]["seller"]) as client:
            price = float(round(market.market.seller_cost * 2, 2))
            seen = await ok(client, "make_offer", buyer="b1", price=price)
            running, body = await room_page(server, spectator)
            # What the seller sees of every thread, and no more: no value, not the cost.
            assert running.open and running.now == seen["now"] > 0
            assert running.seller_actions == 1
            for thread, theirs in zip(running.threads, seen["threads"], strict=True):
                shown = json.loads(thread.model_dump_json())
                assert shown["events"] == theirs["events"] and shown["open"] == theirs["open"]
                assert shown["live_offers"] == theirs["live_offers"]
            assert any(
                isinstance(e, OfferMade) and e.by == "seller" for e in running.threads[0].events
            )
            bids = [
                (o.price, t.buyer)
                for t in running.threads
                for o in t.live_offers
                if o.by == "buyer"
            ]
            assert running.best_bid is not None and running.best_bid.price == max(bids)[0]
            public = {
                e.price for t in running.threads for e in t.events if isinstance(e, OfferMade)
            }
            for value in (market.market.seller_cost, *market.market.buyer_values):
                assert leaked(body, value, public, fields=("buyer_values", "seller_cost")) is None
            end = await sell(client)

        over, body = await room_page(server, spectator)
        record = market.record()
        assert not over.open and over.best_bid is None and over.result is not None
        assert over.result.outcome == record.outcome
        assert over.result.outcome.buyer == end["outcome"]["buyer"] is not None
        assert over.result.seller_cost == market.market.seller_cost
        assert list(over.result.buyer_values.values()) == list(market.market.buyer_values)
        assert over.result.measures == market_measures(record)
        assert over.seller_actions == record.outcome.seller_actions
        scoring = json.loads(body)["result"]
        assert {"efficiency", "allocative", "seller_share"} <= set(scoring["outcome"])
        assert json.loads(body)["result"]["measures"] == dataclasses.asdict(market_measures(record))
        assert [t.open for t in over.threads] == [False] * 3


async def test_the_room_page_of_a_market_is_live(tmp_path: Path) -> None:
    async with (
        http_server(tmp_path, resolve_seller=market_seller) as server,
        httpx2.AsyncClient(verify=tls(), timeout=10) as http,
    ):
        created = await server.create_room(buyers=3, house_buyers=LINEAR, secret=SECRET)
        url = f"{server.url}/web/api/room/events"
        async with http.stream("GET", url, headers=auth(created["spectator"])) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            async for line in stream.aiter_lines():
                if line.startswith("data: "):
                    view = MarketSpectatorView.model_validate_json(line.removeprefix("data: "))
                    assert view.room == created["room"] and len(view.threads) == 3
                    break
            else:
                raise AssertionError("the stream sent no view")


async def test_only_a_market_rooms_spectator_token_opens_its_room_page(tmp_path: Path) -> None:
    async with (
        http_server(tmp_path, resolve_seller=market_seller) as server,
        httpx2.AsyncClient(verify=tls()) as http,
    ):
        created = await server.create_room(
            buyers=3, house_seller="auctioneer", house_buyers={"b1": "linear", "b3": "zic"}
        )
        bilateral = await server.create_room(house_seller="boulware")
        seat, spectator = created["tokens"]["b2"], created["spectator"]
        for path in ("/web/api/room", "/web/api/room/events"):
            for token in (seat, spectator[:-1], ADMIN, bilateral["tokens"]["buyer"]):
                response = await http.get(f"{server.url}{path}", headers=auth(token))
                assert response.status_code == 401, (path, response.text)
                assert response.json() == {"error": "missing or wrong spectator token"}
            assert (await http.get(f"{server.url}{path}")).status_code == 401
        view, _ = await room_page(server, spectator)
        assert view.seller == "auctioneer" and [t.seat for t in view.threads] == [
            "linear",
            "mcp",
            "zic",
        ]
        other = await http.get(f"{server.url}/web/api/room", headers=auth(bilateral["spectator"]))
        assert other.json()["room"] == bilateral["room"] and "threads" not in other.json()
        # A spectator token is read-only: no seat page, no tool call, no MCP seat.
        assert (
            await http.get(f"{server.url}/web/api/seat", headers=auth(spectator))
        ).status_code == 401
        call = {"tool": "get_state", "arguments": {}}
        posted = await http.post(
            f"{server.url}/web/api/seat/call", json=call, headers=auth(spectator)
        )
        assert posted.status_code == 401
        assert (await http.post(server.mcp, json={}, headers=auth(spectator))).status_code == 401


async def test_room_create_prints_a_market_rooms_seat_and_spectator_links(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", ADMIN)
    houses = ["--house-buyers", "b1=linear,b2=linear,b3=linear"]
    async with http_server(tmp_path) as server:
        argv = ["room", "create", "--server", server.url, "--buyers", "3", *houses]
        assert await anyio.to_thread.run_sync(cli_main, argv) == 0
        lines = capsys.readouterr().out.splitlines()
        assert await anyio.to_thread.run_sync(cli_main, [*argv, "--json"]) == 0
        created = json.loads(capsys.readouterr().out)
        assert list(created["tokens"]) == ["seller"]
        assert set(created["links"]) == {"seller", "spectator"}
        link = created["links"]["spectator"]
        assert link == f"{server.url}/web/room#token={created['spectator']}"
        seat = created["links"]["seller"]  # the seller's seat page
        assert seat == f"{server.url}/web/seat#token={created['tokens']['seller']}"
        view, _ = await room_page(server, created["spectator"])
        assert view.room == created["room"]
    assert lines[0].startswith("room room-") and lines[1].startswith("seller ")
    assert lines[2].startswith("seller page    http://127.0.0.1:")
    assert "/web/seat#token=" in lines[2]
    assert lines[3].startswith("spectator page http://127.0.0.1:") and "#token=" in lines[3]


async def test_a_market_rooms_page_never_runs_ahead_of_its_client_seats_clock(
    tmp_path: Path,
) -> None:
    """A buyer's client: the house seller and buyers act only up to the client's clock, so the
    page's clock and every event it shows are at or before the client's ``now``."""
    async with http_server(tmp_path, resolve_seller=market_seller) as server:
        created = await server.create_room(
            buyers=3,
            house_seller="auctioneer",
            house_buyers={"b1": "linear", "b3": "boulware"},
            secret=SECRET,
        )
        async with server.seat(created["tokens"]["b2"]) as client:
            steps = [("make_offer", {"price": 500.0}), ("wait_for_opponent", {"timeout_s": 20})]
            checked = 0
            for tool, arguments in steps * 3:
                reply = await ok(client, tool, **arguments)
                view, _ = await room_page(server, created["spectator"])
                if view.result is not None:
                    break
                assert view.now == reply["now"]
                assert all(e.t <= reply["now"] for t in view.threads for e in t.events)
                mine = [json.loads(e.model_dump_json()) for e in view.threads[1].events]
                state = await ok(client, "get_state")
                assert mine == state["observation"]["events"]  # b2's column: what b2 sees
                checked += 1
        assert checked == 6


async def test_the_room_page_of_a_market_says_its_clock() -> None:
    """A wall-clock market's page says the wall clock (it said the virtual one for every
    market, and the page read '(virtual clock)' on real time)."""
    for clock in ("virtual", "wall"):
        request = RoomRequest(buyers=2, clock=clock, house_buyers={"b1": "linear"}, secret=SECRET)
        room = open_market(
            "room-t",
            request,
            resolve_house=house_resolver,
            resolve_seller=market_seller,
            writer=None,
        )
        assert market_spectator_view(room).clock == clock

"""Market rooms with several client seats over HTTP: each client seat has its own token, the
clients take turns on the virtual clock (so the record does not depend on the wall-time order of
their calls), each buyer's client reads only its own thread, and a silent client holds nobody
up for longer than the room's idle limit."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from market_support import assert_reads_only_its_thread, buyer_plays, sell
from mcp import Client
from mcp.types import CallToolResult
from mcp_support import HttpServer, dumps, http_server, ok, secret_of, text_of

from dealroom.agents.market import market_seller
from dealroom.server.market_room import MarketRoomServed
from dealroom.server.mcp_app import OBSERVATION_URI, TRANSCRIPT_URI
from dealroom.server.negotiation import RoomLimits

pytestmark = pytest.mark.anyio

SECRET = secret_of(38).hex()


def _market(server: HttpServer, room: str) -> MarketRoomServed:
    return server.registry.markets[room].current


async def test_a_seller_and_two_buyer_clients_of_a_three_buyer_room_make_a_sale_stored_once(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path, resolve_seller=market_seller) as server:
        created = await server.create_room(buyers=3, house_buyers={"b3": "linear"}, secret=SECRET)
        tokens = created["tokens"]
        assert list(tokens) == ["seller", "b1", "b2"] and len(set(tokens.values())) == 3
        room = _market(server, created["room"])
        replies: dict[str, list[str]] = {"b1": [], "b2": []}
        ends: dict[str, dict[str, Any]] = {}

        async def seller() -> None:
            async with server.seat(tokens["seller"]) as client:
                ends["seller"] = await sell(client)

        async def buyer(name: str) -> None:
            async with server.seat(tokens[name]) as client:
                briefing = await client.get_prompt("briefing")
                replies[name].append(briefing.messages[0].content.text)  # type: ignore[union-attr]
                ends[name] = await buyer_plays(client, replies[name])
                for uri in (OBSERVATION_URI, TRANSCRIPT_URI):
                    contents = (await client.read_resource(uri)).contents
                    replies[name].append("".join(getattr(c, "text", "") for c in contents))

        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                group.start_soon(seller)
                group.start_soon(buyer, "b1")
                group.start_soon(buyer, "b2")
        outcome = ends["seller"]["outcome"]
        assert outcome["status"] == "deal" and not room.is_open and room.stored
        assert Decimal(str(outcome["price"])) > room.market.seller_cost
        await server.registry.tick()
        stored = dict(server.registry.writer.store.iter_markets())  # type: ignore[union-attr]
        assert list(stored) == [f"{created['room']}/1"]
        record = stored[f"{created['room']}/1"]
        assert record.seller == "mcp" and record.buyers == ("mcp", "mcp", "linear")
        assert record == room.record() and record.outcome.buyer == outcome["buyer"]
        for name in ("b1", "b2"):
            assert_reads_only_its_thread("\n".join(replies[name]), room, name)


async def _scripted_buyer(
    client: Client, name: str, delay: float, arrivals: list[str], replies: list[str]
) -> None:
    """A buyer whose every decision follows from what it read: offers rising from 40% of its
    value, waits in between, accepts a seller's offer at most 90% of its value. It sleeps
    ``delay`` wall seconds before each call (to change the wall order of the calls)."""

    async def call(tool: str, **arguments: Any) -> CallToolResult:
        await anyio.sleep(delay)
        arrivals.append(name)
        result = await client.call_tool(tool, arguments)
        replies.append(text_of(result) + dumps(result.structured_content))
        return result

    state = (await call("get_state")).structured_content
    assert state is not None
    value = Decimal(str(state["observation"]["private_value"]))
    update: dict[str, Any] = state["observation"]
    for step in range(60):
        if update["outcome"] is not None:
            return
        theirs = [o for o in update["live_offers"] if o["by"] == "seller"]
        if theirs and Decimal(str(theirs[0]["price"])) <= value * Decimal("0.9"):
            result = await call("accept", offer_id=theirs[0]["offer_id"])
        elif step % 2 == 0:
            share = min(Decimal("0.4") + Decimal("0.04") * step, Decimal("0.95"))
            result = await call("make_offer", price=float(round(value * share, 2)))
        else:
            result = await call("wait_for_opponent", timeout_s=30)
        if result.is_error:
            observed = (await call("get_state")).structured_content
            assert observed is not None
            update = observed["observation"]
        else:
            assert result.structured_content is not None
            update = result.structured_content
    raise AssertionError("the thread did not end")


async def _play_in_order(server: HttpServer, slow: str) -> tuple[str, dict[str, str], list[str]]:
    """Two buyer clients against a house seller, ``slow`` calling a little later each time:
    the record's JSON, each buyer's replies, and the wall order in which calls arrived."""
    created = await server.create_room(buyers=2, house_seller="auctioneer", secret=SECRET)
    tokens = created["tokens"]
    assert list(tokens) == ["b1", "b2"]
    arrivals: list[str] = []
    replies: dict[str, list[str]] = {"b1": [], "b2": []}

    async def buyer(name: str) -> None:
        async with server.seat(tokens[name]) as client:
            delay = 0.03 if name == slow else 0.0
            await _scripted_buyer(client, name, delay, arrivals, replies[name])

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            group.start_soon(buyer, "b1")
            group.start_soon(buyer, "b2")
    room = _market(server, created["room"])
    assert not room.is_open and room.stored
    return room.record().model_dump_json(), {n: "\n".join(r) for n, r in replies.items()}, arrivals


async def test_two_buyer_clients_calling_in_different_wall_orders_make_the_same_record(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path, resolve_seller=market_seller) as server:
        record_a, replies_a, arrivals_a = await _play_in_order(server, slow="b2")
        record_b, replies_b, arrivals_b = await _play_in_order(server, slow="b1")
    assert arrivals_a != arrivals_b  # the calls did arrive in different wall orders
    assert arrivals_a[0] == "b1" and arrivals_b[0] == "b2"
    assert record_a == record_b  # byte for byte
    assert replies_a == replies_b  # and every reply each client read
    assert '"b1"' in record_a and '"b2"' in record_a


async def test_a_silent_buyer_client_is_counted_absent_and_the_others_play_on(
    tmp_path: Path,
) -> None:
    limits = RoomLimits(idle_s=0.5)
    async with http_server(tmp_path, limits=limits, resolve_seller=market_seller) as server:
        created = await server.create_room(buyers=2, house_seller="auctioneer", secret=SECRET)
        room = _market(server, created["room"])
        async with server.seat(created["tokens"]["b1"]) as b1:
            with anyio.fail_after(30):
                state = await ok(b1, "get_state")  # b1's turn comes first: no wait
                price = float(Decimal(str(state["observation"]["private_value"])) / 2)
                await ok(b1, "make_offer", price=price)  # b2's turn next: b2 never calls
            assert room.turns.absent == {"b2"}
            async with server.seat(created["tokens"]["b2"]) as b2:
                with anyio.fail_after(30):
                    back = await ok(b2, "get_state")  # b2 comes back and gets a turn
                assert back["observation"]["private_value"] is not None
                assert room.turns.absent == {"b1"}  # b1 now stalled b2's call
            with anyio.fail_after(60):
                for _ in range(200):
                    waited = await ok(b1, "wait_for_opponent", timeout_s=30)
                    if waited["outcome"] is not None:
                        break
        assert not room.is_open and room.stored


async def test_a_market_whose_clients_all_went_silent_is_run_to_its_end_by_the_reaper(
    tmp_path: Path,
) -> None:
    limits = RoomLimits(abandon_s=0.0)
    async with http_server(tmp_path, limits=limits, resolve_seller=market_seller) as server:
        created = await server.create_room(buyers=3, house_buyers={"b2": "linear"}, secret=SECRET)
        room = _market(server, created["room"])
        assert room.is_open and room.turns.turn == "seller"
        await server.registry.tick()
        assert not room.is_open and room.stored
        assert room.turns.absent == {"seller", "b1", "b3"}
        assert room.view()["absent"] == ["b1", "b3", "seller"]


async def test_a_wait_while_another_client_decides_replies_pending_and_sleeps_on(
    tmp_path: Path,
) -> None:
    limits = RoomLimits(idle_s=3.0)  # b2 must not count as idle before b1's wait ends
    async with http_server(tmp_path, limits=limits, resolve_seller=market_seller) as server:
        created = await server.create_room(buyers=2, house_seller="auctioneer", secret=SECRET)
        room, tokens = _market(server, created["room"]), created["tokens"]
        async with server.seat(tokens["b1"]) as b1, server.seat(tokens["b2"]) as b2:
            with anyio.fail_after(30):
                value = Decimal(str((await ok(b1, "get_state"))["observation"]["private_value"]))
                waited = await ok(b1, "wait_for_opponent", timeout_s=0.3)
                assert waited["woke"] == "pending" and room.turns.turn == "b2"
                assert "b1" not in room.turns.absent  # asleep, not absent
                state = await ok(b2, "get_state")  # b2's turn: it has not decided yet
                price = float(Decimal(str(state["observation"]["private_value"])) / 2)
                seen: dict[str, Any] = {}

                async def b2_offers() -> None:
                    seen["b2"] = await ok(b2, "make_offer", price=price)

                async with anyio.create_task_group() as group:
                    group.start_soon(b2_offers)
                    again = await ok(b1, "get_state")  # served at b1's wake on the clock
                    assert again["observation"]["now"] >= 0.3 and "b2" not in seen
                    await ok(b1, "make_offer", price=float(value / 2))
        assert seen["b2"]["events"] and room.engine.referee.threads["b1"].event_count

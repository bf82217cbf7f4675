"""A market room plays a series of markets, as a bilateral house room plays its negotiations: a
client seat (the seller's or a buyer's) starts each next market with new_negotiation, each market
is stored once under ROOM/N, get_state carries the series, a restored series is at the same
market, several client seats keep one market, and a store that fails blocks no next market."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from market_support import buyer_plays, sell
from mcp import Client
from mcp_support import ADMIN, HttpServer, http_server, ok, refused, secret_of, text_of, tls

from dealroom.agents.market import market_seller
from dealroom.protocol import RoomRequest, SessionErrorCode
from dealroom.protocol.market_referee import MarketRecord
from dealroom.server.market_room import market_of
from dealroom.server.market_seats import ServedMarketBuyer
from dealroom.server.market_series import ONE_MARKET
from dealroom.server.mcp_app import build_app
from dealroom.server.negotiation import RoomLimits
from dealroom.server.rooms import RoomRegistry
from dealroom.server.seat import CallRefused
from dealroom.server.web.market_views import MarketSpectatorView, room_page_view

pytestmark = pytest.mark.anyio

SECRET = secret_of(38).hex()
LINEAR = {"b1": "linear", "b2": "linear", "b3": "linear"}


def _stored(server: HttpServer) -> dict[str, MarketRecord]:
    return dict(server.registry.writer.store.iter_markets())  # type: ignore[union-attr]


async def _admin_view(server: HttpServer, room: str) -> dict[str, Any]:
    async with httpx2.AsyncClient(verify=tls()) as http:
        shown = await http.get(
            f"{server.url}/admin/rooms/{room}", headers={"Authorization": f"Bearer {ADMIN}"}
        )
    assert shown.status_code == 200, shown.text
    return dict(shown.json())


async def test_a_seller_client_plays_three_markets_each_stored_once_under_its_number(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path, resolve_seller=market_seller) as server:
        request = {"buyers": 3, "house_buyers": LINEAR, "secret": SECRET, "negotiations": 3}
        created = await server.create_room(**request)
        room = created["room"]
        series = server.registry.markets[room]
        ends: list[dict[str, Any]] = []
        async with server.seat(created["tokens"]["seller"]) as client:
            for number in (1, 2, 3):
                if number > 1:
                    started = await client.call_tool("new_negotiation", {})
                    assert not started.is_error, text_of(started)
                    view = started.structured_content
                    assert view is not None and view["outcome"] is None
                    tally = view["series"]
                    assert (tally["negotiation"], tally["finished"]) == (number, number - 1)
                    assert not tally["can_start_next"]  # not while it runs
                    total = sum(Decimal(str(e["outcome"]["surplus"])) for e in ends)
                    assert Decimal(str(tally["total_surplus"])) == total
                    assert f"series: market {number}; {number - 1} finished" in text_of(started)
                    running = await refused(client, "new_negotiation")
                    assert running.startswith("negotiation_running: The current market")
                market = series.current
                assert market.number == number and market.key == f"{room}/{number}"
                assert market.market == market_of(RoomRequest(**request), number - 1)
                page = room_page_view(series)
                assert isinstance(page, MarketSpectatorView) and page.negotiation == number
                ends.append(await sell(client))
                assert (await _admin_view(server, room))["negotiation"] == number
            state = await ok(client, "get_state")
            over = await refused(client, "new_negotiation")
        assert over.startswith("series_over: ")
        stored = _stored(server)
        assert sorted(stored) == [f"{room}/1", f"{room}/2", f"{room}/3"]
        assert len({record.scenario.id for record in stored.values()}) == 3
        total = sum(record.outcome.seller_surplus for record in stored.values())
        assert all(record.outcome.status == "deal" for record in stored.values())
        tally = state["series"]
        assert (tally["negotiation"], tally["finished"], tally["can_start_next"]) == (3, 3, False)
        assert Decimal(str(tally["total_surplus"])) == total
        shown = await _admin_view(server, room)
        assert shown["finished"] == 3 and shown["key"] == f"{room}/3" and shown["stored"]
        assert shown["pending"] == [] and shown["series"]
        await server.registry.tick()
        assert _stored(server) == stored  # each stored once

        # Each market's house agents are fresh, seeded by the market: the second market of the
        # series is the market a one-market room on that market plays, event for event.
        alone = await server.create_room(**{**request, "index": 1, "negotiations": 1})
        async with server.seat(alone["tokens"]["seller"]) as client:
            await sell(client)
        second = _stored(server)[f"{alone['room']}/1"]
        assert second.model_dump_json() == stored[f"{room}/2"].model_dump_json()


async def test_a_buyer_client_plays_a_series_and_reads_its_own_surplus(tmp_path: Path) -> None:
    async with http_server(tmp_path, resolve_seller=market_seller) as server:
        created = await server.create_room(
            buyers=3,
            house_seller="auctioneer",
            house_buyers={"b1": "linear", "b3": "boulware"},
            secret=SECRET,
            negotiations=2,
        )
        room = created["room"]
        async with server.seat(created["tokens"]["b2"]) as client:
            briefing = await client.get_prompt("briefing")
            assert "new_negotiation starts the next" in briefing.messages[0].content.text  # type: ignore[union-attr]
            first = await ok(client, "get_state")
            await buyer_plays(client, [])
            after_first = await ok(client, "get_state")
            second = await ok(client, "new_negotiation")
            await buyer_plays(client, [])
            state = await ok(client, "get_state")
            assert (await refused(client, "new_negotiation")).startswith("series_over: ")
        assert second["negotiation"] == 2 and second["observation"]["outcome"] is None
        assert second["observation"]["scenario"]["id"] != first["observation"]["scenario"]["id"]
        assert after_first["finished"] == 1 and after_first["can_start_next"]
        stored = _stored(server)
        assert sorted(stored) == [f"{room}/1", f"{room}/2"]
        mine = [
            record.outcome.buyer_surplus if record.outcome.buyer == "b2" else Decimal("0.00")
            for _, record in sorted(stored.items())
        ]
        assert Decimal(str(state["total_surplus"])) == sum(mine)
        assert state["finished"] == 2 and not state["can_start_next"]
        assert [r["negotiation"] for r in state["results"]] == [1, 2]
        assert [Decimal(str(r["outcome"]["surplus"])) for r in state["results"]] == mine
        assert [r["scenario_id"] for r in state["results"]] == [
            f"{stored[f'{room}/{n}'].scenario.id}.b2" for n in (1, 2)
        ]


def _seller(registry: RoomRegistry, room: str) -> Client:
    """An in-memory MCP client in the seller's seat of a market room of ``registry``."""
    return Client(build_app(lambda: registry.served_seat(room, "seller")))


def _state(registry: RoomRegistry, room: str) -> dict[str, Any]:
    """Everything a restored series must have as it was."""
    series = registry.markets[room]
    market = series.current
    calls = market.seller_calls
    assert calls is not None
    return {
        "number": market.number,
        "log": [entry.model_dump_json() for entry in market.engine.referee.log],
        "now": market.engine.now,
        "turn": market.turns.turn,
        "seen": (dict(calls.seen), calls.fresh),
        "view": calls.observation().model_dump_json(),
        "tally": series.tally("seller"),
    }


REQUEST = RoomRequest(buyers=2, house_buyers={"b1": "linear", "b2": "zic"}, secret=SECRET)


async def test_a_restored_series_is_at_the_same_market_in_the_same_state(
    tmp_path: Path, registries: Callable[[Path], RoomRegistry]
) -> None:
    path = tmp_path / "r.db"
    first = registries(path)
    created = first.create(REQUEST.model_copy(update={"negotiations": 3}))
    room = created.room
    with anyio.fail_after(30):
        async with _seller(first, room) as client:
            await sell(client)
            await ok(client, "new_negotiation")
            await ok(client, "make_offer", buyer="b1", price=5000.0)
            await ok(client, "wait_for_opponent", timeout_s=3)
    before = _state(first, room)
    assert before["number"] == 2 and before["tally"].finished == 1

    second = registries(path)  # the first process is gone (nothing closed)
    assert second.restore() == 1 and not second.unrestored
    assert _state(second, room) == before
    assert second.seat_for_token(created.tokens["seller"]) == (room, "seller")
    assert second.markets[room].pending == [] and second.markets[room].stored is False

    first.markets[room].journal = None  # only the second journals from here
    with anyio.fail_after(30):
        for registry in (first, second):  # both played on the same way
            async with _seller(registry, room) as client:
                await sell(client)
                await ok(client, "new_negotiation")
                await sell(client)
    assert first.markets[room].current.number == second.markets[room].current.number == 3
    last = [r.markets[room].current.record().model_dump_json() for r in (first, second)]
    assert last[0] == last[1]
    stored = dict(second.writer.store.iter_markets())  # type: ignore[union-attr]
    assert sorted(stored) == [f"{room}/1", f"{room}/2", f"{room}/3"]
    assert stored[f"{room}/3"].model_dump_json() == last[0]

    journal = second.markets[room].journal
    assert journal is not None
    lines = journal.path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert sum('"op":["start"]' in line for line in lines) == 2
    journal.path.write_text("".join(lines[:-3]), encoding="utf-8")  # it missed its last inputs
    third = registries(path)  # replayed, market 3 would be open again, behind the store
    assert third.restore() == 0 and room not in third.markets
    assert "missed inputs" in third.unrestored[room]


async def test_a_market_room_of_several_clients_keeps_one_market(
    registries: Callable[[Path], RoomRegistry], tmp_path: Path
) -> None:
    registry = registries(tmp_path / "r.db")
    several = RoomRequest(buyers=3, house_buyers={"b1": "linear"}, secret=SECRET)
    with pytest.raises(ValueError) as refused_series:
        registry.create(several.model_copy(update={"negotiations": 2}))
    line = str(refused_series.value)
    assert line.startswith("negotiations: a market room with several client seats plays one")
    assert "\n" not in line and registry.markets == {}
    created = registry.create(several)  # no length asked: one market
    assert list(created.tokens) == ["seller", "b2", "b3"]
    buyer = registry.served_seat(created.room, "b2")
    assert isinstance(buyer, ServedMarketBuyer)
    with anyio.fail_after(10):
        state = await buyer.state()
    assert not state.can_start_next
    for seat in registry.markets[created.room].client_seats:  # every client gone: it ends
        registry.markets[created.room].current.turns.set_absent(seat)
    with pytest.raises(CallRefused) as unavailable:
        await buyer.new_negotiation()
    assert unavailable.value.payload.code == SessionErrorCode.SERIES_UNAVAILABLE
    assert ONE_MARKET in unavailable.value.payload.text()
    seller = registry.served_seat(created.room, "seller")
    async with Client(build_app(lambda: seller)) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        assert "new_negotiation" not in tools  # no series: the seller is not offered it


async def test_a_market_whose_write_fails_blocks_no_next_market_and_is_stored_once(
    tmp_path: Path, registries: Callable[[Path], RoomRegistry], monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = registries(tmp_path / "r.db")
    store = registry.writer.store  # type: ignore[union-attr]
    add_market = store.add_market
    failing = True

    def flaky(*args: Any, **kwargs: Any) -> None:
        if failing:
            raise OSError("disk full")
        add_market(*args, **kwargs)

    monkeypatch.setattr(store, "add_market", flaky)
    room = registry.create(REQUEST.model_copy(update={"negotiations": 3})).room
    series = registry.markets[room]
    with anyio.fail_after(30):
        async with _seller(registry, room) as client:
            await sell(client)
            assert series.view()["stored"] is False
            started = await ok(client, "new_negotiation")  # the first market is not stored
            assert started["series"]["negotiation"] == 2 and started["series"]["finished"] == 1
            assert series.view()["pending"] == [f"{room}/1"] and not series.stored
            await registry.tick()  # still failing: still pending
            assert store.market_keys() == set() and series.pending
            failing = False
            await sell(client)  # its own call stores the second market
            assert store.market_keys() == {f"{room}/2"}
            await ok(client, "new_negotiation")  # and the next start the first
            assert store.market_keys() == {f"{room}/1", f"{room}/2"} and series.pending == []
            failing = True
            await sell(client)
    assert series.view()["pending"] == [] and not series.stored  # the third, not stored yet
    failing = False
    await registry.tick()
    assert store.market_keys() == {f"{room}/1", f"{room}/2", f"{room}/3"} and series.stored
    await registry.tick()
    assert len(list(store.iter_markets())) == 3  # each once


async def test_a_series_of_markets_is_held_to_the_rooms_message_budget_and_pace(
    tmp_path: Path,
) -> None:
    limits = RoomLimits(message_chars_per_series=12, negotiations_per_minute=1)
    async with http_server(tmp_path, limits=limits, resolve_seller=market_seller) as server:
        created = await server.create_room(buyers=2, house_buyers={"b1": "linear", "b2": "zic"})
        async with server.seat(created["tokens"]["seller"]) as client:
            await ok(client, "send_message", buyer="b1", text="x" * 10)
            await sell(client)
            await ok(client, "new_negotiation")
            over = await refused(client, "send_message", buyer="b1", text="x" * 3)
            assert over.startswith("too_many_message_chars: ") and "2 are left" in over
            await sell(client)
            too_soon = await refused(client, "new_negotiation")
            assert too_soon.startswith("too_many_negotiations: ")
            assert server.registry.markets[created["room"]].current.number == 2


async def test_a_market_left_unstored_at_a_restart_is_stored_by_the_restored_room(
    tmp_path: Path, registries: Callable[[Path], RoomRegistry], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.db"
    first = registries(path)
    store = first.writer.store  # type: ignore[union-attr]

    def failing(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(store, "add_market", failing)
    room = first.create(REQUEST.model_copy(update={"negotiations": 3})).room
    with anyio.fail_after(30):
        async with _seller(first, room) as client:
            await sell(client)
            await ok(client, "new_negotiation")
    record = first.markets[room].pending[0].record()

    second = registries(path)  # the first process is gone, its market 1 never stored
    assert second.restore() == 1 and second.markets[room].current.number == 2
    assert [market.key for market in second.markets[room].pending] == [f"{room}/1"]
    await second.tick()
    stored = dict(second.writer.store.iter_markets())  # type: ignore[union-attr]
    assert list(stored) == [f"{room}/1"]
    assert stored[f"{room}/1"].model_dump_json() == record.model_dump_json()
    assert second.markets[room].pending == []

"""A series of markets on the wall clock (issue 38): each market's clock starts at its own first
call and its deadline is on its own wall, each market is stored once under ROOM/N, every text and
page says the wall clock in every market, and a room restored mid-series is at the same market in
the same state, its clock counting from that market's journaled epoch. Driven by an injected
timer through the registry (``time.time`` follows it: no real seconds pass)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from market_support import Clock
from mcp_support import secret_of

from dealroom.engine.market_wall import WallTurns
from dealroom.protocol import RoomRequest, SessionErrorCode
from dealroom.protocol.text import shown_event
from dealroom.server.journal import STOPPED_SUFFIX
from dealroom.server.market_room import MarketRoomServed
from dealroom.server.market_seats import ServedMarketBuyer, ServedMarketSeller
from dealroom.server.rooms import RoomRegistry
from dealroom.server.web.market_seat import market_seat_json
from dealroom.server.web.market_seat_views import (
    MarketBuyerPageView,
    MarketSellerPageView,
    market_buyer_view,
    market_seller_view,
)
from dealroom.server.web.market_views import room_page_view

pytestmark = pytest.mark.anyio

SECRET = secret_of(38).hex()
EPOCH = 1_800_000_000.0
"""The Unix time at the injected timer's 0."""
REAL_TIME = "It is real time: it runs while you think"
"""What every wall-clock briefing says (``briefing.timing``)."""
DEADLINE = 30.0
HOUSE_BUYERS = dict.fromkeys(("b1", "b2", "b3"), "hardliner")


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The injected timer, with the Unix time following it (the journaled epochs)."""
    clock: Clock = [0.0]
    monkeypatch.setattr(time, "time", lambda: EPOCH + clock[0])
    return clock


def _request(**changes: Any) -> RoomRequest:
    fields: dict[str, Any] = {
        "buyers": 3,
        "clock": "wall",
        "house_buyers": HOUSE_BUYERS,
        "deadline": DEADLINE,
        "secret": SECRET,
        "negotiations": 3,
    }
    return RoomRequest(**{**fields, **changes})


def _seller(registry: RoomRegistry, room: str) -> ServedMarketSeller:
    seat = registry.served_seat(room, "seller")
    assert isinstance(seat, ServedMarketSeller)
    return seat


async def _call(
    registry: RoomRegistry, room: str, tool: str, **arguments: Any
) -> tuple[str, dict[str, Any]]:
    """One call of the room's seller client (its seat in the room's current market)."""
    with anyio.fail_after(5):
        text, view = await _seller(registry, room).call(tool, arguments)
    assert view is not None, text
    return text, view


def _log(market: MarketRoomServed) -> list[str]:
    return [entry.model_dump_json() for entry in market.engine.referee.log]


async def _says_the_wall_clock(registry: RoomRegistry, room: str) -> None:
    """Every text and page of the room's current market says the wall clock."""
    series = registry.markets[room]
    market = series.current
    assert market.clock == "wall" and market.view()["clock"] == "wall"
    briefing = await _seller(registry, room).briefing()
    assert REAL_TIME in briefing and "new_negotiation starts the next" in briefing
    page = market_seller_view(market, series)
    assert page.clock == "wall" and page.negotiation == market.number
    assert REAL_TIME in page.briefing and "real time" in page.turn.text
    assert room_page_view(series).clock == "wall"


async def test_each_market_of_a_wall_series_runs_its_own_clock_and_is_stored_once(
    tmp_path: Path, wall_registries: Callable[[Path, Clock], RoomRegistry], now: Clock
) -> None:
    registry = wall_registries(tmp_path / "r.db", now)
    room = registry.create(_request()).room
    series = registry.markets[room]
    first = series.current
    now[0] = 5.0  # the room has been open 5 s: its clock starts at the seller's first call
    assert first.wall is not None and not first.wall.started
    _, view = await _call(registry, room, "get_state")
    assert view["now"] == 0.0 and first.wall.started_at == EPOCH + 5.0
    now[0] = 8.0
    _, view = await _call(registry, room, "make_offer", buyer="b1", price=5000.0)
    assert view["now"] == 3.0
    await _says_the_wall_clock(registry, room)
    now[0] = 5.0 + DEADLINE - 0.1
    await registry.tick()
    assert first.is_open
    now[0] = 5.0 + DEADLINE + 1.0
    await registry.tick()
    outcome = first.engine.referee.outcome
    assert outcome is not None and outcome.end_reason == "deadline" and outcome.time == DEADLINE

    for number, start in ((2, 100.0), (3, 200.0)):
        now[0] = start  # long after the room's start and the previous market's end
        text, view = await _call(registry, room, "new_negotiation")
        market = series.current
        assert market.number == number and market.wall is not None
        assert market.wall.started_at == EPOCH + start and view["now"] == 0.0
        assert f"series: market {number}; {number - 1} finished" in text
        assert "clock: 0 s, 30 s left" in text
        now[0] = start + 3.0
        _, view = await _call(registry, room, "make_offer", buyer="b2", price=5000.0)
        assert view["now"] == 3.0  # seconds since this market's own start
        await _says_the_wall_clock(registry, room)
        now[0] = start + DEADLINE - 0.1
        await registry.tick()
        assert market.is_open  # its deadline is on its own wall
        now[0] = start + DEADLINE + 0.5
        await registry.tick()
        outcome = market.engine.referee.outcome
        assert outcome is not None and outcome.end_reason == "deadline"
        assert outcome.time == DEADLINE

    text, _ = await _seller(registry, room).call("new_negotiation", {})
    assert text.startswith(f"{SessionErrorCode.SERIES_OVER}: ")
    await registry.tick()
    store = registry.writer.store  # type: ignore[union-attr]
    stored = dict(store.iter_markets())
    assert sorted(stored) == [f"{room}/1", f"{room}/2", f"{room}/3"]  # each once
    assert len({record.scenario.id for record in stored.values()}) == 3


async def test_a_buyer_client_of_a_wall_series_reads_the_wall_clock_in_every_market(
    tmp_path: Path, wall_registries: Callable[[Path, Clock], RoomRegistry], now: Clock
) -> None:
    registry = wall_registries(tmp_path / "r.db", now)
    request = _request(house_seller="silent", house_buyers={"b1": "linear", "b3": "linear"})
    room = registry.create(request).room
    series = registry.markets[room]
    for number, start in ((1, 7.0), (2, 60.0), (3, 120.0)):
        now[0] = start
        seat = registry.served_seat(room, "b2")
        assert isinstance(seat, ServedMarketBuyer)
        with anyio.fail_after(5):
            state = await (seat.state() if number == 1 else seat.new_negotiation())
            seat = registry.served_seat(room, "b2")
            assert isinstance(seat, ServedMarketBuyer)
            briefing = await seat.briefing()
        market = series.current
        assert market.number == state.negotiation == number and state.clock == "wall"
        assert market.wall is not None and market.wall.started_at == EPOCH + start
        assert state.observation.now == 0.0
        assert REAL_TIME in briefing and "new_negotiation starts the next" in briefing
        page = market_buyer_view(market, "b2", series)
        assert page.clock == "wall" and page.negotiation == number
        assert "real time" in page.turn.text and room_page_view(series).clock == "wall"
        now[0] = start + DEADLINE + 0.5
        await registry.tick()
        assert not market.is_open and market.engine.referee.outcome is not None
        assert market.engine.referee.outcome.time <= DEADLINE
    stored = registry.writer.store.market_keys()  # type: ignore[union-attr]
    assert stored == {f"{room}/1", f"{room}/2", f"{room}/3"}


def _state(registry: RoomRegistry, room: str) -> dict[str, Any]:
    """Everything a restored wall-clock series must have as it was."""
    series = registry.markets[room]
    market = series.current
    calls = market.seller_calls
    assert calls is not None and market.wall is not None
    return {
        "number": market.number,
        "log": _log(market),
        "wall": market.turns.wall if isinstance(market.turns, WallTurns) else None,
        "started_at": market.wall.started_at,
        "seen": (dict(calls.seen), calls.fresh),
        "view": calls.observation().model_dump_json(),
        "tally": series.tally("seller"),
        "pending": [m.key for m in series.pending],
        "asleep": dict(market.turns.asleep) if isinstance(market.turns, WallTurns) else None,
        "viewed": dict(market.turns.viewed) if isinstance(market.turns, WallTurns) else None,
        "wakes": repr(market.turns.wakes),
    }


async def test_a_wall_series_restored_mid_series_is_at_the_same_market_on_its_own_clock(
    tmp_path: Path, wall_registries: Callable[[Path, Clock], RoomRegistry], now: Clock
) -> None:
    path = tmp_path / "r.db"
    first = wall_registries(path, now)
    room = first.create(_request()).room
    now[0] = 5.0
    await _call(first, room, "make_offer", buyer="b1", price=5000.0)
    now[0] = 5.0 + DEADLINE + 1.0
    await first.tick()  # market 1 ends at its deadline, stored
    now[0] = 100.0
    await _call(first, room, "new_negotiation")  # market 2's clock starts here
    now[0] = 103.0
    await _call(first, room, "make_offer", buyer="b2", price=5000.0)
    now[0] = 106.0
    await first.tick()  # the house buyers answer on the wall
    before = _state(first, room)
    assert before["number"] == 2 and before["started_at"] == EPOCH + 100.0
    assert before["tally"].finished == 1 and before["wall"] == 6.0

    now[0] = 110.0  # 4 s later, the first process is gone
    second = wall_registries(path, now)
    assert second.restore() == 1 and not second.unrestored
    assert _state(second, room) == before  # same market, same state, byte-equal records
    restored = second.markets[room].current
    assert restored.wall is not None and isinstance(restored.turns, WallTurns)
    assert restored.clients.step(False) < DEADLINE  # brought up to the wall's present:
    assert restored.turns.wall == 10.0  # counting from market 2's journaled epoch

    first.markets[room].journal = None  # only the second journals from here
    for registry in (first, second):  # both played on the same way, at the same wall times
        now[0] = 112.0
        await _call(registry, room, "make_offer", buyer="b3", price=4000.0)
        now[0] = 100.0 + DEADLINE + 0.5
        await registry.tick()
        now[0] = 200.0
        await _call(registry, room, "new_negotiation")
        now[0] = 204.0
        await _call(registry, room, "make_offer", buyer="b1", price=4500.0)
        now[0] = 200.0 + DEADLINE + 0.5
        await registry.tick()
    last = [_log(r.markets[room].current) for r in (first, second)]
    assert last[0] == last[1] and second.markets[room].current.number == 3
    store = second.writer.store  # type: ignore[union-attr]
    stored = dict(store.iter_markets())
    assert sorted(stored) == [f"{room}/1", f"{room}/2", f"{room}/3"]
    assert [e.model_dump_json() for e in stored[f"{room}/3"].log] == last[0]

    # A journal behind the store (it missed market 3's last inputs) is set aside.
    journal = second.markets[room].journal
    assert journal is not None
    lines = journal.path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert sum('"op":["start"]' in line for line in lines) == 2  # markets 2 and 3 begin
    assert sum('"op":["start",' in line for line in lines) == 3  # each market's own clock
    assert lines[-1].startswith('{"n":3,"op":["advance",')  # the deadline ended it
    journal.path.write_text("".join(lines[:-1]), encoding="utf-8")
    third = wall_registries(path, now)
    assert third.restore() == 0 and room not in third.markets
    assert "missed inputs" in third.unrestored[room]
    assert not journal.path.exists()
    assert journal.path.with_name(f"{journal.path.name}{STOPPED_SUFFIX}").exists()


async def test_the_room_page_of_a_wall_market_reads_the_walls_present_between_events(
    tmp_path: Path, wall_registries: Callable[[Path, Clock], RoomRegistry], now: Clock
) -> None:
    """The room page's clock runs with the wall while nothing happens (it stood at the last
    event's time: the market's clock on the virtual clock, not on the wall)."""
    registry = wall_registries(tmp_path / "r.db", now)
    room = registry.create(_request(house_seller="silent", house_buyers=None, negotiations=1)).room
    series = registry.markets[room]
    buyer = registry.served_seat(room, "b1")
    assert isinstance(buyer, ServedMarketBuyer)
    with anyio.fail_after(5):
        await buyer.state()  # the clock starts; no seat moves
    now[0] = 7.0
    await registry.tick()
    page = room_page_view(series)
    assert page.clock == "wall" and page.open
    assert (page.now, page.time_left) == (7.0, DEADLINE - 7.0)
    now[0] = DEADLINE + 3.0
    await registry.tick()
    over = room_page_view(series)
    assert not over.open and (over.now, over.time_left) == (DEADLINE, 0.0)


async def test_a_wall_markets_seat_pages_show_it_live_and_start_its_clock(
    tmp_path: Path, wall_registries: Callable[[Path, Clock], RoomRegistry], now: Clock
) -> None:
    """A person's page on the wall clock shows the market as it stands now, as a bilateral wall
    room's page does (it showed the seat's view at its last call: the buyers' moves and the
    clock stood still until the person pressed a button), and showing it starts the clock."""
    registry = wall_registries(tmp_path / "r.db", now)
    linear = dict.fromkeys(("b1", "b2", "b3"), "linear")
    room = registry.create(_request(house_buyers=linear, negotiations=1)).room
    series = registry.markets[room]
    market = series.current
    now[0] = 4.0
    json.loads(market_seat_json(series, "seller"))  # the person opens the page
    assert market.wall is not None and market.wall.started_at == EPOCH + 4.0
    now[0] = 14.0
    page = MarketSellerPageView.model_validate_json(market_seat_json(series, "seller"))
    assert page.now == 10.0
    seen = market.engine.referee.observe_seller(10.0)
    assert [t.events for t in page.threads] == [
        tuple(map(shown_event, t.events)) for t in seen.threads
    ]
    assert any(t.events for t in page.threads), "linear buyers open within 10 s"

    buyers = {"b1": "linear", "b3": "linear"}
    bought = registry.create(
        _request(house_buyers=buyers, house_seller="auctioneer", negotiations=1)
    ).room
    other = registry.markets[bought]
    now[0] = 20.0
    json.loads(market_seat_json(other, "b2"))
    now[0] = 35.0
    mine = MarketBuyerPageView.model_validate_json(market_seat_json(other, "b2"))
    assert mine.observation.now == 15.0 and mine.observation.events, "the seller asked within 15 s"

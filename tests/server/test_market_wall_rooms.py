"""Market rooms on the wall clock (issue 38): no turns, each client's action takes effect at the
wall time it arrives, house seats answer in people's time, the deadline ends the market on the
wall, the journal restores it byte for byte, and the reaper ends an abandoned one. Driven by an
injected timer through the registry (no real seconds pass), and once over HTTP."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from market_support import Clock, assert_reads_only_its_thread, sell, wall_sellers
from mcp import Client, StdioServerParameters
from mcp_support import dumps, http_server, ok, secret_of, text_of

from dealroom.protocol import MakeOffer, RoomRequest
from dealroom.server.market_room import MarketRoomServed
from dealroom.server.market_seats import ServedMarketBuyer, ServedMarketSeller
from dealroom.server.rooms import RoomRegistry
from dealroom.store.results import ResultsStore

pytestmark = pytest.mark.anyio

SECRET = secret_of(38).hex()
PER_WAKE = 1.0
"""The default rules' thinking per wake: a house seat's answer comes this long after news (plus
one clock step)."""
BUYERS = ("b1", "b2", "b3")


def _request(**changes: Any) -> RoomRequest:
    fields: dict[str, Any] = {
        "buyers": 3,
        "clock": "wall",
        "house_seller": "silent",
        "deadline": 100.0,
        "secret": SECRET,
    }
    return RoomRequest(**{**fields, **changes})


def _buyer(registry: RoomRegistry, room: str, name: str) -> ServedMarketBuyer:
    seat = registry.served_seat(room, name)
    assert isinstance(seat, ServedMarketBuyer)
    return seat


def _offer(seat: ServedMarketBuyer, share: str) -> MakeOffer:
    value = seat.room.market.value(seat.name)
    return MakeOffer(price=(value * Decimal(share)).quantize(Decimal("0.01")))


def _timeline(market: MarketRoomServed) -> list[tuple[float, str, str | None, str]]:
    return [(e.event.t, e.buyer, e.event.by, e.event.type) for e in market.engine.referee.log]


async def _play_three(registry: RoomRegistry, now: Clock) -> tuple[str, MarketRoomServed]:
    """Three buyer clients against the silent house seller: b1 looks at 0 (the clock starts),
    b2 offers at 2 s, b1 at 3.5 s, b3 at 5.25 s, each call returning at once."""
    room = registry.create(_request()).room
    market = registry.markets[room].current
    seats = {name: _buyer(registry, room, name) for name in BUYERS}
    with anyio.fail_after(5):  # no call waits for another seat's turn: none is ever taken
        await seats["b1"].state()
        for at, name in ((2.0, "b2"), (3.5, "b1"), (5.25, "b3")):
            now[0] = at
            result = await seats[name].act(_offer(seats[name], "0.5"))
            assert result.ok and result.now == at
    return room, market


async def test_a_wall_market_takes_each_buyers_offer_at_its_arrival_and_the_house_answers(
    tmp_path: Path, wall_registries: Callable[[Path, Clock], RoomRegistry]
) -> None:
    now: Clock = [0.0]
    registry = wall_registries(tmp_path / "r.db", now)
    room, market = await _play_three(registry, now)
    assert market.turns.turn is None and market.view()["clock"] == "wall"
    answer = round(2.0 + PER_WAKE + 0.001, 3)
    offers = [(t, b) for t, b, by, kind in _timeline(market) if kind == "offer_made"]
    assert offers == [(2.0, "b2"), (3.5, "b1"), (5.25, "b3")]  # the arrival order, at arrival
    # b2's offer was answered a thinking time later, once the wall passed it (b1's call did).
    assert (answer, "b2", "seller", "offer_rejected") in _timeline(market)
    now[0] = 7.0
    await registry.tick()
    rejected = [(t, b) for t, b, by, kind in _timeline(market) if kind == "offer_rejected"]
    assert rejected == [(answer, "b2"), (4.501, "b1"), (6.251, "b3")]
    # A buyer waiting on the wall wakes at the seller's answer: news, not its timeout.
    b3 = _buyer(registry, room, "b3")
    await b3.act(_offer(b3, "0.6"))
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            woke: list[str] = []

            async def wait() -> None:
                woke.append((await b3.wait(30.0)).woke)

            group.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            assert not woke  # asleep: the answer is due a thinking time later
            now[0] = 8.5
            market.clients.changed()
    assert woke == ["news"]
    briefing = await b3.briefing()
    assert "It is real time: it runs while you think" in briefing
    assert (await b3.state()).clock == "wall"


async def test_the_deadline_ends_a_wall_market_on_the_wall_and_later_calls_are_refused(
    tmp_path: Path, wall_registries: Callable[[Path, Clock], RoomRegistry]
) -> None:
    now: Clock = [0.0]
    registry = wall_registries(tmp_path / "r.db", now)
    room, market = await _play_three(registry, now)
    now[0] = 99.9
    await registry.tick()
    assert market.is_open
    now[0] = 100.2
    await registry.tick()
    outcome = market.engine.referee.outcome
    assert outcome is not None and outcome.end_reason == "deadline" and outcome.time == 100.0
    assert market.stored
    b1 = _buyer(registry, room, "b1")
    assert (await b1.wait(5.0)).woke == "ended"


async def test_a_restarted_server_restores_a_wall_market_byte_for_byte_and_its_clock_ran_on(
    tmp_path: Path,
    wall_registries: Callable[[Path, Clock], RoomRegistry],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, now = tmp_path / "r.db", [0.0]
    first = wall_registries(path, now)
    room, market = await _play_three(first, now)
    now[0] = 6.0
    await first.tick()
    b2 = _buyer(first, room, "b2")
    await b2.act(_offer(b2, "0.7"))  # at 6.0
    before = [entry.model_dump_json() for entry in market.engine.referee.log]
    assert len(before) == 6 and market.wall is not None and market.wall.started_at is not None

    second = wall_registries(path, now)  # the first process is gone
    assert second.restore() == 1 and not second.unrestored
    restored = second.markets[room].current
    assert [entry.model_dump_json() for entry in restored.engine.referee.log] == before
    assert restored.wall is not None and restored.wall.started_at == market.wall.started_at
    assert {n: c.seen for n, c in restored.buyer_calls.items()} == {
        n: c.seen for n, c in market.buyer_calls.items()
    }

    # The wall clock kept running while the server was down: past the deadline, it has ended.
    epoch = market.wall.started_at
    monkeypatch.setattr(time, "time", lambda: epoch + 500.0)
    third = wall_registries(path, now)
    assert third.restore() == 1
    await third.tick()
    ended = third.markets[room].current
    outcome = ended.engine.referee.outcome
    assert outcome is not None and outcome.end_reason == "deadline" and outcome.time == 100.0
    after = [entry.model_dump_json() for entry in ended.engine.referee.log]
    assert after[: len(before)] == before and ended.stored


async def test_the_reaper_ends_an_abandoned_wall_market_at_its_deadline(
    tmp_path: Path, wall_registries: Callable[[Path, Clock], RoomRegistry]
) -> None:
    now: Clock = [0.0]
    registry = wall_registries(tmp_path / "r.db", now)
    _, played = await _play_three(registry, now)
    never = registry.markets[registry.create(_request(deadline=30.0)).room].current  # nobody calls
    now[0] = 70.0  # every client silent past abandon_s (60 s)
    await registry.tick()
    assert sorted(played.turns.absent) == list(BUYERS) and played.is_open  # 100 s deadline
    assert never.wall is not None and never.wall.started  # abandoned: its clock runs now
    now[0] = 99.0
    await registry.tick()
    assert played.is_open and never.is_open  # neither deadline has passed on its wall
    now[0] = 100.5
    await registry.tick()
    for market in (played, never):
        outcome = market.engine.referee.outcome
        assert outcome is not None and outcome.end_reason == "deadline" and market.stored


async def test_a_wall_market_buyer_client_never_reads_another_buyers_value_or_thread(
    tmp_path: Path, wall_registries: Callable[[Path, Clock], RoomRegistry]
) -> None:
    now: Clock = [0.0]
    registry = wall_registries(tmp_path / "r.db", now)
    room, market = await _play_three(registry, now)
    b1 = _buyer(registry, room, "b1")
    read: list[str] = [await b1.briefing()]
    for at, share in ((6.0, "0.6"), (8.0, "0.7")):
        now[0] = at
        read.append((await b1.act(_offer(b1, share))).model_dump_json())
        read.append((await b1.state()).model_dump_json())
    now[0] = 12.0
    read += [
        (await b1.wait(0.0)).model_dump_json(),
        await b1.observation_json(),
        await b1.transcript(),
    ]
    now[0] = 101.0
    await registry.tick()
    read.append((await b1.wait(0.0)).model_dump_json())
    assert_reads_only_its_thread("\n".join(read), market, "b1")


async def test_three_buyer_clients_play_a_wall_market_over_http(tmp_path: Path) -> None:
    async with http_server(tmp_path, resolve_seller=wall_sellers) as server:
        created = await server.create_room(
            buyers=3, clock="wall", house_seller="silent", deadline=60.0, secret=SECRET
        )
        tokens = created["tokens"]
        assert list(tokens) == list(BUYERS)
        market = server.registry.markets[created["room"]].current
        read: dict[str, list[str]] = {name: [] for name in BUYERS}
        for name in BUYERS:  # one after the other, in real time
            async with server.seat(tokens[name]) as client:
                state = await ok(client, "get_state")
                assert state["clock"] == "wall"
                value = Decimal(str(state["observation"]["private_value"]))
                price = float((value / 2).quantize(Decimal("0.01")))
                result = await client.call_tool("make_offer", {"price": price})
                read[name].append(text_of(result) + dumps(result.structured_content))
                briefing = await client.get_prompt("briefing")
                read[name].append(briefing.messages[0].content.text)  # type: ignore[union-attr]
        times = [(t, b) for t, b, _, kind in _timeline(market) if kind == "offer_made"]
        assert [b for _, b in times] == list(BUYERS)  # the arrival order
        assert times == sorted(times) and times[-1][0] < 30.0  # wall seconds since the start
        assert "real time" in read["b1"][-1]


async def test_a_seller_client_of_a_wall_market_reads_the_wall_clock_and_house_buyers_answer(
    tmp_path: Path, wall_registries: Callable[[Path, Clock], RoomRegistry]
) -> None:
    now: Clock = [0.0]
    registry = wall_registries(tmp_path / "r.db", now)
    houses = dict.fromkeys(BUYERS, "hardliner")
    created = registry.create(_request(house_seller=None, house_buyers=houses))
    assert list(created.tokens) == ["seller"]
    market = registry.markets[created.room].current
    seat = registry.served_seat(created.room, "seller")
    assert isinstance(seat, ServedMarketSeller)
    briefing = await seat.briefing()
    assert "It is real time: it runs while you think" in briefing
    assert "one clock" not in briefing and "plus 1 s of thinking" not in briefing
    text, view = await seat.call("get_state", {})
    assert view is not None and "clock: 0 s" in text
    now[0] = 3.0
    price = float(market.market.base.list_price * 2)
    text, view = await seat.call("make_offer", {"buyer": "b1", "price": price})
    assert text.startswith("ok") and view is not None and view["now"] == 3.0
    now[0] = 5.0
    await registry.tick()
    after = [(t, by) for t, b, by, _ in _timeline(market) if b == "b1" and t >= 3.0]
    assert after[0] == (3.0, "seller") and after[1] == (round(3.0 + PER_WAKE + 0.001, 3), "buyer")


async def test_a_stdio_seller_plays_a_wall_market_to_its_end_and_it_is_stored(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results.db"
    env = {k: os.environ[k] for k in ("HOME", "PATH", "PYTHONPATH") if k in os.environ}
    command = ["serve", "--role", "seller", "--buyers", "3", "--clock", "wall", "--deadline", "4"]
    options = ["--opponent", "linear", "--secret", SECRET, "--results", str(results)]
    dealroom = str(Path(sys.executable).parent / "dealroom")
    params = StdioServerParameters(command=dealroom, args=[*command, *options], env=env)
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            briefing = await client.get_prompt("briefing")
            assert "It is real time" in briefing.messages[0].content.text  # type: ignore[union-attr]
            end = await sell(client)  # a few real seconds: the deadline is 4 s on the wall
    assert end["outcome"] is not None and end["now"] <= 4.0
    with ResultsStore(results) as store:
        (key, record), *more = list(store.iter_markets())
    assert not more and key.endswith("/1") and record.buyers == ("linear",) * 3
    assert record.outcome.end_reason == end["outcome"]["end_reason"]

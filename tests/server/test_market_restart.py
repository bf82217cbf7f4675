"""Open market rooms survive a restart: a market room journals what its client seats gave the
clock, a server that starts again replays it, and clients go on with the tokens they hold."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_support import secret_of

from dealroom.protocol import MakeOffer, RoomRequest
from dealroom.server.market_room import MarketRoomServed
from dealroom.server.market_seats import ServedMarketBuyer
from dealroom.server.rooms import RoomRegistry

pytestmark = pytest.mark.anyio

REQUEST = RoomRequest(
    buyers=3, house_seller="auctioneer", house_buyers={"b2": "linear"}, secret=secret_of(38).hex()
)


def _state(market: MarketRoomServed) -> dict[str, Any]:
    """Everything a restored market must have as it was."""
    return {
        "log": [entry.model_dump_json() for entry in market.engine.referee.log],
        "now": market.engine.now,
        "turn": market.turns.turn,
        "absent": sorted(market.turns.absent),
        "shown": {n: (c.seen, c.fresh) for n, c in market.buyer_calls.items()},
        "views": {
            n: c.observation().model_dump_json() + c.hint() for n, c in market.buyer_calls.items()
        },
    }


def _buyer(registry: RoomRegistry, room: str, name: str) -> ServedMarketBuyer:
    seat = registry.served_seat(room, name)
    assert isinstance(seat, ServedMarketBuyer)
    return seat


async def test_a_restored_market_room_is_the_same_room_and_ends_the_same(
    tmp_path: Path, registries: Callable[[Path], RoomRegistry]
) -> None:
    path = tmp_path / "r.db"

    def registry_at() -> RoomRegistry:
        return registries(path)

    first = registry_at()
    created = first.create(REQUEST)
    room = created.room
    assert list(created.tokens) == ["b1", "b3"]
    b1, b3 = _buyer(first, room, "b1"), _buyer(first, room, "b3")
    with anyio.fail_after(30):
        value = (await b1.state()).observation.private_value
        await b1.act(MakeOffer(price=(value / 2).quantize(Decimal("0.01"))))  # b3 idles: absent
        await b3.state()  # b3 comes back; b1 idles in turn
        await b3.act(MakeOffer(price=Decimal("100.00")))
        await b1.wait(5.0)
    market = first.markets[room].current
    before = _state(market)
    assert market.is_open and len(before["log"]) >= 2 and before["absent"]

    second = registry_at()  # the first process is gone (nothing closed, nothing flushed)
    assert second.restore() == 1 and not second.unrestored
    restored = second.markets[room].current
    assert _state(restored) == before
    for name, token in created.tokens.items():
        assert second.seat_for_token(token) == (room, name)
    assert created.spectator is not None  # the room page opens the restored market too
    assert second.market_for_spectator(created.spectator) is second.markets[room]

    market.journal = None  # the first process is gone: only the second journals from here
    for played in (market, restored):  # both played on the same way: every client gone
        for seat in played.client_seats:
            played.turns.set_absent(seat)
        assert not played.is_open
    assert restored.record().model_dump_json() == market.record().model_dump_json()
    await restored.save()
    stored = dict(second.writer.store.iter_markets())  # type: ignore[union-attr]
    assert list(stored) == [f"{room}/1"]

    third = registry_at()  # a market already stored is restored ended, not played again
    assert third.restore() == 0 and third.markets[room].stored  # never stored twice
    assert third.markets[room].current.record() == restored.record()

    journal = restored.journal
    assert journal is not None
    lines = journal.path.read_text(encoding="utf-8").splitlines(keepends=True)
    journal.path.write_text("".join(lines[:-3]), encoding="utf-8")  # it missed its last inputs
    fourth = registry_at()  # replayed, the market would be open again, behind the store
    assert fourth.restore() == 0 and room not in fourth.markets
    assert "missed inputs" in fourth.unrestored[room]
    assert not journal.path.exists() and journal.path.with_suffix(".jsonl.stopped").exists()


async def test_a_market_journal_that_cannot_be_replayed_leaves_the_room_unrestored(
    tmp_path: Path, registries: Callable[[Path], RoomRegistry]
) -> None:
    path = tmp_path / "r.db"
    first = registries(path)
    room = first.create(REQUEST).room
    journal = first.markets[room].journal
    assert journal is not None
    with journal.path.open("a", encoding="utf-8") as out:
        out.write('{"n": 1, "op": ["buyer", "b1", {"actions": [], "wait": 1.0}, null]}\n')
        out.write('{"n": 1, "op": ["nonsense"]}\n')
    second = registries(path)
    assert second.restore() == 0
    assert room not in second.markets and "cannot be replayed" in second.unrestored[room]

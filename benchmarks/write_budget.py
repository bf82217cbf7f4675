"""What one untrusted seat token can make a served room write: bytes of results store and room
journal per minute and per series, under the limits ``dealroom serve --transport http`` applies
by default (``--max-negotiations-per-minute``, ``--max-message-chars-per-minute`` and
``--max-message-chars-per-series``).

    python benchmarks/write_budget.py [--minutes 2] [--unlimited]

A hostile client plays one seat of a series against a house agent, as fast as the limits let
it, through the seat's calls (``RoomSeat``: the code every route calls, minus the transport),
on a simulated wall clock (an injected timer; no real minutes pass), so what is measured is what
the limits allow, not what this machine's CPU allows. Each strategy plays ``--minutes`` minutes:

- ``messages``: the issue's attack: in each negotiation 100 messages of 2,000 characters (as
  many as the budget takes; the rest are refused), then a walk-away and the next negotiation.
- ``offers``: no text at all: 99 offers (the per-seat action limit is 100), then a walk-away.
- ``reads``: 99 offers, then ``get_state`` until the negotiation's conversation holds its
  last logged call (``MAX_LOGGED_CALLS``): each reply is stored in it.
- ``mixed``: ``messages`` and then ``reads`` in one negotiation.

Bytes are the store's file (after a WAL checkpoint) and the room's journal, grown from an empty
store with the room just created. The per-series figure multiplies the worst bytes per
negotiation once the message budget is spent by ``RoomLimits.max_series`` and adds the
series' message budget at the bytes a message character cost.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from dealroom._logging import configure_logging
from dealroom.agents import resolve
from dealroom.cli.serve import (
    HTTP_MESSAGE_CHARS_PER_MINUTE,
    HTTP_MESSAGE_CHARS_PER_SERIES,
    HTTP_NEGOTIATIONS_PER_MINUTE,
)
from dealroom.protocol import MakeOffer, RoomRequest, SendMessage, WalkAway
from dealroom.server.conversations import MAX_LOGGED_CALLS
from dealroom.server.journal import Journals
from dealroom.server.negotiation import RoomLimits
from dealroom.server.rooms import RoomRegistry
from dealroom.server.seat import CallRefused, RoomSeat
from dealroom.store.results import ResultsStore
from dealroom.store.writer import ResultWriter

Strategy = Callable[[RoomSeat], Awaitable[None]]


async def _try(call: Awaitable[object]) -> bool:
    try:
        await call
    except CallRefused:
        return False
    return True


async def messages(seat: RoomSeat) -> None:
    for _ in range(100):
        if not seat.room.current.is_open:
            return
        await _try(seat.act(SendMessage(text="m" * 2_000)))


async def offers(seat: RoomSeat) -> None:
    price = seat.room.current.scenario.list_price
    for n in range(99):
        if not seat.room.current.is_open:
            return
        await _try(seat.act(MakeOffer(price=price * (n + 1) / 200)))


async def reads(seat: RoomSeat) -> None:
    await offers(seat)
    for _ in range(MAX_LOGGED_CALLS - 100):
        await seat.state()


async def mixed(seat: RoomSeat) -> None:
    await messages(seat)
    await reads(seat)


STRATEGIES: dict[str, Strategy] = {
    "messages": messages,
    "offers": offers,
    "reads": reads,
    "mixed": mixed,
}


def _bytes(store: Path, journals: Path) -> int:
    with sqlite3.connect(store) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    journal = sum(p.stat().st_size for p in journals.rglob("*") if p.is_file())
    return store.stat().st_size + journal


async def run(name: str, minutes: float, limits: RoomLimits) -> tuple[int, int, int, float]:
    """(bytes written, negotiations played, message characters accepted, CPU seconds)."""
    strategy = STRATEGIES[name]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results.db"
        writer = ResultWriter.beside(ResultsStore(path))
        now = [1_000.0]
        rooms = RoomRegistry(
            writer=writer,
            resolve_house=resolve,
            limits=limits,
            journals=Journals.beside(path),
            timer=lambda: now[0],
        )
        try:
            created = rooms.create(RoomRequest(house_seller="hardliner"))
            room = rooms.rooms[created.room]
            seat = rooms.seat(created.room, "buyer")
            await writer.flush()
            start = _bytes(path, Path(f"{path}.rooms"))
            end_at, played, cpu = now[0] + 60 * minutes, 0, time.process_time()
            while now[0] < end_at:
                await strategy(seat)
                if room.current.is_open:
                    await seat.act(WalkAway())
                played += 1
                await writer.flush()
                while not await _try(seat.new_negotiation()):
                    now[0] += 1.0  # the pace: wait for the next start
                    if now[0] >= end_at:
                        break
                else:
                    now[0] += 0.01
            cpu = time.process_time() - cpu
            await writer.flush()
            grown = _bytes(path, Path(f"{path}.rooms")) - start
            return grown, played, room.messages.series["buyer"], cpu
        finally:
            rooms.close()
            writer.store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--unlimited", action="store_true", help="no message budget (before)")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    args = parser.parse_args()
    configure_logging("WARNING")
    per_minute = None if args.unlimited else HTTP_MESSAGE_CHARS_PER_MINUTE
    per_series = None if args.unlimited else HTTP_MESSAGE_CHARS_PER_SERIES
    limits = RoomLimits(
        negotiations_per_minute=HTTP_NEGOTIATIONS_PER_MINUTE,
        message_chars_per_minute=per_minute,
        message_chars_per_series=per_series,
    )
    print(
        f"limits: {HTTP_NEGOTIATIONS_PER_MINUTE} negotiations/min, message chars "
        f"{per_minute or 'unlimited'}/min and {per_series or 'unlimited'}/series, "
        f"series {limits.max_series:,}; {args.minutes:g} simulated minutes each"
    )
    print(
        f"{'strategy':<10}{'negotiations':>13}{'msg chars':>12}{'bytes':>14}"
        f"{'MB/min':>9}{'KB/negotiation':>16}{'CPU s':>8}"
    )
    worst_per_negotiation = 0.0
    for name in args.strategies.split(","):
        grown, played, chars, cpu = anyio.run(run, name, args.minutes, limits)
        per_negotiation = grown / max(played, 1)
        if name != "messages":
            worst_per_negotiation = max(worst_per_negotiation, per_negotiation)
        print(
            f"{name:<10}{played:>13,}{chars:>12,}{grown:>14,}"
            f"{grown / args.minutes / 1e6:>9.2f}{per_negotiation / 1e3:>16.1f}{cpu:>8.1f}"
        )
    if per_series is not None:
        text = 5.0 * per_series  # about five bytes written per message character (see docs)
        series = worst_per_negotiation * limits.max_series + text
        print(
            f"per series (worst {worst_per_negotiation / 1e3:.1f} KB a negotiation x "
            f"{limits.max_series:,} + {per_series:,} message chars x 5 B): {series / 1e6:,.0f} MB"
        )


if __name__ == "__main__":
    main()

"""What one seat token can make a server write is bounded (issue 24 #11): a series starts at most
``negotiations_per_minute`` negotiations a minute, and a served series has at most
``max_series`` negotiations unless its request says fewer."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from mcp_support import house_resolver

from dealroom.cli import main
from dealroom.protocol import MakeOffer, RoomRequest, SendMessage, WalkAway
from dealroom.server.journal import Journals
from dealroom.server.negotiation import RoomLimits
from dealroom.server.room import Room
from dealroom.server.rooms import RoomRegistry
from dealroom.server.seat import CallRefused, RoomSeat
from dealroom.store.results import ResultsStore
from dealroom.store.writer import ResultWriter

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def registry(path: Path, limits: RoomLimits, clock: Clock) -> RoomRegistry:
    writer = ResultWriter.beside(ResultsStore(path))
    writer.recover()
    return RoomRegistry(
        writer=writer,
        resolve_house=house_resolver,
        limits=limits,
        journals=Journals.beside(path),
        timer=clock,
    )


def close(registry: RoomRegistry) -> None:
    registry.close()
    registry.writer.store.close()  # type: ignore[union-attr]


async def next_one(seat: RoomSeat) -> None:
    await seat.act(WalkAway())
    await seat.new_negotiation()


async def test_a_seat_starts_at_most_n_negotiations_a_minute_and_a_refusal_changes_nothing(
    tmp_path: Path,
) -> None:
    clock = Clock()
    rooms = registry(tmp_path / "r.db", RoomLimits(negotiations_per_minute=2), clock)
    try:
        created = rooms.create(RoomRequest(house_seller="hardliner"))
        room: Room = rooms.rooms[created.room]
        seat = rooms.seat(created.room, "buyer")
        await next_one(seat)
        clock.now += 20
        await next_one(seat)  # two starts in the minute: the limit
        clock.now += 10
        await seat.act(WalkAway())
        with pytest.raises(CallRefused) as refused:
            await seat.new_negotiation()
        assert refused.value.code == "too_many_negotiations"
        assert str(refused.value) == (
            "too_many_negotiations: This room starts at most 2 negotiations a minute; the next "
            "can start in 30 s. Call new_negotiation again then."
        )
        assert room.current.number == 3 and not room.current.is_open  # nothing changed
        clock.now += 30  # the first start is a minute old
        await seat.new_negotiation()
        assert room.current.number == 4 and room.current.is_open
    finally:
        close(rooms)


async def test_a_seat_sends_at_most_n_message_characters_a_minute_and_a_series(
    tmp_path: Path,
) -> None:
    clock = Clock()
    limits = RoomLimits(message_chars_per_minute=5_000, message_chars_per_series=12_000)
    rooms = registry(tmp_path / "r.db", limits, clock)
    try:
        created = rooms.create(RoomRequest(house_seller="hardliner"))
        room: Room = rooms.rooms[created.room]
        seat = rooms.seat(created.room, "buyer")
        journal = tmp_path / "r.db.rooms" / f"{created.room}.jsonl"
        await seat.act(SendMessage(text="a" * 2_000))
        clock.now += 20
        await seat.act(MakeOffer(price=Decimal(100), message="b" * 2_000))
        clock.now += 10
        size, events = journal.stat().st_size, room.current.referee.event_count
        with pytest.raises(CallRefused) as refused:
            await seat.act(SendMessage(text="c" * 2_000))
        assert str(refused.value) == (
            "too_many_message_chars: A seat sends at most 5,000 characters of messages a "
            "minute; this one (2,000) can be sent in 30 s. Act without a message, or with a "
            "shorter one."
        )
        with pytest.raises(CallRefused, match=r"this one has 9,000\."):
            await seat.act(SendMessage(text="c" * 9_000))
        assert (journal.stat().st_size, room.current.referee.event_count) == (size, events)
        await seat.act(SendMessage(text="d" * 1_000))  # what is left of the minute
        clock.now += 30  # the first message is a minute old
        await seat.act(SendMessage(text="e" * 2_000))
        clock.now += 60
        for size in (2_000, 2_000, 1_000):  # 12,000 in the series: all of it
            await seat.act(SendMessage(text="f" * size))
        clock.now += 60
        with pytest.raises(CallRefused, match=r"messages in a series; 0 are left\."):
            await seat.act(MakeOffer(price=Decimal(110), message="g"))
        await seat.act(MakeOffer(price=Decimal(110)))  # no text, no limit
        texts = [e.text for e in room.current.referee.events if e.type == "message_sent"]
        assert [len(t) for t in texts] == [2_000, 1_000, 2_000, 2_000, 2_000, 1_000]
    finally:
        close(rooms)


async def test_a_restored_room_replays_its_series_whatever_the_rate(tmp_path: Path) -> None:
    clock = Clock()
    limits = RoomLimits(negotiations_per_minute=1)
    first = registry(tmp_path / "r.db", limits, clock)
    created = first.create(RoomRequest(house_seller="hardliner"))
    await next_one(first.seat(created.room, "buyer"))
    clock.now += 61
    await next_one(first.seat(created.room, "buyer"))
    close(first)
    second = registry(tmp_path / "r.db", limits, clock)
    try:
        assert second.restore() == 1  # two starts replayed within one second of wall time
        assert second.rooms[created.room].current.number == 3
    finally:
        close(second)


async def test_a_series_with_no_length_of_its_own_ends_at_the_servers_limit(
    tmp_path: Path,
) -> None:
    rooms = registry(tmp_path / "r.db", RoomLimits(max_series=2), Clock())
    try:
        endless = rooms.create(RoomRequest(house_seller="hardliner"))
        seat = rooms.seat(endless.room, "buyer")
        await next_one(seat)
        await seat.act(WalkAway())
        with pytest.raises(CallRefused, match=r"^series_over: The series is over: all 2 "):
            await seat.new_negotiation()
        longer = rooms.create(RoomRequest(house_seller="hardliner", negotiations=3))
        seat = rooms.seat(longer.room, "buyer")
        await next_one(seat)
        await next_one(seat)  # its own length, not the server's
        assert rooms.rooms[longer.room].current.number == 3
    finally:
        close(rooms)


@pytest.mark.parametrize("value", ["-1", "x", "1.5"])
def test_a_bad_rate_flag_is_one_line_and_exit_2(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--transport", "http", "--max-negotiations-per-minute", value]) == 2
    assert capsys.readouterr().err == (
        "dealroom: error: argument --max-negotiations-per-minute: expected a whole number >= 0, "
        f"got {value!r}\n"
    )

"""A results store that cannot be written (a full disk, a file locked by another process)
loses nothing and duplicates nothing: a finished negotiation stays pending until it is stored,
across new_negotiation, the reaper's retries, shutdown and restart; each seat's result counts
once; the client is told that its action took effect; the event loop never waits on SQLite.

Failures are injected through ``store_faults`` (a store and spool that fail on demand) and,
where the machine allows a mount, a real 1 MiB tmpfs filled to the last byte.
"""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import sys
import threading
import weakref
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_support import client_for, house_room, ok, refused, scripted

from dealroom.protocol import RoomRequest, WalkAway
from dealroom.server.room import Room
from dealroom.server.room_seats import RECENT_RESULTS
from dealroom.server.rooms import RoomRegistry
from dealroom.server.seat import RoomSeat
from dealroom.store.results import ResultsStore
from dealroom.store.spool import PendingRow, Spool
from dealroom.store.writer import ResultWriter
from store_faults import Disk, FailingStore, failing_writer, fill, mount_tmpfs, unmount

pytestmark = pytest.mark.anyio


def writer_room(writer: ResultWriter, **kwargs: object) -> Room:
    return house_room(opponent="hardliner", writer=writer, **kwargs)  # type: ignore[arg-type]


async def test_a_deal_closed_on_a_full_disk_says_so_and_is_stored_once_after_the_next_one(
    tmp_path: Path,
) -> None:
    disk = Disk(full=True)
    writer = failing_writer(tmp_path / "r.db", disk)
    room = writer_room(writer)
    async with client_for(room, "buyer") as client:
        text = await refused(client, "walk_away")
        assert text == (
            "result_pending: Your walk-away took effect and the negotiation ended without a deal "
            "(walk_away); the result will be saved when the store is writable again. Call "
            "get_state to see the outcome; do not repeat the action."
        )
        for _ in range(5):  # retries, get_state and the reaper: no second copy of the result
            state = await ok(client, "get_state")
            await room.records.save()
        assert state["observation"]["outcome"]["end_reason"] == "walk_away"
        assert (state["finished"], len(state["results"])) == (1, 1)
        second = await ok(client, "new_negotiation")  # the first stays pending
        assert second["negotiation"] == 2
        await refused(client, "walk_away")
        assert writer.pending() == ("room-test/1", "room-test/2")
        disk.full = False
        writer.close()  # what the server does when it stops
        state = await ok(client, "get_state")
    store = writer.store
    assert isinstance(store, FailingStore)
    assert dict(store.inserts) == {"room-test/1": 1, "room-test/2": 1}
    assert [row.key for row in store.iter()] == ["room-test/1", "room-test/2"]
    assert (state["finished"], len(state["results"]), state["total_surplus"]) == (2, 2, 0)
    assert writer.pending() == ()


async def test_a_negotiation_that_ends_while_the_store_fails_but_the_spool_works_is_durable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.db"
    store = FailingStore(path, Disk(full=True))  # the store fails; its spool's disk does not
    writer = ResultWriter(store, Spool.beside(path))
    room = writer_room(writer)
    async with client_for(room, "buyer") as client:
        ended = await ok(client, "walk_away")  # durable in the spool: nothing to tell the client
    assert ended["outcome"]["end_reason"] == "walk_away"
    assert writer.pending() == ("room-test/1",) and writer.durable("room-test/1")
    assert len(list((tmp_path / "r.db.pending").iterdir())) == 1
    # The process dies here (no close). The next one finds the row in the spool.
    with ResultsStore(path) as again:
        restarted = ResultWriter(again, Spool.beside(path))
        assert restarted.recover() == 1
        assert restarted.recover() == 0
        rows = list(again.iter())
    assert [row.key for row in rows] == ["room-test/1"]
    assert rows[0].record.outcome.end_reason == "walk_away"
    assert rows[0].extra["negotiation"] == 1
    assert list((tmp_path / "r.db.pending").iterdir()) == []


async def test_a_row_both_spooled_and_stored_is_stored_once_when_the_spool_is_replayed(
    tmp_path: Path,
) -> None:
    path, disk = tmp_path / "r.db", Disk(full=True)
    writer = ResultWriter(FailingStore(path, disk), Spool.beside(path))
    await RoomSeat(writer_room(writer), "buyer").act(WalkAway())  # spooled, not stored
    spooled = {p.name: p.read_bytes() for p in (tmp_path / "r.db.pending").iterdir()}
    disk.full = False
    await writer.flush()  # stored, and its spool file removed ...
    for name, data in spooled.items():  # ... or not: killed between the insert and the unlink
        (tmp_path / "r.db.pending" / name).write_bytes(data)
    writer.store.close()
    with ResultsStore(path) as again:
        ResultWriter(again, Spool.beside(path)).recover()
        assert [r.key for r in again.iter()] == ["room-test/1"]
    assert list((tmp_path / "r.db.pending").iterdir()) == []


async def test_the_reaper_retries_with_backoff_and_never_forgets_a_room_not_yet_recorded(
    tmp_path: Path,
) -> None:
    now = [0.0]
    disk = Disk(full=True)
    store = FailingStore(tmp_path / "r.db", disk)
    writer = ResultWriter(store, None, retry_s=(1.0, 8.0), timer=lambda: now[0])
    registry = RoomRegistry(
        writer=writer,
        resolve_house=lambda spec: scripted().factory,
        retain_s=60,
        timer=lambda: now[0],
    )
    created = registry.create(RoomRequest(house_seller="hardliner"))
    seat = registry.seat(created.room, "buyer")
    with pytest.raises(Exception, match="result_pending"):
        await seat.act(WalkAway())
    assert store.attempts == 1
    attempts = []
    for second in range(1, 200):  # the reaper, once a second, for 200 s
        now[0] = float(second)
        await registry.tick()
        await writer.flush()
        attempts.append(store.attempts)
    assert created.room in registry.rooms, "a room whose result is pending is never forgotten"
    assert registry.seat_for_token(created.tokens["buyer"]) is not None
    # backoff 1, 2, 4, 8, 8, ... s: about 26 tries in 200 s, not 200
    assert 20 <= store.attempts <= 30, attempts
    disk.full = False
    now[0] += 8
    await writer.flush()
    assert dict(store.inserts) == {f"{created.room}/1": 1}
    await registry.tick()
    now[0] += 61
    await registry.tick()
    assert created.room not in registry.rooms


async def test_a_result_written_nowhere_at_shutdown_is_logged_in_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = Disk(full=True)
    writer = failing_writer(tmp_path / "r.db", disk)
    room = writer_room(writer)
    with pytest.raises(Exception, match="result_pending"):
        await RoomSeat(room, "buyer").act(WalkAway())
    # Recorded at the logger itself: ``capture_logs`` misses a logger that structlog cached
    # after an in-process CLI test configured logging in the same worker.
    logs: list[dict[str, Any]] = []
    monkeypatch.setattr(
        "dealroom.store.writer.log.error", lambda event, **kw: logs.append({"event": event, **kw})
    )
    writer.close()
    (lost,) = [e for e in logs if e["event"] == "result not written anywhere at shutdown"]
    row = json.loads(lost["row"])
    assert row["key"] == "room-test/1"
    assert json.loads(row["row"]["record_json"])["outcome"]["end_reason"] == "walk_away"


# -- a locked store never blocks the event loop (item 4) ----------------------------------------


async def test_a_store_locked_by_another_process_holds_up_no_other_room(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    writer = ResultWriter(ResultsStore(path, busy_s=60), Spool.beside(path))
    ending, other = writer_room(writer), writer_room(writer, room_id="room-other")
    locker = sqlite3.connect(path, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")  # another process's write lock, held until we let go
    done = anyio.Event()
    results = []

    async def end_it() -> None:
        results.append(await RoomSeat(ending, "buyer").act(WalkAway()))
        done.set()

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(end_it)
            while not writer._store_lock.locked():  # noqa: ASYNC110  (the write is under way)
                await anyio.sleep(0.01)
            async with client_for(other, "buyer") as client:
                for _ in range(20):
                    state = await ok(client, "get_state")
                await ok(client, "make_offer", price=100)
            assert not done.is_set(), "the locked write is still waiting, in its thread"
            assert writer.durable("room-test/1"), "spooled before the store was tried"
            assert state["observation"]["outcome"] is None
            locker.execute("ROLLBACK")
    locker.close()
    assert results[0].ok and writer.pending() == ()
    assert [row.key for row in writer.store.iter()] == ["room-test/1"]


class SlowSpool(Spool):
    """A spool whose writes wait until ``go`` is set (a disk whose fsync takes its time)."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.go = threading.Event()
        self.writing = threading.Event()
        self.writes = 0

    def write(self, pending: PendingRow) -> None:
        self.writing.set()
        self.go.wait(30)
        self.writes += 1
        super().write(pending)


async def test_a_slow_spool_write_of_one_room_holds_up_no_call_of_another(tmp_path: Path) -> None:
    # Every call saves what its room finished; a call of a room with nothing pending used to
    # join the flush of another room's row and wait for its fsync (seconds under disk load:
    # the HTTP p99 at 200 sessions), and spool it a second time.
    path = tmp_path / "r.db"
    spool = SlowSpool(tmp_path / "r.db.pending")
    writer = ResultWriter(ResultsStore(path), spool)
    ending, other = writer_room(writer), writer_room(writer, room_id="room-other")
    results = []

    async def end_it() -> None:
        results.append(await RoomSeat(ending, "buyer").act(WalkAway()))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(end_it)
            await anyio.to_thread.run_sync(spool.writing.wait, 10)
            async with client_for(other, "buyer") as client:
                with anyio.fail_after(10):
                    for _ in range(20):
                        state = await ok(client, "get_state")
                    await ok(client, "make_offer", price=100)
            assert not results, "the ending call waits for its row to be durable"
            spool.go.set()
    assert state["observation"]["outcome"] is None
    assert results[0].ok and writer.pending() == ()
    assert spool.writes == 1
    assert [row.key for row in writer.store.iter()] == ["room-test/1"]


async def test_an_amendment_of_a_row_being_written_lands_after_it(tmp_path: Path) -> None:
    spool = SlowSpool(tmp_path / "r.db.pending")
    writer = ResultWriter(ResultsStore(tmp_path / "r.db"), spool)
    room = writer_room(writer)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(RoomSeat(room, "buyer").act, WalkAway())  # saves its row
            await anyio.to_thread.run_sync(spool.writing.wait, 10)
            row = writer.pending()[0]
            writer.amend(row, {"v": 2})  # the row is being spooled: it cannot change in place
            spool.go.set()
        assert (writer.store.get(row) or pytest.fail("not stored")).extra == {
            "v": 2
        }  # that save set it after the insert
        assert not writer.has_pending(room.records.key_prefix)
        writer.amend(row, {"v": 3})
        writer.close()  # a last amendment lands at shutdown too
    saved = writer.store.get(row)
    assert saved is not None and saved.extra == {"v": 3}


# -- a long series: bounded replies and memory (item 11) ----------------------------------------


async def test_a_long_series_keeps_its_replies_and_memory_bounded(tmp_path: Path) -> None:
    writer = ResultWriter(ResultsStore(tmp_path / "r.db"))
    room = writer_room(writer)
    seat = RoomSeat(room, "buyer")
    first = weakref.ref(room.current)
    sizes = {}
    for number in range(1, 101):
        await seat.act(WalkAway())
        state = await seat.state()
        sizes[number] = len(state.model_dump_json())
        if number < 100:
            await seat.new_negotiation()
    gc.collect()
    assert first() is None, "a recorded negotiation leaves memory"
    assert (state.finished, len(state.results)) == (100, RECENT_RESULTS)
    assert [r.negotiation for r in state.results] == list(range(81, 101))
    assert state.total_surplus == Decimal("0.00")
    assert sizes[100] <= sizes[RECENT_RESULTS] * 1.05, sizes
    assert writer.pending() == () and len(writer.store) == 100


# -- a real full disk: a 1 MiB tmpfs through a stdio server subprocess ----------------------------


async def test_a_real_full_disk_loses_nothing_across_new_negotiation_and_shutdown(
    tmp_path: Path,
) -> None:
    disk = tmp_path / "disk"
    if not mount_tmpfs(disk):
        pytest.skip("needs root and mount(8) for a small tmpfs")
    try:
        results = disk / "results.db"
        main = "import sys; from dealroom.cli import main; sys.exit(main())"
        params = StdioServerParameters(
            command=sys.executable,
            args=["-c", main, "serve", "--results", str(results)],
            env=dict(os.environ),
        )
        with anyio.fail_after(60):
            async with Client(params, mode="legacy") as client:
                await ok(client, "get_state")  # the store is open; then the disk fills up
                filler = fill(disk)
                texts = [await refused(client, "walk_away")]
                await ok(client, "new_negotiation")
                texts.append(await refused(client, "walk_away"))
                filler.unlink()  # space comes back; the server stops at once
        with ResultsStore(results) as store:
            rows = {row.key.split("/")[1]: row.record.outcome.end_reason for row in store.iter()}
            count = len(store)
    finally:
        unmount(disk)
    assert all(t.startswith("result_pending: Your walk-away took effect") for t in texts), texts
    assert (rows, count) == ({"1": "walk_away", "2": "walk_away"}, 2)

"""Memory per idle room, and the most rooms one server holds within 1 GB.

    python benchmarks/memory.py [--rooms 5000]

Rooms are created through the HTTP server's room-creation API in process
(``RoomRegistry.create``, what ``POST /admin/rooms`` calls), with no client connected: a room
waiting for its seats. Two kinds: a seat against a house agent (``house_seller``) and a room for
two clients. Per room: the growth of resident memory (RSS, what the operating system charges)
and of Python's traced allocations (tracemalloc, in a second pass), divided by the count. The
most rooms within 1 GB is (1 GiB - the server's resident memory before any room) / RSS per room.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import tracemalloc
from dataclasses import dataclass

from dealroom.agents import resolve
from dealroom.protocol import RoomRequest
from dealroom.server.rooms import RoomRegistry

GIB = 2**30
TARGET_BYTES = 100 * 1000


def rss() -> int:
    """Resident memory of this process, in bytes (Linux: /proc/self/statm)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: peak RSS is the best there is
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@dataclass(frozen=True)
class RoomMemory:
    """Bytes per idle room of one kind."""

    kind: str
    rooms: int
    rss_per_room: float
    traced_per_room: float
    baseline_rss: int

    @property
    def max_rooms_per_gib(self) -> int:
        return int((GIB - self.baseline_rss) / self.rss_per_room)


def _fill(request: RoomRequest, count: int) -> RoomRegistry:
    registry = RoomRegistry(writer=None, resolve_house=resolve)
    for _ in range(count):
        registry.create(request)
    return registry


def measure(kind: str, request: RoomRequest, count: int, baseline: int) -> RoomMemory:
    """Create ``count`` rooms twice: once for RSS, once under tracemalloc."""
    gc.collect()
    before = rss()
    registry = _fill(request, count)
    gc.collect()
    grown = rss() - before
    del registry
    gc.collect()
    tracemalloc.start()
    start, _ = tracemalloc.get_traced_memory()
    registry = _fill(request, count)
    gc.collect()
    traced, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del registry
    gc.collect()
    return RoomMemory(kind, count, grown / count, (traced - start) / count, baseline)


def run(rooms: int = 5000) -> list[RoomMemory]:
    """Both kinds of room, after a warm-up that imports and builds everything once."""
    house = RoomRequest(house_seller="boulware")
    pair = RoomRequest()
    _fill(house, 20)
    _fill(pair, 20)
    gc.collect()
    baseline = rss()
    return [
        measure("house agent in one seat", house, rooms, baseline),
        measure("two client seats", pair, rooms, baseline),
    ]


def report(results: list[RoomMemory]) -> None:
    """Print bytes per room and the most rooms within 1 GiB."""
    baseline = results[0].baseline_rss
    print(f"memory per idle room (server before any room: {baseline / 2**20:,.0f} MiB resident)")
    for r in results:
        print(
            f"  {r.kind:<26} {r.rss_per_room / 1000:6.1f} KB resident  "
            f"{r.traced_per_room / 1000:6.1f} KB traced   ({r.rooms:,} rooms)   "
            f"most rooms in 1 GiB: {r.max_rooms_per_gib:,}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=5000)
    args = parser.parse_args()
    report(run(args.rooms))


if __name__ == "__main__":
    main()

"""A wall-clock market room's clock (``RoomRequest.clock="wall"`` with ``buyers`` >= 2).

The market (``dealroom.engine.market_wall.WallTurns``) takes the wall time from here: seconds
since the clock started, at the first call of any client seat (or the reaper's pass that finds
the market abandoned before any call, so that an abandoned market still ends at its deadline
and is stored). The start is journaled as ``["start", epoch_seconds]``, as a bilateral wall room
journals it (``dealroom.server.negotiation``); a restored room's clock counts from that epoch,
so it kept running while the server was down (a market whose deadline passed meanwhile ends at
once, at its deadline). Every call, every wait's wake-up and the reaper's ``tick`` bring the
market up to the wall's present (``step``) before anything else.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from dealroom.engine.market_wall import WallTurns
from dealroom.server.journal import Op


class MarketWallClock:
    """When a wall-clock market's clock started, and bringing the market up to now."""

    def __init__(
        self,
        turns: WallTurns,
        *,
        timer: Callable[[], float],
        note: Callable[[Op], None],
        changed: Callable[[], None],
    ) -> None:
        self.turns = turns
        self._timer = timer
        self._note = note
        """Journals the start (the room's journal)."""
        self._changed = changed
        """Wakes the room's waiting calls (after a step that changed the market)."""
        self._started: float | None = None
        """The timer's reading at the start; None before."""
        self.started_at: float | None = None
        """When the clock started (Unix time, to the millisecond); None before."""

    @property
    def started(self) -> bool:
        """True once the clock runs."""
        return self._started is not None

    def start(self) -> None:
        """Start the clock now, if it has not started (journaled with the Unix time)."""
        if self._started is None:
            self._started = self._timer()
            now = time.time()
            self.started_at = round(now, 3)
            self._note(["start", now])

    def restore(self, epoch: float) -> None:
        """A journaled start: the clock kept running while the server was down."""
        self._started = self._timer() - max(0.0, time.time() - epoch)
        self.started_at = round(epoch, 3)

    def step(self, call: bool) -> float:
        """Bring the market up to the wall's present (``call``: a seat's call begins, which
        starts the clock); the wall seconds until it next changes by itself (inf: never)."""
        if self._started is None:
            if not call:
                return math.inf
            self.start()
        assert self._started is not None
        wall = self._timer() - self._started
        turns = self.turns
        version = turns.version
        turns.at_wall(wall)
        if turns.version != version:
            self._changed()
        return max(0.0, turns.next_time() - wall) + 0.001


__all__ = ["MarketWallClock"]

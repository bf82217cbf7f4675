"""The client seats of a served market: their calls, and the wall-time rules around turns.

Every seat of a market room that is not a house agent is a client's, and is driven from outside
(``dealroom.engine.market_turns``): the virtual clock stops at each client seat's wake until
that client's call decides, one seat at a time in the schedule's order. A call that needs its
seat's turn (every tool call: an action, a wait, ``get_state``) first waits for it, so the
market's record depends on what each client decides, never on the wall-time order of their
calls. Reading the observation and transcript resources never waits: they show the seat's view
at its latest turn.

Nobody holds the market forever:

- the client whose turn it is, silent for ``RoomLimits.idle_s`` while another client waits in a
  call, is counted **absent**: it sits out its wakes (deciding nothing, asleep until news) so
  the others play on; its next call brings it back, woken at the clock's present (from then on
  the record depends on when it came back);
- a ``wait_for_opponent`` blocks at most ``timeout_s`` (and ``max_wait_s``) wall seconds, then
  replies ``woke: pending`` with its seat still asleep: its next call waits for its wake
  (``wait_limit``; no limit where ``max_wait_s`` is infinite);
- when every client has been silent for ``abandon_s`` (no call in flight), every client seat is
  counted absent and the market runs to its end (``tick``, called by the server's reaper).

On the wall clock (``dealroom.engine.market_wall.WallTurns``) there are no turns: every call is
served at once, at the wall time it arrives, and only a wait blocks (until news, its timeout on
the wall, or ``max_wait_s``); ``step`` brings the market up to the wall's present first, and
tells a waiting call when to look again. The idle rule never applies (nobody holds a turn).

Calls run on one event loop and change the schedule only between awaits, so no lock guards it;
each seat's calls are served one at a time, at most ``SEAT_CALLS_IN_FLIGHT`` queued.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

import anyio
import structlog

from dealroom.engine.market_turns import SELLER, MarketTurns
from dealroom.protocol import Action, SessionErrorCode, seat_text
from dealroom.server.negotiation import DEFAULT_LIMITS, RoomLimits
from dealroom.server.pacing import MessageBudget
from dealroom.server.seat import SEAT_CALLS_IN_FLIGHT, CallRefused

log = structlog.stdlib.get_logger(__name__)

_T = TypeVar("_T")


async def _nothing() -> None:
    pass


def _still(call: bool) -> float:
    return math.inf


class ClientSeat:
    """One client seat's calls: how many are in flight, when it was last heard, its budget."""

    def __init__(self, name: str, limits: RoomLimits, timer: Callable[[], float]) -> None:
        self.name = name
        self.lock = anyio.Lock()
        """Held by the call being served (a seat's calls are served one at a time)."""
        self.in_flight = 0
        """Calls made and not answered yet (served or queued)."""
        self.in_call = 0
        """Calls being served now (0 or 1)."""
        self.active_at = timer()
        """When its last call began or ended (the room's opening before its first)."""
        self.messages = MessageBudget(
            limits.message_chars_per_minute, limits.message_chars_per_series, timer
        )
        """What message text the seat may still send (``server.pacing``)."""


class MarketClients:
    """The client seats of one market and the waits for their turns."""

    def __init__(
        self,
        turns: MarketTurns,
        *,
        room_id: str,
        limits: RoomLimits = DEFAULT_LIMITS,
        timer: Callable[[], float] = time.monotonic,
        after_call: Callable[[], Awaitable[None]] = _nothing,
        step: Callable[[bool], float] = _still,
    ) -> None:
        self.turns = turns
        self._after_call = after_call
        """Run as each call ends (the room stores a market that has ended)."""
        self.step = step
        """Bring the market up to the wall's present (``step(True)`` as a call begins: the
        wall clock starts at the first); the wall seconds until it next changes by itself (inf
        on the virtual clock: only calls change it)."""
        self.room_id = room_id
        self.limits = limits
        self._timer = timer
        self.seats = {name: ClientSeat(name, limits, timer) for name in turns.seats}
        self._changed = anyio.Event()

    @asynccontextmanager
    async def call(self, name: str, action: Action | None = None) -> AsyncGenerator[None]:
        """Serve one call of seat ``name``, ``action`` the one it makes, if any: refused
        (``CallRefused``, nothing changed) past ``SEAT_CALLS_IN_FLIGHT`` calls at once
        (``too_many_calls``) or past the seat's message budget (``too_many_message_chars``),
        as a bilateral room's seat is; else after the seat's earlier calls, bringing it back
        if it was counted absent, and running ``after_call`` as it ends."""
        seat = self.seats[name]
        if seat.in_flight >= SEAT_CALLS_IN_FLIGHT:
            message = (
                f"This seat already has {SEAT_CALLS_IN_FLIGHT} calls in flight; wait for their "
                "replies before calling again."
            )
            raise CallRefused(seat_text.error_payload(SessionErrorCode.TOO_MANY_CALLS, message))
        role = "seller" if name == SELLER else "buyer"
        if action is not None and (over := seat.messages.charge(role, action)):
            code = SessionErrorCode.TOO_MANY_MESSAGE_CHARS
            raise CallRefused(seat_text.error_payload(code, over))
        seat.in_flight += 1
        try:
            async with seat.lock:
                seat.in_call += 1
                seat.active_at = self._timer()
                self.step(True)
                if self.turns.called(name):
                    log.info("seat back", room=self.room_id, seat=name)
                self.changed()
                try:
                    yield
                finally:
                    seat.in_call -= 1
                    seat.active_at = self._timer()
                    self.changed()
                    await self._after_call()
        finally:
            seat.in_flight -= 1

    async def served(
        self, name: str, begin: Callable[[], Callable[[], _T]], *, limit: float | None = None
    ) -> _T | None:
        """In a call of seat ``name``: at its turn, ``begin`` the call (it decides, and the
        clock runs to the next turn), then the reply it returns at the seat's next turn; None
        if ``limit`` wall seconds pass first (the seat stays as it is: asleep, for a wait)."""
        end = None if limit is None else self._timer() + limit
        if not await self.turn(name, end=end):
            return None
        reply = begin()
        self.changed()
        if not await self.turn(name, end=end):
            return None
        return reply()

    async def turn(self, name: str, *, end: float | None = None) -> bool:
        """Wait in a call of seat ``name`` until its turn or its end (True), or the timer's
        ``end`` (False); the turn's holder is counted absent if it stalls this call."""
        turns = self.turns
        while True:
            by_itself = self.step(False)
            self._count_idle()
            if turns.ready(name):
                return True
            changed, pause = self._changed, min(self._pause(), by_itself)
            if end is not None:
                remaining = end - self._timer()
                if remaining <= 0:
                    return False
                pause = min(pause, remaining)
            with anyio.move_on_after(pause):
                await changed.wait()

    def wait_limit(self, timeout_s: float) -> float | None:
        """Wall seconds a ``wait_for_opponent`` of ``timeout_s`` blocks at most before it
        replies ``woke: pending``; None (until its wake) when ``max_wait_s`` is infinite: a
        market whose every driven seat plays in this process, where the wall clock plays no
        part (``dealroom.play.market_players``)."""
        if math.isinf(self.limits.max_wait_s):
            return None
        return min(max(timeout_s, 0.0), self.limits.max_wait_s) + 0.05

    def changed(self) -> None:
        """Wake every waiting call to look again (call after any change to the schedule)."""
        self._changed.set()
        self._changed = anyio.Event()

    def abandon(self) -> bool:
        """Count every client seat absent if all have been silent for ``abandon_s`` (the
        reaper's pass): the market then runs to its end. True if it did."""
        if self.turns.over or all(name in self.turns.absent for name in self.seats):
            return False
        now = self._timer()
        if any(
            seat.in_call or seat.in_flight or now - seat.active_at < self.limits.abandon_s
            for seat in self.seats.values()
        ):
            return False
        for name in self.seats:
            self.turns.set_absent(name)
        log.info("market abandoned", room=self.room_id)
        self.changed()
        return True

    def _count_idle(self) -> None:
        """Count the turn's holder absent while it stalls another client's call."""
        turns = self.turns
        while (holder := turns.turn) is not None and self._stalls_others(holder):
            turns.set_absent(holder)
            log.info("seat idle, counted absent", room=self.room_id, seat=holder)
            self.changed()

    def _stalls_others(self, holder: str) -> bool:
        seat = self.seats[holder]
        if seat.in_call or self._timer() - seat.active_at < self.limits.idle_s:
            return False
        return any(
            other.in_call and name not in self.turns.absent
            for name, other in self.seats.items()
            if name != holder
        )

    def _pause(self) -> float:
        """Wall seconds until the turn's holder may count as idle (capped)."""
        holder = self.turns.turn
        if holder is None or self.seats[holder].in_call:
            return 3600.0  # its call will change the schedule
        since = self.seats[holder].active_at
        return max(0.0, since + self.limits.idle_s - self._timer() + 0.001)


__all__ = ["ClientSeat", "MarketClients"]

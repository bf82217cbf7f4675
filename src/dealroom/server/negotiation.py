"""Async rooms: negotiations served to remote seats one tool call at a time.

A ``Room`` plays a series of negotiations with a house agent in zero, one or two seats; each
``Negotiation`` wraps a ``Scheduler`` (see ``schedule``) with one ``anyio.Lock``. A call never
holds the lock while it sleeps: it changes the schedule, runs what can run, and waits for an
``anyio.Event`` that is replaced on every change. Cancelling a call (a client-side timeout
cancels the handler) withdraws an action that has not taken effect and leaves a wait in place;
nothing else changes.

A remote seat that stays silent longer than ``RoomLimits.idle_s`` while the other client waits
for it counts as waiting, so a dead client never holds the room: the other seat plays on and
the deadline ends it. (Against a house agent nobody waits, so a client may think as long as it
likes.) A negotiation whose remote seats are all silent for ``abandon_s`` is run to its
end by ``tick`` (called by the server's reaper), so it is recorded too.

Every input a remote seat gives the schedule is handed to ``journal`` as it is made (a
``JournaledScheduler``, see ``dealroom.server.journal``), so that ``replay`` can rebuild the
negotiation exactly in another process. Every finished negotiation is handed to ``on_end`` (the
room, which passes it to the results writer) under the lock, before
the call that finished it returns.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable, Collection, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import structlog

from dealroom.engine.calls import SeatCalls, Sight
from dealroom.protocol import (
    ROLES,
    Action,
    ActionResult,
    Agent,
    Observation,
    Referee,
    Role,
    Rules,
    Scenario,
    WaitResult,
)
from dealroom.protocol.wire import ClockKind
from dealroom.server.journal import JournaledScheduler, Op, apply_op

log = structlog.stdlib.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class RoomLimits:
    """Wall-clock limits of a room, in seconds."""

    idle_s: float = 30.0
    """A client silent this long, while the other client waits for it, counts as waiting."""
    abandon_s: float = 600.0
    """When every remote seat has been silent this long, the negotiation is run to its end."""
    max_wait_s: float = 60.0
    """Longest a wait_for_opponent call may block."""
    negotiations_per_minute: int | None = None
    """At most this many negotiations a seat's ``new_negotiation`` starts in any minute of
    wall time (None: no limit): what one seat token can make the server write is bounded."""
    max_series: int = 10_000
    """The negotiations of a served room's series that gives no length of its own."""
    message_chars_per_minute: int | None = None
    """At most this many characters of message text a client seat sends in any minute of wall
    time (None: no limit; ``dealroom.server.pacing.MessageBudget``)."""
    message_chars_per_series: int | None = None
    """At most this many characters of message text a client seat sends over its series
    (None: no limit)."""


DEFAULT_LIMITS = RoomLimits()


class Negotiation:
    """One negotiation, its referee, schedule and the seats' delivery positions."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        number: int,
        rules: Rules,
        clock: ClockKind,
        houses: Mapping[Role, Agent],
        players: Collection[Role] = (),
        on_end: Callable[[Negotiation], None],
        limits: RoomLimits = DEFAULT_LIMITS,
        timer: Callable[[], float] = time.monotonic,
        journal: Callable[[Op], None] = lambda op: None,
    ) -> None:
        self.scenario = scenario
        self.number = number
        self.referee = Referee(scenario, rules)
        self.sched = JournaledScheduler(self.referee, dict(houses), clock=clock, journal=journal)
        self.remote_roles: tuple[Role, ...] = tuple(r for r in ROLES if r not in houses)
        self.calls = SeatCalls(scenario, self.sched, self.remote_roles)
        self.client_roles: tuple[Role, ...] = tuple(
            r for r in self.remote_roles if r not in players
        )
        """Remote seats played by clients (not by an in-process player of the room)."""
        self.errors: dict[Role, str] = {}
        """Why an in-process player failed (it walked away), stored with the negotiation."""
        self.limits = limits
        self._on_end = on_end
        self._timer = timer
        self._lock = anyio.Lock()
        self._seat_locks = {role: anyio.Lock() for role in self.remote_roles}
        self._changed = anyio.Event()
        self._in_call = dict.fromkeys(self.remote_roles, 0)
        self._created = timer()
        self._active_at: dict[Role, float] = {}
        self._started: float | None = None
        self.started_at: float | None = None
        """When its clock started (Unix time, to the millisecond): the first call of a seat, or a
        person's page showing it; None before."""
        self._version = -1
        self.recorded = False
        self.ended_during: Role | None = None
        """The seat whose call ended the negotiation (its reply is the first to show the
        outcome); None while open, or when it ended outside the seats' calls (the reaper)."""

    @property
    def clock(self) -> ClockKind:
        """How time passes in this negotiation."""
        return self.sched.clock

    @property
    def enders(self) -> tuple[Role | None, Role | None]:
        """The seats whose reply is to come at the end: whose call brought it about, and whose
        action ended it (on the virtual clock another seat's call can apply that action)."""
        outcome = self.referee.outcome
        return self.ended_during, None if outcome is None else outcome.ended_by

    @property
    def is_open(self) -> bool:
        """True until the negotiation ends."""
        return self.referee.is_open

    # -- the calls ------------------------------------------------------------------------------

    async def act(self, role: Role, action: Action) -> ActionResult:
        """Make one action; returns once it has taken effect. Raises RuleViolation if refused."""
        async with self._call(role):
            seat = self.sched.remote(role)

            def settled() -> bool:
                return seat.state != "acting" or not self.referee.is_open

            async with self._lock:
                self._advance(role)
                if not self.calls.submit(role, action):
                    return self.calls.too_late(role)
                self._advance(role)
                if settled():  # the usual case against a house agent: no waiting at all
                    return self.calls.acted(role)
            try:
                await self._until(role, settled)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    async with self._lock:
                        self.sched.cancel(role)
                        self._advance(role)
                raise
            async with self._lock:
                return self.calls.acted(role)

    async def wait(self, role: Role, timeout_s: float) -> WaitResult:
        """Sleep until news from the other side, ``timeout_s`` on the clock, or the end.

        Blocks at most ``timeout_s`` (and ``limits.max_wait_s``) wall seconds; if the other
        side is still deciding then, the seat stays asleep and the result says ``pending``.
        """
        timeout_s = max(timeout_s, 0.0)
        async with self._call(role):
            seat = self.sched.remote(role)

            def settled() -> bool:
                return seat.state != "waiting" or not self.referee.is_open

            async with self._lock:
                self._advance(role)
                self.calls.sleep(role, timeout_s)
                self._advance(role)
                if settled():  # the usual case against a house agent: no waiting at all
                    return self.calls.woken(role)
            limit = min(timeout_s, self.limits.max_wait_s) + 0.05
            await self._until(role, settled, limit=limit)
            async with self._lock:
                return self.calls.woken(role)

    async def observe(self, role: Role, *, deliver: bool) -> Observation:
        """What the seat sees now; ``deliver`` marks those events as shown to it."""
        async with self._call(role) if deliver else _nothing(), self._lock:
            self._advance(role if deliver else None)
            return self.calls.observe(role, deliver=deliver)

    def begin(self) -> None:
        """Start the clock now, if no call has yet (a person's page shows the negotiation: on
        the wall clock its time runs from then; the virtual clock moves only as seats act)."""
        if self._started is None:
            self._started = self._timer()
            self._note_start()

    def sight(self, role: Role) -> Sight:
        """What ``role`` may see now (see ``SeatCalls.sight``)."""
        return self.calls.sight(role)

    def think(self, role: Role, seconds: float) -> None:
        """Charge ``seconds`` of thinking to a remote seat's clock (virtual clock only).

        Stands in for the per-wake cost of the seat's next action, so an in-process player can
        charge what its thinking really took (an LLM: per model call and per token). Charged
        between the seat's calls only; otherwise, on the wall clock or once the negotiation
        has ended, nothing changes. Synchronous, so that a player can charge from a callback: no
        call holds the lock across an await once it has changed anything, so the schedule is
        consistent here, and waiters are woken as on every other change.
        """
        seat = self.sched.remote(role)
        if self.clock != "virtual" or not self.is_open or seat.state != "thinking":
            return
        if seconds > 0:
            self.sched.think(role, seconds)
            self._advance(role)

    async def changed(self, timeout_s: float) -> None:
        """Return at the schedule's next change, or after ``timeout_s`` wall seconds: for
        watchers that change nothing (the web pages' live updates)."""
        with anyio.move_on_after(timeout_s):
            await self._changed.wait()

    def hint(self, role: Role) -> str:
        """What the seat can usefully do next, given what it sees."""
        return self.calls.hint(role)

    async def tick(self) -> None:
        """Advance on wall time; run an abandoned negotiation to its end (the server's reaper)."""
        async with self._lock:
            if self.referee.is_open and self._abandoned():
                for role in self.remote_roles:
                    if not self.sched.remote(role).absent:
                        self.sched.set_absent(role)
                log.info("negotiation abandoned", negotiation=self.number)
            self._advance()

    # -- internals ------------------------------------------------------------------------------

    def _note_start(self) -> None:
        """Its clock starts now: journaled with the Unix time (``started_at``)."""
        now = time.time()
        self.started_at = round(now, 3)
        self.sched.note(["start", now])

    @asynccontextmanager
    async def _call(self, role: Role) -> AsyncGenerator[None]:
        async with self._seat_locks[role]:
            now = self._timer()
            if self._started is None:
                self._started = now
                self._note_start()
            self._in_call[role] += 1
            self._active_at[role] = now
            try:
                yield
            finally:
                self._in_call[role] -= 1
                self._active_at[role] = self._timer()

    async def _until(
        self, role: Role, done: Callable[[], bool], *, limit: float | None = None
    ) -> bool:
        """Sleep in ``role``'s call until ``done()`` (True) or ``limit`` wall seconds pass
        (False)."""
        end = None if limit is None else self._timer() + limit
        while True:
            async with self._lock:
                self._advance(role)
                if done():
                    return True
                changed = self._changed
                pause = self._pause()
            if end is not None:
                remaining = end - self._timer()
                if remaining <= 0:
                    return False
                pause = min(pause, remaining)
            with anyio.move_on_after(pause):
                await changed.wait()

    def _advance(self, by: Role | None = None) -> None:
        """Bring the schedule up to now, in a call of seat ``by`` (None: outside the seats'
        calls, such as the reaper's tick or a page reading the view)."""
        sched = self.sched
        wall = self._wall()
        if sched.clock == "virtual":
            while (blocker := sched.blocker()) is not None and self._stalls_others(blocker):
                sched.set_absent(blocker)
                log.info("seat idle, counted as waiting", seat=blocker, negotiation=self.number)
            sched.advance()
        else:
            sched.advance(wall)
        if sched.version != self._version:
            self._version = sched.version
            self._changed.set()
            self._changed = anyio.Event()
        if not self.referee.is_open and not self.recorded:
            self.ended_during = by
            self._on_end(self)  # if the store fails, the next call (or the reaper) retries
            self.recorded = True

    def replay(self, op: Op) -> None:
        """Give the negotiation one input from its journal, as it was made (not journaled
        again; a negotiation it ends is handed to ``on_end`` as in play)."""
        match op:
            case ["delivered", role, seen]:
                seen_by = self.calls._seen  # pyright: ignore[reportPrivateUsage]
                seen_by[role] = max(seen_by[role], seen)
            case ["start", epoch] if self.clock == "wall":
                # The wall clock kept running while the server was down.
                self._started = self._timer() - max(0.0, time.time() - float(epoch))
                self.started_at = round(float(epoch), 3)
            case ["start", epoch]:
                self._started = self._timer()
                self.started_at = round(float(epoch), 3)
            case _:
                pass
        self.sched.replaying = True
        try:
            apply_op(self.sched, op)
        finally:
            self.sched.replaying = False
        now = self._timer()
        for role in self.client_roles:  # a restored seat is as fresh as a new one
            self._active_at[role] = now
        if not self.referee.is_open and not self.recorded:
            self._on_end(self)
            self.recorded = True

    def _pause(self) -> float:
        """Wall seconds until the schedule may change without any call (capped)."""
        if self.sched.clock == "wall":
            started = self._started if self._started is not None else self._timer()
            return max(0.0, started + self.sched.next_time() - self._timer() + 0.001)
        blocker = self.sched.blocker()
        if blocker is None or self._in_call[blocker]:
            return 3600.0  # a call of the blocking seat will change the schedule
        return max(0.0, self._since(blocker) + self.limits.idle_s - self._timer() + 0.001)

    def _since(self, role: Role) -> float:
        return self._active_at.get(role, self._started if self._started is not None else 0.0)

    def _stalls_others(self, role: Role) -> bool:
        """The seat is silent past the idle limit while another client waits on it.

        Against a house agent nobody waits for the client, so it may think as long as it likes;
        nor does an in-process player (it waits in calls too, but it is not a client).
        """
        if self._in_call[role] or self._timer() - self._since(role) < self.limits.idle_s:
            return False
        # Another client stalled only if it is in a call and not itself counted as gone: a seat
        # that has just come back is still marked absent until its call reaches the schedule.
        return any(
            self._in_call[r] and not self.sched.remote(r).absent
            for r in self.client_roles
            if r != role
        )

    def _abandoned(self) -> bool:
        now = self._timer()
        return all(
            not self._in_call[role]
            and now - self._active_at.get(role, self._created) >= self.limits.abandon_s
            for role in self.client_roles
        )

    def _wall(self) -> float:
        wall = 0.0 if self._started is None else self._timer() - self._started
        self.calls.wall = wall
        return wall


@asynccontextmanager
async def _nothing() -> AsyncGenerator[None]:
    yield

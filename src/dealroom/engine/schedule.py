"""The clock of a room: house agents and remote seats on one schedule. Pure: no I/O, no clock.

House seats (in-process agents) are simulated exactly as ``VirtualRoom`` simulates its seats:
a seat is due at its next queued action (``ready_at`` + the action's cost), or else at the
earliest of a new event from the other side and its requested wake-up; deciding costs
``rules.thinking.per_wake``. Remote seats act one tool call at a time and are in one of three
states:

thinking   between calls (the client is deciding); it cannot act before its lower bound
acting     one submitted action, taking effect at a known time
waiting    asleep until news from the other side or its wake-up time

The earliest due item runs first (at equal times actions before wake-ups, then
``rules.first_mover``). With the **virtual** clock, a remote action takes effect at the seat's
own clock + the action's cost (+ ``per_wake`` on the first action after a wake), and nothing
runs past a thinking seat's clock: the room waits for it (conservative synchronisation), unless
the seat is marked absent. With the **wall**
clock, remote actions take effect at the wall time they arrive, and items run once the wall time
supplied to ``advance`` reaches them.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from dealroom.engine.virtual import MIN_STEP, SeatClock
from dealroom.protocol import (
    Action,
    Agent,
    Event,
    LiveOffer,
    NegotiationEnded,
    OfferAccepted,
    OfferMade,
    OfferRejected,
    OfferWithdrawn,
    Referee,
    Role,
    Rules,
    RuleViolation,
    other,
)
from dealroom.protocol.wire import ClockKind

RemoteState = Literal["thinking", "acting", "waiting"]


def _t(x: float) -> float:
    return round(x, 3)


@dataclass(slots=True)
class HouseSeat(SeatClock):
    """An in-process agent: a ``VirtualRoom`` seat's clock and transitions, plus the agent."""

    agent: Agent = field(kw_only=True)


@dataclass(slots=True)
class RemoteSeat:
    """A seat driven by tool calls."""

    state: RemoteState = "thinking"
    ready_at: float = 0.0
    """The seat's clock: when its last action took effect or it last woke."""
    fresh: bool = True
    """The next action is the first since a wake, so it pays the per-wake thinking cost."""
    absent: bool = False
    """Silent past the idle limit: counts as waiting for news that never wakes it."""
    action: Action | None = None
    action_at: float = 0.0
    wake_at: float = math.inf
    news_at: float = math.inf
    """Time of the first event from the other side not yet delivered to the client."""
    applied: list[Event] | RuleViolation | None = None
    """What the last executed action did; read once by the room."""
    woke: Literal["news", "timeout"] | None = None
    """Why the seat last woke, until the news is delivered."""
    upto: int = 0
    """How many events the seat may see: those up to its last action or wake-up."""


Seat = HouseSeat | RemoteSeat


class Scheduler:
    """One negotiation's seats, advanced item by item in time order."""

    def __init__(
        self,
        referee: Referee,
        houses: dict[Role, Agent],
        *,
        clock: ClockKind = "virtual",
    ) -> None:
        self.referee = referee
        self.rules: Rules = referee.rules
        self.clock = clock
        self.deadline = referee.scenario.deadline
        self.seats: dict[Role, Seat] = {
            role: HouseSeat(agent=houses[role]) if role in houses else RemoteSeat()
            for role in ("buyer", "seller")
        }
        self.order: tuple[Role, Role] = (self.rules.first_mover, other(self.rules.first_mover))
        costs = self.rules.costs
        self._min_cost = min(costs.make_offer, costs.accept, costs.reject)
        self._min_cost = min(self._min_cost, costs.send_message, costs.walk_away)
        self.now = 0.0
        """Time of the last item run: nothing can happen before it any more."""
        self.version = 0
        """Bumped on every change, so the room knows when to wake its waiters."""

    def remote(self, role: Role) -> RemoteSeat:
        """The remote seat ``role`` (a programming error if it is a house seat)."""
        seat = self.seats[role]
        assert isinstance(seat, RemoteSeat), f"the {role} seat is not remote"
        return seat

    # -- remote seat transitions (called by the room, one call per seat at a time) -------------

    def submit(self, role: Role, action: Action, wall: float) -> None:
        """The seat starts an action; it takes effect when the schedule reaches it."""
        seat = self._ready(role, wall)
        if self.clock == "virtual":
            at = _t(seat.ready_at + self._thinking(seat) + self.rules.costs.of(action.type))
        else:
            at = max(wall, self.now)
        seat.state, seat.action, seat.action_at, seat.applied = "acting", action, at, None
        self.version += 1

    def sleep(self, role: Role, timeout: float, wall: float) -> None:
        """The seat sleeps until news from the other side or ``timeout`` seconds pass."""
        seat = self._ready(role, wall)
        start = seat.ready_at if self.clock == "virtual" else max(wall, self.now)
        seat.state, seat.wake_at = "waiting", _t(start + timeout)
        self.version += 1

    def cancel(self, role: Role) -> None:
        """Withdraw an action that has not taken effect (the call was cancelled)."""
        seat = self.remote(role)
        if seat.state == "acting":
            seat.state, seat.action = "thinking", None
            # Time already simulated for others cannot be undone: the seat resumes from there.
            seat.ready_at = max(seat.ready_at, self.now)
            seat.fresh = True
            self.version += 1

    def think(self, role: Role, seconds: float) -> None:
        """A thinking seat spends ``seconds`` on its clock, in place of its per-wake cost."""
        seat = self.remote(role)
        if seat.state == "thinking" and seconds > 0:
            seat.ready_at = _t(seat.ready_at + seconds)
            seat.fresh = False
            self.version += 1

    def set_absent(self, role: Role) -> None:
        """Count a silent seat as waiting (it never wakes by itself)."""
        self.remote(role).absent = True
        self.version += 1

    def delivered(self, role: Role, seen: int) -> None:
        """The client has been shown the first ``seen`` events."""
        seat = self.remote(role)
        seat.woke = None
        them = other(role)
        later = (e.t for e in self.referee.events_since(seen) if e.by == them)
        seat.news_at = next(later, math.inf)

    def _see_until(self, seat: RemoteSeat, at: float) -> None:
        # A wake can run after items later than it (they only had to wait for the seat's next
        # action), so what the woken seat sees is cut by time, never by how far others got.
        events = self.referee.events_since(0)
        seat.upto = bisect.bisect_right(events, at, key=lambda e: e.t)

    def _ready(self, role: Role, wall: float) -> RemoteSeat:
        seat = self.remote(role)
        if seat.absent or seat.state == "waiting":
            # Back from absence, or an early end to its own sleep: it resumes no earlier than
            # the last item run (nothing happened between then and now on the schedule).
            seat.absent, seat.state, seat.fresh = False, "thinking", True
            seat.ready_at = max(seat.ready_at, self.now)
            self._see_until(seat, seat.ready_at)
        if self.clock == "wall":
            seat.ready_at = max(seat.ready_at, wall)
        return seat

    # -- running ---------------------------------------------------------------------------------

    def advance(self, wall: float = 0.0) -> None:
        """Run every item that can run now (``wall``: seconds since start, wall clock only)."""
        referee = self.referee
        while referee.is_open:
            role, at, determined = self._earliest()
            if self.clock == "virtual":
                if at >= self.deadline:
                    self._expire()
                    return
                if not determined:
                    return
            elif at > wall or at >= self.deadline:
                if wall >= self.deadline:
                    self._expire()
                return
            self._run(role, at)

    def blocker(self) -> Role | None:
        """The thinking remote seat the schedule waits for (virtual clock), if any."""
        if not self.referee.is_open or self.clock != "virtual":
            return None
        role, at, determined = self._earliest()
        return None if determined or at >= self.deadline else role

    def next_time(self) -> float:
        """When the next item is due (wall clock: when to run ``advance`` again)."""
        return min(self._earliest()[1], self.deadline)

    def _earliest(self) -> tuple[Role, float, bool]:
        # Ordered by time; at equal times an action taking effect goes before a wake-up (so the
        # woken seat sees it), then the first mover: exactly VirtualRoom's order.
        best: tuple[tuple[float, bool, int], Role, bool] | None = None
        for index, role in enumerate(self.order):
            at, is_action, determined = self._bound(self.seats[role])
            key = (at, not is_action, index)
            if best is None or key < best[0]:
                best = (key, role, determined)
        assert best is not None
        return best[1], best[0][0], best[2]

    def _bound(self, seat: Seat) -> tuple[float, bool, bool]:
        """(time, is an action, determined) of the seat's next item, or a lower bound of it."""
        costs = self.rules.costs
        if isinstance(seat, HouseSeat):
            return *seat.due(costs), True
        if seat.state == "acting":
            return seat.action_at, True, True
        if seat.state == "waiting":
            return max(seat.ready_at, min(seat.wake_at, seat.news_at)), False, True
        if seat.absent or self.clock == "wall":
            return math.inf, False, False
        # A thinking seat acts no earlier than thinking plus the cheapest action from now. (It
        # may also wake earlier, but a wake changes nothing for others, and what the woken
        # seat sees is cut at its wake time: see _run.)
        return _t(seat.ready_at + self._thinking(seat) + self._min_cost), True, False

    def _thinking(self, seat: RemoteSeat) -> float:
        return max(self.rules.thinking.per_wake, MIN_STEP) if seat.fresh else 0.0

    def _run(self, role: Role, at: float) -> None:
        self.now = max(self.now, at)
        self.version += 1
        seat = self.seats[role]
        if isinstance(seat, HouseSeat):
            self._run_house(role, seat, at)
        elif seat.state == "acting":
            action, seat.action = seat.action, None
            assert action is not None
            seat.state, seat.ready_at, seat.fresh = "thinking", at, False
            seat.applied = self._apply(role, action, at)
            seat.upto = self.referee.event_count
        else:
            seat.woke = "news" if seat.news_at <= seat.wake_at else "timeout"
            seat.state, seat.ready_at, seat.fresh = "thinking", at, True
            self._see_until(seat, at)

    def _run_house(self, role: Role, seat: HouseSeat, at: float) -> None:
        # VirtualRoom.next_wake and decide, with the agent called in place.
        if seat.pending:
            seat.ready_at = at
            if isinstance(self._apply(role, seat.pending.popleft(), at), RuleViolation):
                seat.refused(at)
            return
        seat.wake(at)
        decision = seat.agent.act(self.referee.observe(role, at))
        seat.queue(decision, self.rules.thinking.per_wake)

    def _apply(self, role: Role, action: Action, at: float) -> list[Event] | RuleViolation:
        try:
            events = self.referee.apply(role, action, at)
        except RuleViolation as violation:
            return violation
        opponent = self.seats[other(role)]
        opponent.news_at = min(opponent.news_at, at)
        return events

    def _expire(self) -> None:
        self.referee.expire(self.deadline)
        self.now = max(self.now, self.deadline)
        self.version += 1


def live_offers(events: Sequence[Event]) -> tuple[LiveOffer, ...]:
    """The live offers after ``events`` (seller's first, as the referee lists them)."""
    live: dict[Role, OfferMade] = {}
    for event in events:
        match event:
            case OfferMade(by=by) if by is not None:
                live[by] = event
            case OfferWithdrawn(by=by) if by is not None:
                live.pop(by, None)
            case OfferRejected(by=by) if by is not None:
                live.pop(other(by), None)
            case OfferAccepted() | NegotiationEnded():
                live.clear()
            case _:
                pass
    return tuple(
        LiveOffer.model_construct(offer_id=made.offer_id, by=role, price=made.price, t=made.t)
        for role in ("seller", "buyer")
        if (made := live.get(role)) is not None
    )

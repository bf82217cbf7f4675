"""The schedule of a negotiation: the one ordering rule and the one play-out loop. Pure.

Every way of playing runs here: a scripted match (both seats house agents), a fork (a rebuilt
prefix, then agents), a training environment (a learner driven from outside against a house
agent, or both seats driven), and a room served over MCP (remote seats, see ``RemoteSeat``).
The seats and their transitions are in ``dealroom.engine.seats``.

The earliest due item runs first; at equal times an action taking effect goes before a wake-up
(so the woken seat sees it), then ``rules.first_mover``. A house seat with an agent decides in
place when it wakes; one without stops the loop (``next_wake`` returns its ``Wake``) until
``decide``. With the **virtual** clock, a remote action takes effect at the seat's own clock +
the action's cost (+ ``per_wake`` on the first action after a wake), and nothing runs past a
thinking seat's clock: the room waits for it (conservative synchronisation), unless the seat is
marked absent. With the **wall** clock, remote actions take effect at the wall time they arrive,
and items run once the wall time supplied to ``advance`` reaches them. A house seat there
keeps people's time: its actions cost no clock time (``WALL_COSTS``), only its thinking, and a
new offer from the other side that its agent's decision leaves alone is rejected (``answered``):
an agent that holds its price (boulware for a third of the deadline) still answers a person
within seconds instead of staying silent. Nothing changes on the virtual clock.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Collection, Mapping, Sequence
from typing import assert_never

from dealroom.engine.seats import (
    MIN_STEP,
    WALL_COSTS,
    HouseSeat,
    RemoteSeat,
    RemoteState,
    ScheduledSeat,
    Wake,
    action_costs,
    answered,
    still_live,
)
from dealroom.protocol import (
    Action,
    Agent,
    Decision,
    Event,
    LiveOffer,
    MessageSent,
    NegotiationEnded,
    OfferAccepted,
    OfferMade,
    OfferRejected,
    OfferWithdrawn,
    Referee,
    Role,
    Rules,
    RuleViolation,
    WalkedAway,
    other,
)
from dealroom.protocol._base import round_ms
from dealroom.protocol.wire import ClockKind

__all__ = [
    "HouseSeat",
    "RemoteSeat",
    "RemoteState",
    "ScheduledSeat",
    "Scheduler",
    "Wake",
    "live_offers",
]


class Scheduler:
    """One negotiation's seats, advanced item by item in time order.

    ``houses`` are seats played by in-process agents, ``driven`` seats are house seats decided
    from outside (``next_wake`` / ``decide``); every other seat is remote.
    """

    def __init__(
        self,
        referee: Referee,
        houses: Mapping[Role, Agent],
        *,
        clock: ClockKind = "virtual",
        driven: Collection[Role] = (),
    ) -> None:
        self.referee = referee
        self.rules: Rules = referee.rules
        self.clock: ClockKind = clock
        self.deadline = referee.scenario.deadline
        costs = action_costs(self.rules.costs)
        house_costs = costs if clock == "virtual" else WALL_COSTS
        self.seats: dict[Role, ScheduledSeat] = {
            role: HouseSeat(role, house_costs, houses.get(role))
            if role in houses or role in driven
            else RemoteSeat(role)
            for role in ("buyer", "seller")
        }
        self.order: tuple[Role, Role] = (self.rules.first_mover, other(self.rules.first_mover))
        self._first, self._second = self.seats[self.order[0]], self.seats[self.order[1]]
        first, second = self._first, self._second
        self._houses: tuple[HouseSeat, HouseSeat] | None = (
            (first, second)
            if isinstance(first, HouseSeat) and isinstance(second, HouseSeat)
            else None
        )
        """The two seats in order when both are house seats (every simulation): ordering then
        reads their cached times."""
        self._per_wake = self.rules.thinking.per_wake
        self._answers = clock == "wall"
        """House seats answer every new offer (people's time: see the module's docstring)."""
        self._min_cost = min(costs.values())
        self._awake: HouseSeat | None = None
        """The driven seat woken by ``next_wake`` that has not decided yet."""
        self._wake: Wake | None = None
        self.now = 0.0
        """Time of the last item run: nothing can happen before it any more."""
        self.version = 0
        """Bumped on every change, so the room knows when to wake its waiters."""

    def remote(self, role: Role) -> RemoteSeat:
        """The remote seat ``role`` (a programming error if it is a house seat)."""
        seat = self.seats[role]
        assert isinstance(seat, RemoteSeat), f"the {role} seat is not remote"
        return seat

    def house(self, role: Role) -> HouseSeat:
        """The house seat ``role`` (a programming error if it is remote)."""
        seat = self.seats[role]
        assert isinstance(seat, HouseSeat), f"the {role} seat is not a house seat"
        return seat

    # -- house seats driven from outside ---------------------------------------------------

    def next_wake(self) -> Wake | None:
        """Run the clock to the next driven seat that must decide; None once the negotiation
        is over. House agents play their turns in between."""
        if self._awake is not None:
            raise RuntimeError(f"the {self._awake.role} seat has not decided yet")
        self.advance()
        wake, self._wake = self._wake, None
        if wake is None and self.referee.is_open:
            raise RuntimeError("the schedule waits for a remote seat: use advance()")
        return wake

    def decide(self, role: Role, decision: Decision, thinking: float | None = None) -> None:
        """Queue the woken driven seat's decision; ``thinking`` seconds (default: the per-wake
        cost) pass before its first action."""
        seat = self._awake
        if seat is None or seat.role != role:
            raise RuntimeError(f"the {role} seat is not awake")
        cost = self._per_wake if thinking is None else thinking
        if not cost >= 0:
            raise ValueError(f"thinking time must be a number >= 0, not {thinking!r}")
        self._awake = None
        seat.queue(decision, cost)

    def assign(self, role: Role, agent: Agent) -> None:
        """From now on the house seat ``role`` is played by ``agent`` (not while it is awake)."""
        seat = self.house(role)
        if seat.awake:
            raise RuntimeError(f"the {role} seat is awake: decide first")
        seat.agent = agent

    # -- remote seat transitions (called by the room, one call per seat at a time) -------------

    def submit(self, role: Role, action: Action, wall: float) -> None:
        """The seat starts an action; it takes effect when the schedule reaches it."""
        seat = self._ready(role, wall)
        if self.clock == "virtual":
            at = round_ms(seat.ready_at + self._thinking(seat) + self.rules.costs.of(action.type))
        else:
            at = max(wall, self.now)
        seat.state, seat.action, seat.action_at, seat.applied = "acting", action, at, None
        self.version += 1

    def sleep(self, role: Role, timeout: float, wall: float) -> None:
        """The seat sleeps until news from the other side or ``timeout`` seconds pass."""
        seat = self._ready(role, wall)
        start = seat.ready_at if self.clock == "virtual" else max(wall, self.now)
        seat.state, seat.wake_at = "waiting", round_ms(start + timeout)
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
            seat.ready_at = round_ms(seat.ready_at + seconds)
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

    # -- running: the one play-out loop ----------------------------------------------------------

    def advance(self, wall: float = 0.0) -> None:
        """Run every item that can run now (``wall``: seconds since start, wall clock only),
        until the end, a thinking remote seat, or a driven seat that must decide."""
        referee = self.referee
        virtual = self.clock == "virtual"
        deadline = self.deadline
        while referee.is_open and self._awake is None:
            seat, at, determined = self._earliest()
            if virtual:
                if at >= deadline:
                    self._expire()
                    return
                if not determined:
                    return
            elif at > wall or at >= deadline:
                if wall >= deadline:
                    self._expire()
                return
            self.now = at if at > self.now else self.now
            self.version += 1
            if isinstance(seat, HouseSeat):
                self._run_house(seat, at)
            else:
                self._run_remote(seat, at)

    def blocker(self) -> Role | None:
        """The thinking remote seat the schedule waits for (virtual clock), if any."""
        if not self.referee.is_open or self.clock != "virtual":
            return None
        seat, at, determined = self._earliest()
        return None if determined or at >= self.deadline else seat.role

    def next_time(self) -> float:
        """When the next item is due (wall clock: when to run ``advance`` again)."""
        return min(self._earliest()[1], self.deadline)

    def _earliest(self) -> tuple[ScheduledSeat, float, bool]:
        # The one ordering rule: by time; at equal times an action taking effect goes before a
        # wake-up (so the woken seat sees it), then the first mover.
        houses = self._houses
        if houses is not None:
            # The same rule on the house seats' cached times (the hot path of every simulation).
            first, second = houses
            at1, at2 = first.due_at, second.due_at
            if at2 < at1 or (at2 == at1 and second.due_action and not first.due_action):
                return second, at2, not second.awake
            return first, at1, not first.awake
        first, second = self._first, self._second
        if isinstance(first, HouseSeat):
            at1, act1, det1 = first.due_at, first.due_action, not first.awake
        else:
            at1, act1, det1 = self._bound(first)
        if isinstance(second, HouseSeat):
            at2, act2, det2 = second.due_at, second.due_action, not second.awake
        else:
            at2, act2, det2 = self._bound(second)
        if at2 < at1 or (at2 == at1 and act2 and not act1):
            return second, at2, det2
        return first, at1, det1

    def _bound(self, seat: RemoteSeat) -> tuple[float, bool, bool]:
        """(time, is an action, determined) of the seat's next item, or a lower bound of it."""
        if seat.state == "acting":
            return seat.action_at, True, True
        if seat.state == "waiting":
            return max(seat.ready_at, min(seat.wake_at, seat.news_at)), False, True
        if seat.absent or self.clock == "wall":
            return math.inf, False, False
        # A thinking seat acts no earlier than thinking plus the cheapest action from now. (It
        # may also wake earlier, but a wake changes nothing for others, and what the woken
        # seat sees is cut at its wake time: see _run_remote.)
        return round_ms(seat.ready_at + self._thinking(seat) + self._min_cost), True, False

    def _thinking(self, seat: RemoteSeat) -> float:
        return max(self._per_wake, MIN_STEP) if seat.fresh else 0.0

    def _run_remote(self, seat: RemoteSeat, at: float) -> None:
        if seat.state == "acting":
            action, seat.action = seat.action, None
            assert action is not None
            seat.state, seat.ready_at, seat.fresh = "thinking", at, False
            seat.applied = self._apply(seat, action, at)
            seat.upto = self.referee.event_count
        else:
            seat.woke = "news" if seat.news_at <= seat.wake_at else "timeout"
            seat.state, seat.ready_at, seat.fresh = "thinking", at, True
            self._see_until(seat, at)

    def _run_house(self, seat: HouseSeat, at: float) -> None:
        if seat.pending:
            action = seat.acted(at)
            if action is seat.answer:
                seat.answer = None
                if not still_live(action, seat.role, self.referee.live_offers()):
                    return  # the offer was replaced or withdrawn first: nothing to answer
            applied = self._apply(seat, action, at)
            if isinstance(applied, RuleViolation):
                seat.refused(applied, at)
            return
        agent = seat.agent
        if agent is None:
            seat.wake(at)
            observation = self.referee.observe(seat.role, at)
            errors = tuple(seat.errors)
            seat.errors.clear()
            self._awake, self._wake = seat, Wake(seat.role, observation, errors)
            return
        if seat.errors:
            seat.errors.clear()
        observation = self.referee.observe(seat.role, at)
        decision = agent.act(observation)
        if self._answers:
            decision = answered(seat, observation, decision)
        seat.decided(at, decision, self._per_wake)

    def _apply(self, seat: ScheduledSeat, action: Action, at: float) -> list[Event] | RuleViolation:
        try:
            events = self.referee.apply(seat.role, action, at)
        except RuleViolation as violation:
            return violation
        # A seat is woken by the other side's events, never by its own.
        (self._second if seat is self._first else self._first).heard(at)
        return events

    def _expire(self) -> None:
        self.referee.expire(self.deadline)
        self.now = max(self.now, self.deadline)
        self.version += 1


def live_offers(events: Sequence[Event]) -> tuple[LiveOffer, ...]:
    """The live offers after ``events`` (seller's first, as the referee lists them)."""
    live: dict[Role, OfferMade] = {}
    for event in events:
        by = event.by
        match event:
            case OfferMade():
                if by is not None:
                    live[by] = event
            case OfferWithdrawn():
                if by is not None:
                    live.pop(by, None)
            case OfferRejected():
                if by is not None:
                    live.pop(other(by), None)
            case OfferAccepted() | NegotiationEnded():
                live.clear()
            case MessageSent() | WalkedAway():
                pass  # no offer changes (a walk-away ends the negotiation just after)
            case _:
                assert_never(event)
    return tuple(
        LiveOffer.model_construct(offer_id=made.offer_id, by=role, price=made.price, t=made.t)
        for role in ("seller", "buyer")
        if (made := live.get(role)) is not None
    )

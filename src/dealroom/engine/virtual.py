"""The virtual clock: a deterministic discrete-event simulation of one negotiation.

Each seat has its own clock position (``ready_at``). A seat is due at the earliest of: its next
queued action taking effect (``ready_at`` + the action's cost), a new event from the other side,
or its requested wake-up. The seat with the earliest due time goes next; at equal times an
action taking effect goes before a wake-up, then ``rules.first_mover``. Deciding costs thinking
time (at least ``MIN_STEP``). Nothing here reads a real clock.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from dealroom.protocol import (
    DEFAULT_RULES,
    Action,
    ActionCosts,
    Decision,
    Observation,
    Referee,
    Role,
    Rules,
    RuleViolation,
    Scenario,
    other,
)

MIN_STEP = 0.001
"""Seconds: the clock resolution, and the least time a wake costs."""


def _t(x: float) -> float:
    return round(x, 3)


@dataclass(slots=True)
class SeatClock:
    """One in-process seat on the virtual clock: where it is, and the decision it carries out.

    The one definition of a seat's transitions, shared by ``VirtualRoom`` and the server's
    scheduler (``engine/schedule.py``), so both simulate house agents identically.
    """

    ready_at: float = 0.0
    wake_at: float = 0.0
    news_at: float = math.inf
    """Time of the first event from the other side the seat has not been woken for."""
    pending: deque[Action] = field(default_factory=deque[Action])

    def due(self, costs: ActionCosts) -> tuple[float, bool]:
        """When the seat's next item happens, and whether it is an action taking effect."""
        if self.pending:
            return _t(self.ready_at + costs.of(self.pending[0].type)), True
        return max(self.ready_at, min(self.wake_at, self.news_at)), False

    def wake(self, at: float) -> None:
        """The seat is woken at ``at``: it has seen everything so far."""
        self.ready_at = at
        self.news_at = math.inf

    def queue(self, decision: Decision, thinking: float) -> None:
        """Charge the thinking (at least ``MIN_STEP``: no seat can stall the clock), queue the
        actions and set the wake-up timer."""
        self.ready_at = _t(self.ready_at + max(thinking, MIN_STEP))
        self.pending.extend(decision.actions)
        self.wake_at = math.inf if decision.wait is None else _t(self.ready_at + decision.wait)

    def refused(self, at: float) -> None:
        """An action was refused: the rest of the batch assumed it worked, so drop it and
        wake the seat at once."""
        self.pending.clear()
        self.wake_at = at


@dataclass(slots=True)
class _Seat(SeatClock):
    errors: list[RuleViolation] = field(default_factory=list[RuleViolation])


@dataclass(frozen=True, slots=True)
class Wake:
    """A seat to wake now: what it observes, and its actions refused since its last wake."""

    role: Role
    observation: Observation
    errors: tuple[RuleViolation, ...]


class VirtualRoom:
    """One negotiation on the virtual clock, driven from outside one wake at a time.

    Usage::

        room = VirtualRoom(scenario)
        while (wake := room.next_wake()) is not None:
            room.decide(wake.role, agents[wake.role].act(wake.observation))
        room.referee.outcome
    """

    def __init__(self, scenario: Scenario, rules: Rules = DEFAULT_RULES) -> None:
        self.referee = Referee(scenario, rules)
        self.rules = rules
        self._deadline = scenario.deadline
        self._seats: dict[Role, _Seat] = {"buyer": _Seat(), "seller": _Seat()}
        self._order: tuple[Role, Role] = (rules.first_mover, other(rules.first_mover))
        self._awake: Role | None = None

    def next_wake(self) -> Wake | None:
        """Run the clock to the next seat that must decide; None once the negotiation is over."""
        if self._awake is not None:
            raise RuntimeError(f"the {self._awake} seat has not decided yet")
        referee = self.referee
        while referee.is_open:
            role, due = self._next_due()
            if due >= self._deadline:
                referee.expire(self._deadline)
                break
            seat = self._seats[role]
            if seat.pending:
                self._apply(role, seat, seat.pending.popleft(), due)
                continue
            seat.wake(due)
            errors = tuple(seat.errors)
            seat.errors.clear()
            self._awake = role
            return Wake(role, referee.observe(role, due), errors)
        return None

    def decide(self, role: Role, decision: Decision, thinking: float | None = None) -> None:
        """Queue the woken seat's decision; ``thinking`` seconds (default: the per-wake cost)
        pass before its first action."""
        if self._awake != role:
            raise RuntimeError(f"the {role} seat is not awake")
        cost = self.rules.thinking.per_wake if thinking is None else thinking
        if not cost >= 0:
            raise ValueError(f"thinking time must be a number >= 0, not {thinking!r}")
        self._awake = None
        self._seats[role].queue(decision, cost)

    def _apply(self, role: Role, seat: _Seat, action: Action, at: float) -> None:
        seat.ready_at = at
        try:
            self.referee.apply(role, action, at)
        except RuleViolation as violation:
            seat.errors.append(violation)
            seat.refused(at)
            return
        # A seat is woken by the other side's events, never by its own.
        opponent = self._seats[other(role)]
        opponent.news_at = min(opponent.news_at, at)

    def _next_due(self) -> tuple[Role, float]:
        # At equal times, an action taking effect goes before a wake-up (so the woken seat sees
        # it), then the first mover.
        first, second = self._order
        costs = self.rules.costs
        at_first, action_first = self._seats[first].due(costs)
        at_second, action_second = self._seats[second].due(costs)
        if (at_second, not action_second) < (at_first, not action_first):
            return second, at_second
        return first, at_first

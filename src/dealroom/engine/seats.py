"""The two kinds of seat on a negotiation's schedule, and their transitions. Pure: no I/O.

A **house** seat is simulated on the virtual clock: it is due at its next queued action
(``ready_at`` + the action's cost), or else at the earliest of a new event from the other side
(``news_at``) and its requested wake-up (``wake_at``); deciding costs thinking time (at least
``MIN_STEP``, so no seat can stall the clock). Its decisions come from an in-process agent
called in place, or, when it has none, from outside (``Scheduler.next_wake`` / ``decide``: a
learner, a test script, a rebuilt prefix).

A **remote** seat acts one tool call at a time (the server's MCP seats); see ``RemoteSeat``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, get_args

from dealroom.protocol import (
    Action,
    ActionCosts,
    ActionType,
    Agent,
    Decision,
    Event,
    LiveOffer,
    Observation,
    Reject,
    Role,
    RuleViolation,
)
from dealroom.protocol._base import round_ms
from dealroom.protocol.agent import check_decision

MIN_STEP = 0.001
"""Seconds: the clock resolution, and the least time a wake costs."""

CHECKED_DECISIONS = 3
"""A seat's first decisions are checked whole (``check_decision``: one line for an agent that
returns something else); later ones only for their type, on the hot path."""

RemoteState = Literal["thinking", "acting", "waiting"]


_COST_TABLES: dict[ActionCosts, Mapping[str, float]] = {}


def action_costs(costs: ActionCosts) -> Mapping[str, float]:
    """Each action type's cost, looked up once per set of rules instead of once per action
    (read-only: shared by every negotiation under equal costs; frozen models hash by value)."""
    table = _COST_TABLES.get(costs)
    if table is None:
        if len(_COST_TABLES) >= 64:
            _COST_TABLES.clear()
        table = MappingProxyType({name: costs.of(name) for name in get_args(ActionType)})
        _COST_TABLES[costs] = table
    return table


WALL_COSTS: Mapping[str, float] = MappingProxyType(dict.fromkeys(get_args(ActionType), MIN_STEP))
"""A house seat's action costs on the wall clock: people's time, where an action takes effect
when it is made (one clock step apart, so two actions never share a time), as a remote seat's
does there; only its thinking (``per_wake``) passes before the first."""


def answer_to(
    answered: str | None, theirs: LiveOffer | None, acted: bool
) -> tuple[str | None, Reject | None]:
    """Wall clock: a house seat answers every new offer from the other side (people's time).
    Given the newest offer it has answered, the other side's live offer and whether its
    decision acts in that negotiation: the newest offer answered now, and the rejection to add
    (None: nothing to add). An offer is answered once: by the agent's own actions, or by this."""
    if theirs is None or theirs.offer_id == answered:
        return answered, None
    return theirs.offer_id, None if acted else Reject(offer_id=theirs.offer_id)


def answered(seat: HouseSeat, observation: Observation, decision: Decision) -> Decision:
    """Wall clock: ``decision``, or a rejection of the other side's new offer where the
    decision does nothing (``answer_to``; it keeps its timer)."""
    acted = type(decision) is not Decision or bool(decision.actions)
    seat.answered, reject = answer_to(seat.answered, observation.their_offer, acted)
    if reject is None:
        return decision
    seat.answer = reject
    return Decision(actions=(reject,), wait=decision.wait)


def still_live(answer: Action, by: Role, offers: tuple[LiveOffer, ...]) -> bool:
    """Wall clock: the other side's offer that ``answer`` (a queued rejection of ``by``)
    rejects is still live: it was neither replaced nor withdrawn first."""
    assert isinstance(answer, Reject)
    return any(live.offer_id == answer.offer_id and live.by != by for live in offers)


def _no_actions() -> deque[Action]:
    # Not ``default_factory=deque[Action]``: calling a generic alias costs four times as much
    # (it tries to set ``__orig_class__`` and catches the error), twice per seat per negotiation.
    return deque()


def _no_errors() -> list[RuleViolation]:
    return []


@dataclass(frozen=True, slots=True)
class Wake:
    """A seat to wake now: what it observes, and its actions refused since its last wake."""

    role: Role
    observation: Observation
    errors: tuple[RuleViolation, ...]


@dataclass(slots=True, eq=False)
class HouseSeat:
    """An in-process seat on the virtual clock: where it is, and the decision it carries out.

    ``due_at`` / ``due_action`` cache when its next item happens and whether that item is an
    action taking effect; every transition below keeps them current, so ordering the seats
    reads two attributes instead of recomputing (the hot path of every simulation).
    """

    role: Role
    costs: Mapping[str, float]
    agent: Agent | None = None
    """Called in place when the seat wakes; None: the seat is driven from outside."""
    ready_at: float = 0.0
    wake_at: float = 0.0
    news_at: float = math.inf
    """Time of the first event from the other side the seat has not been woken for."""
    pending: deque[Action] = field(default_factory=_no_actions)
    errors: list[RuleViolation] = field(default_factory=_no_errors)
    """Its actions refused since its last wake (reported in the next ``Wake``)."""
    awake: bool = False
    """Woken and not yet decided (only a seat driven from outside stays so between calls)."""
    due_at: float = 0.0
    due_action: bool = False
    decisions: int = 0
    """Decisions queued so far (the first ``CHECKED_DECISIONS`` are checked whole)."""
    answered: str | None = None
    """Wall clock: the other side's newest offer this seat has answered (``Scheduler``)."""
    answer: Action | None = None
    """Wall clock: the rejection queued for it, until it takes effect."""

    def _refresh(self) -> None:
        if self.pending:
            self.due_at = round_ms(self.ready_at + self.costs[self.pending[0].type])
            self.due_action = True
        else:
            wake_at, news_at = self.wake_at, self.news_at
            soonest = wake_at if wake_at < news_at else news_at
            self.due_at = soonest if soonest > self.ready_at else self.ready_at
            self.due_action = False

    def wake(self, at: float) -> None:
        """The seat is woken at ``at``: it has seen everything so far, and now decides. Until
        it does, it acts no earlier than one clock step later (a lower bound, never run)."""
        self.ready_at = at
        self.news_at = math.inf
        self.awake = True
        self.due_at, self.due_action = round_ms(at + MIN_STEP), True

    def decided(self, at: float, decision: Decision, thinking: float) -> None:
        """Woken at ``at`` and decided at once (an agent called in place): ``wake`` then
        ``queue`` in one transition."""
        self.news_at = math.inf
        self.ready_at = at
        self.queue(decision, thinking)

    def queue(self, decision: Decision, thinking: float) -> None:
        """Charge the thinking (at least ``MIN_STEP``), queue the actions and set the
        wake-up timer."""
        if self.decisions < CHECKED_DECISIONS or type(decision) is not Decision:
            check_decision(decision, self.role)
            self.decisions += 1
        self.awake = False
        ready = self.ready_at = round_ms(
            self.ready_at + (thinking if thinking > MIN_STEP else MIN_STEP)
        )
        wait = decision.wait
        self.wake_at = math.inf if wait is None else round_ms(ready + wait)
        actions = decision.actions
        if actions:
            pending = self.pending
            pending.extend(actions)
            self.due_at = round_ms(ready + self.costs[pending[0].type])
            self.due_action = True
        else:
            self._refresh()

    def acted(self, at: float) -> Action:
        """Take the next queued action off the queue: it takes effect at ``at``."""
        self.ready_at = at
        action = self.pending.popleft()
        self._refresh()
        return action

    def refused(self, violation: RuleViolation, at: float) -> None:
        """An action was refused: the rest of the batch assumed it worked, so drop it and
        wake the seat at once."""
        self.errors.append(violation)
        self.pending.clear()
        self.wake_at = at
        self._refresh()

    def heard(self, at: float) -> None:
        """The other side caused an event at ``at``."""
        if at < self.news_at:
            self.news_at = at
            if not self.pending and not self.awake:
                self._refresh()


@dataclass(slots=True, eq=False)
class RemoteSeat:
    """A seat driven by tool calls, in one of three states.

    thinking   between calls (the client is deciding); it cannot act before its lower bound
    acting     one submitted action, taking effect at a known time
    waiting    asleep until news from the other side or its wake-up time
    """

    role: Role
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

    def heard(self, at: float) -> None:
        """The other side caused an event at ``at``."""
        self.news_at = min(self.news_at, at)


ScheduledSeat = HouseSeat | RemoteSeat

"""What a remote seat's tool calls do and return: one turn semantics for every surface. Pure.

A remote seat plays one tool call at a time on a ``Scheduler``. ``SeatCalls`` holds what the
calls need beyond the schedule (what each seat has been shown) and builds what they return:

- an action returns once it has taken effect (``ActionResult``), with the events the seat had
  not been shown up to it; if the negotiation ended first, ``ok`` is false;
- a wait returns on news from the other side, at its timeout on the clock, or at the end
  (``WaitResult``);
- every result's ``hint`` is ``seat_text.hint``.

The served negotiation (``dealroom.server.negotiation``) wraps it with locks and real-time
waits; ``LocalSeat`` drives it synchronously for one remote seat against a house agent (the
TRL environment and the SFT export), where every call settles at once. Both therefore advance
the clock identically for the same sequence of calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, Protocol, assert_never, runtime_checkable

from dealroom.engine.schedule import Scheduler, live_offers
from dealroom.protocol import (
    Action,
    ActionResult,
    Agent,
    ErrorCode,
    Event,
    LiveOffer,
    Observation,
    Role,
    RuleViolation,
    Scenario,
    SeatOutcome,
    SeatState,
    ToolErrorPayload,
    WaitResult,
    WakeReason,
    seat_outcome,
    seat_text,
)
from dealroom.protocol.referee import Referee
from dealroom.protocol.rules import Rules


@dataclass(frozen=True, slots=True)
class Sight:
    """What one seat may see: events up to ``upto``, the live offers then, its clock."""

    upto: int
    live_offers: tuple[LiveOffer, ...]
    now: float
    outcome: SeatOutcome | None


class SeatCalls:
    """The remote seats of one scheduled negotiation: what they have been shown, and results."""

    def __init__(self, scenario: Scenario, sched: Scheduler, remote_roles: tuple[Role, ...]):
        self.scenario = scenario
        self.sched = sched
        self.referee: Referee = sched.referee
        self._public = scenario.public()
        self._seen = dict.fromkeys(remote_roles, 0)
        self.wall = 0.0
        """Seconds since the start on the wall clock (set by the caller before each call)."""

    # -- starting a call (the caller advances the schedule afterwards) -------------------------

    def submit(self, role: Role, action: Action) -> bool:
        """Start an action; False if the negotiation is already over (nothing changed)."""
        if not self.referee.is_open:
            return False
        self.sched.submit(role, action, self.wall)
        return True

    def sleep(self, role: Role, timeout_s: float) -> None:
        """Start a wait (a seat that has news it was not shown yet does not sleep)."""
        seat = self.sched.remote(role)
        if self.referee.is_open and seat.state == "thinking" and seat.woke is None:
            self.sched.sleep(role, max(timeout_s, 0.0), self.wall)

    def acting(self, role: Role) -> bool:
        """True while the seat's action has not taken effect and the negotiation is open."""
        return self.sched.remote(role).state == "acting" and self.referee.is_open

    def waiting(self, role: Role) -> bool:
        """True while the seat sleeps and the negotiation is open."""
        return self.sched.remote(role).state == "waiting" and self.referee.is_open

    # -- results --------------------------------------------------------------------------------

    def acted(self, role: Role) -> ActionResult:
        """The result of the seat's action (raises RuleViolation if the referee refused it)."""
        seat = self.sched.remote(role)
        if seat.state == "acting":  # the negotiation ended before the action was due
            self.sched.cancel(role)
            return self.too_late(role)
        applied, seat.applied = seat.applied, None
        if isinstance(applied, RuleViolation):
            raise applied
        return ActionResult(ok=True, **self._update(role))

    def woken(self, role: Role) -> WaitResult:
        """The result of the seat's wait, as it stands now."""
        seat = self.sched.remote(role)
        reason: WakeReason
        if not self.referee.is_open:
            reason = "ended"
        elif seat.state == "waiting":
            reason = "pending"
        else:
            reason = seat.woke or "timeout"
        update = self._update(role)
        if reason == "timeout" and any(e.by not in (role, None) for e in update["events"]):
            reason = "news"  # the other side moved by the time the seat woke
        return WaitResult(woke=reason, **update)

    def too_late(self, role: Role) -> ActionResult:
        """The negotiation ended before the action could take effect."""
        end = self.referee.outcome
        assert end is not None
        if self._seen[role] >= self.referee.event_count:  # the seat has already seen the end
            raise RuleViolation(ErrorCode.NEGOTIATION_CLOSED, "The negotiation has ended.")
        if end.end_reason == "deadline":
            error = ToolErrorPayload(
                code=ErrorCode.DEADLINE_PASSED,
                message="The deadline came before your action could take effect.",
            )
        else:
            error = ToolErrorPayload(
                code=ErrorCode.NEGOTIATION_CLOSED,
                message="The negotiation ended before your action could take effect.",
            )
        return ActionResult(ok=False, error=error, **self._update(role))

    def observe(self, role: Role, *, deliver: bool) -> Observation:
        """What the seat sees now; ``deliver`` marks those events as shown to it."""
        sight = self.sight(role)
        if deliver:
            self._deliver(role, sight)
        # Every field comes from validated state: construct without validating it again.
        return Observation.model_construct(
            role=role,
            scenario=self._public,
            private_value=self.scenario.private_value(role),
            now=sight.now,
            time_left=round(self.scenario.deadline - sight.now, 3),
            live_offers=sight.live_offers,
            events=tuple(self.referee.events_since(0)[: sight.upto]),
            outcome=sight.outcome,
        )

    def hint(self, role: Role) -> str:
        """What the seat can usefully do next, given what it sees."""
        sight = self.sight(role)
        return seat_text.hint(role, sight.live_offers, sight.outcome)

    def sight(self, role: Role) -> Sight:
        """What ``role`` may see now.

        On the virtual clock: the events up to the seat's own last action or wake-up, never
        what the other seats did later (even if it already ran), so that a seat's view, and so
        its next decision, does not depend on anyone's real-time speed.
        """
        referee = self.referee
        end = referee.outcome
        if end is not None:
            return Sight(referee.event_count, (), end.time, seat_outcome(end, role))
        if self.sched.clock == "wall":
            now = min(self.wall, self.scenario.deadline)
            return Sight(referee.event_count, referee.live_offers(), now, None)
        seat = self.sched.remote(role)
        if seat.upto == referee.event_count:
            return Sight(seat.upto, referee.live_offers(), seat.ready_at, None)
        events = referee.events_since(0)[: seat.upto]
        return Sight(seat.upto, live_offers(events), seat.ready_at, None)

    def _deliver(self, role: Role, sight: Sight) -> tuple[Event, ...]:
        seen = self._seen[role]
        events = tuple(self.referee.events_since(seen)[: max(0, sight.upto - seen)])
        self._seen[role] = max(seen, sight.upto)
        self.sched.delivered(role, self._seen[role])
        return events

    def _update(self, role: Role) -> dict[str, Any]:
        sight = self.sight(role)
        return {
            "events": self._deliver(role, sight),
            "live_offers": sight.live_offers,
            "now": sight.now,
            "time_left": round(self.scenario.deadline - sight.now, 3),
            "outcome": sight.outcome,
            "hint": seat_text.hint(role, sight.live_offers, sight.outcome),
        }


@runtime_checkable
class InPlace(Protocol):
    """The other seat of a ``LocalSeat`` played as a remote seat, one call at a time, in place:
    whenever the schedule waits for it, ``turn`` is called with the result of its previous
    call (None at first) and must start its next call on ``seat`` (``submit`` or ``sleep``,
    after any number of ``state`` calls) or ``sit_out``. A model seat plays this way, reading
    exactly what a served seat reads."""

    def turn(
        self, seat: OtherSeat, result: ActionResult | WaitResult | RuleViolation | None
    ) -> None: ...


class OtherSeat:
    """What an ``InPlace`` player may do on its seat during its ``turn``."""

    def __init__(self, calls: SeatCalls, role: Role) -> None:
        self.calls = calls
        self.role: Role = role
        self.started: Literal["act", "wait"] | None = None

    def submit(self, action: Action) -> None:
        """Start an action (its result comes with the next ``turn``)."""
        self.calls.submit(self.role, action)
        self.started = "act"

    def sleep(self, timeout_s: float) -> None:
        """Start a wait (its result comes with the next ``turn``)."""
        self.calls.sleep(self.role, timeout_s)
        self.started = "wait"

    def state(self) -> SeatState:
        """The seat's whole view now (answered at once)."""
        return seat_state(self.calls, self.role)

    def sit_out(self) -> None:
        """Stay silent to the end (it counts as waiting for news)."""
        self.calls.sched.set_absent(self.role)
        self.started = None

    def settled(self) -> ActionResult | WaitResult | RuleViolation | None:
        """The result of the call started in the last turn, once the schedule waits for it."""
        started, self.started = self.started, None
        match started:
            case "act":
                try:
                    return self.calls.acted(self.role)
                except RuleViolation as violation:
                    return violation
            case "wait":
                return self.calls.woken(self.role)
            case None:
                return None
            case _:
                assert_never(started)


def seat_state(calls: SeatCalls, role: Role) -> SeatState:
    """A seat's whole view (a series of one negotiation); marks every event as seen."""
    observation = calls.observe(role, deliver=True)
    return SeatState(
        observation=observation,
        negotiation=1,
        results=(),
        finished=0,
        total_surplus=Decimal("0.00"),
        can_start_next=False,
        clock="virtual",
        hint=calls.hint(role),
    )


class LocalSeat:
    """One remote seat against a house agent, its calls run synchronously (virtual clock).

    The TRL environment and the SFT export play through it: the same ``Scheduler`` and
    ``SeatCalls`` as a served negotiation, so the same calls give the same results. Against a
    house agent every call settles at once: the schedule never waits on anyone else. The other
    seat may instead be ``InPlace``, a remote seat too, played whenever the schedule waits for
    it (a model opponent, reading what a served seat reads).
    """

    def __init__(
        self, scenario: Scenario, role: Role, house: Agent | InPlace, rules: Rules
    ) -> None:
        referee = Referee(scenario, rules)
        opponent: Role = "seller" if role == "buyer" else "buyer"
        self.role: Role = role
        self._in_place = house if isinstance(house, InPlace) else None
        houses: dict[Role, Agent] = {}
        if not isinstance(house, InPlace):
            houses[opponent] = house
        self.sched = Scheduler(referee, houses, clock="virtual")
        remote: tuple[Role, ...] = (role,) if self._in_place is None else (role, opponent)
        self.calls = SeatCalls(scenario, self.sched, remote)
        self.referee = referee
        self._other = OtherSeat(self.calls, opponent)

    def act(self, action: Action) -> ActionResult:
        """One action; returns once it took effect. Raises RuleViolation if refused."""
        self._advance()
        if not self.calls.submit(self.role, action):
            return self.calls.too_late(self.role)
        self._advance()
        assert not self.calls.acting(self.role), "the other seat never blocks the schedule"
        return self.calls.acted(self.role)

    def wait(self, timeout_s: float) -> WaitResult:
        """Sleep until news, ``timeout_s`` on the clock, or the end."""
        self._advance()
        self.calls.sleep(self.role, timeout_s)
        self._advance()
        assert not self.calls.waiting(self.role), "the other seat never blocks the schedule"
        return self.calls.woken(self.role)

    def state(self) -> SeatState:
        """The seat's whole view (a series of one negotiation); marks every event as seen."""
        self._advance()
        return seat_state(self.calls, self.role)

    def finish(self) -> None:
        """Play the negotiation out with the seat silent (it counts as waiting for news)."""
        if self.referee.is_open:
            self.sched.set_absent(self.role)
            self._advance()

    def _advance(self) -> None:
        """Run the schedule; each time it waits for an in-place other seat, play its turn."""
        self.sched.advance()
        player = self._in_place
        while player is not None and self.sched.blocker() == self._other.role:
            player.turn(self._other, self._other.settled())
            if self._other.started is None and not self.sched.remote(self._other.role).absent:
                raise RuntimeError("an in-place seat's turn must start a call or sit out")
            self.sched.advance()


__all__ = ["InPlace", "LocalSeat", "OtherSeat", "SeatCalls", "Sight", "seat_state"]

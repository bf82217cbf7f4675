"""The oracle's policies for the searched seat, and one simulation of a policy.

Each policy drives its seat from outside (``VirtualRoom.next_wake`` / ``decide``) against a
fresh counterpart built as in the original negotiation (same factory, scenario, rules and
seeded generator), and returns its decision with its thinking time. Thinking is never shorter
than the rules' ``per_wake``; it may be longer, as a remote seat's may (``Scheduler.think``),
which is how a policy makes an action take effect at a chosen clock time.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from dealroom.engine.fork import Batch
from dealroom.engine.match import seat_rng
from dealroom.engine.virtual import VirtualRoom
from dealroom.protocol import (
    Accept,
    Agent,
    AgentFactory,
    Decision,
    Event,
    LiveOffer,
    MakeOffer,
    Observation,
    Outcome,
    Role,
    Rules,
    Scenario,
    SendMessage,
    other,
    seat_view,
)
from dealroom.protocol._base import CENT, round_ms, to_cents
from dealroom.protocol.secret import Seed

PROBE_STEP = Decimal("0.0015")
"""A buyer's probe offers rise by this fraction of the list price per offer: one and a half
times the cell (0.001 of the list price) within which MiCRO counts offers as one, so each
probe is a new offer to every scripted counterpart."""

_SLEEP = Decision()


class Policy(Protocol):
    """A way of playing the searched seat: each wake's decision and its thinking seconds."""

    def decide(self, observation: Observation, /) -> tuple[Decision, float]: ...


def at_least_as_good(role: Role, price: Decimal, than: Decimal) -> bool:
    """A deal at ``price`` is at least as good for ``role`` as one at ``than``."""
    return price <= than if role == "buyer" else price >= than


def _theirs(observation: Observation) -> LiveOffer | None:
    return next((o for o in observation.live_offers if o.by != observation.role), None)


def _accept(offer: LiveOffer) -> Decision:
    return Decision((Accept(offer_id=offer.offer_id),))


@dataclass(frozen=True, slots=True)
class Clock:
    """What a policy needs of the rules to time its actions."""

    per_wake: float
    offer: float
    message: float
    max_actions: int

    @classmethod
    def of(cls, rules: Rules) -> Clock:
        """The clock of ``rules``."""
        costs = rules.costs
        return cls(
            rules.thinking.per_wake,
            costs.of("make_offer"),
            costs.of("send_message"),
            rules.max_actions,
        )

    def lands_at(self, at: float, cost: float, now: float) -> float:
        """Thinking that makes an action of ``cost`` decided ``now`` take effect at ``at`` (at
        once, thinking ``per_wake``, if that is too soon)."""
        return max(self.per_wake, round_ms(at - cost - now))


@dataclass(slots=True)
class Silent:
    """Never act: the counterpart plays against silence."""

    per_wake: float

    def decide(self, observation: Observation, /) -> tuple[Decision, float]:
        return _SLEEP, self.per_wake


@dataclass(slots=True)
class Take:
    """Silent until the counterpart's offer ``offer_id`` is live, then accept it."""

    offer_id: str
    per_wake: float

    def decide(self, observation: Observation, /) -> tuple[Decision, float]:
        theirs = _theirs(observation)
        if theirs is not None and theirs.offer_id == self.offer_id:
            return _accept(theirs), self.per_wake
        return _SLEEP, self.per_wake


@dataclass(slots=True)
class Anchor:
    """Offer ``price`` so that it takes effect at ``at``, optionally send a message that takes
    effect at ``poke`` (a wake-up for the counterpart), then hold: accept an offer of the
    counterpart at least as good as ``price``, never move."""

    price: Decimal
    at: float
    clock: Clock
    poke: float | None = None
    made: bool = False
    poked: bool = False

    def decide(self, observation: Observation, /) -> tuple[Decision, float]:
        theirs = _theirs(observation)
        clock, now = self.clock, observation.now
        if theirs is not None and at_least_as_good(observation.role, theirs.price, self.price):
            return _accept(theirs), clock.per_wake
        if not self.made:
            self.made = True
            offer = MakeOffer(price=self.price)
            wait = None if self.poke is None else 0.0
            return Decision((offer,), wait), clock.lands_at(self.at, clock.offer, now)
        if self.poke is not None and not self.poked:
            self.poked = True
            poke = SendMessage(text="Still there?")
            return Decision((poke,)), clock.lands_at(self.poke, clock.message, now)
        return _SLEEP, clock.per_wake


@dataclass(slots=True)
class Probe:
    """A new offer on every wake, one offer's time apart, far on the own side, never past
    ``limit``: a buyer's k-th bid is k ``PROBE_STEP`` of the list price, a seller's k-th ask
    ``limit + (highest - limit) / k`` (``highest``: the largest price allowed); accept an offer
    at least as good as ``limit``.

    Every probe is a concession by a large ratio, and a new offer: it draws out counterparts
    that reciprocate concessions (tit-for-tat) or count new offers (MiCRO)."""

    limit: Decimal
    list_price: Decimal
    highest: Decimal
    clock: Clock
    sent: int = 0

    def decide(self, observation: Observation, /) -> tuple[Decision, float]:
        theirs = _theirs(observation)
        role = observation.role
        if theirs is not None and at_least_as_good(role, theirs.price, self.limit):
            return _accept(theirs), self.clock.per_wake
        if self.sent >= self.clock.max_actions - 1:  # keep the last action for an accept
            return _SLEEP, self.clock.per_wake
        self.sent += 1
        if role == "buyer":
            price = min(self.limit, max(to_cents(self.list_price * PROBE_STEP * self.sent), CENT))
        else:
            price = to_cents(self.limit + (self.highest - self.limit) / self.sent)
        return Decision((MakeOffer(price=price),), 0.0), self.clock.per_wake


@dataclass(slots=True)
class Replay:
    """The seat's own decisions read back from a record (``engine.fork.batches``), each
    taking effect at its original time; ``failed`` once one could not."""

    plan: deque[Batch]
    failed: bool = False

    def decide(self, observation: Observation, /) -> tuple[Decision, float]:
        if not self.plan:
            return _SLEEP, 0.0
        batch = self.plan.popleft()
        thinking = round_ms(batch.start_at - observation.now)
        if thinking < 0:
            self.failed = True
            return _SLEEP, 0.0
        return Decision(tuple(batch.actions), 0.0), thinking


@dataclass(frozen=True, slots=True)
class Simulated:
    """One simulated negotiation's result for the searched seat."""

    outcome: Outcome
    events: tuple[Event, ...]
    surplus: Decimal | None
    """The seat's surplus on a deal, None without one."""


@dataclass(slots=True)
class Simulator:
    """Plays policies of ``role`` against fresh counterparts on one scenario, counting them."""

    scenario: Scenario
    role: Role
    counterpart: AgentFactory
    seed: Seed
    rules: Rules
    count: int = 0

    def fresh_counterpart(self) -> Agent:
        """The counterpart as it starts a negotiation (its generator seeded as there)."""
        them = other(self.role)
        scenario = self.scenario
        return self.counterpart(seat_view(scenario, them), seat_rng(self.seed, scenario.id, them))

    def play(self, policy: Policy) -> Simulated:
        """One negotiation of ``policy`` against a fresh counterpart."""
        self.count += 1
        room = VirtualRoom(
            self.scenario, self.rules, agents={other(self.role): self.fresh_counterpart()}
        )
        while (wake := room.next_wake()) is not None:
            decision, thinking = policy.decide(wake.observation)
            room.decide(self.role, decision, thinking=thinking)
        outcome = room.referee.outcome
        assert outcome is not None
        own = outcome.buyer_surplus if self.role == "buyer" else outcome.seller_surplus
        return Simulated(outcome, room.referee.events, own if outcome.status == "deal" else None)

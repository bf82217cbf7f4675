"""A market on the virtual clock: one seller and N buyers, each a house seat, one schedule.

The bilateral schedule's rules, for N + 1 seats (``engine/schedule.py``): the earliest due item
runs first; at equal times an action taking effect goes before a wake-up, then the first mover
(``rules.first_mover``: the seller, or the buyers in their order), then the buyers' order. A
seat is woken by the other side's events in its own thread: a buyer by the seller's actions to
it, the seller by any buyer's. Each action costs its seat the action's time, each wake the
per-wake thinking, as in a bilateral negotiation; the seller is one seat, so its actions to
different buyers follow each other on its clock. A buyer whose thread has ended is never woken
again. With one buyer this is the bilateral schedule, event for event.

Any seat may be driven from outside: the seller (``next_wake`` / ``decide``: a learner, a model
seat) and any buyer given no agent (``next_any_wake`` / ``decide_buyer``: a served room's client).
A driven seat's wake stops the clock until it decides, as in a bilateral negotiation; with
several driven seats they wake one at a time, in the schedule's order
(``dealroom.engine.market_turns``). ``rouse`` ends a driven seat's sleep early (a client back
from absence).

On the **wall** clock (``clock="wall"``, a served room's) only house seats are on the schedule:
their actions cost one clock step (``WALL_COSTS``), each wake its thinking, and they answer every
new offer of the other side (``engine.seats.answer_to``; the seller thread by thread); ``advance``
runs them as the wall passes their due times, and a driven seat's action takes effect when its
call arrives (``act_seller``, ``act_buyer``; ``dealroom.engine.market_wall`` drives them).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dealroom.engine.match import seat_rng
from dealroom.engine.seats import (
    CHECKED_DECISIONS,
    MIN_STEP,
    WALL_COSTS,
    HouseSeat,
    action_costs,
    answer_to,
    answered,
    still_live,
)
from dealroom.protocol import (
    Action,
    Agent,
    AgentFactory,
    Decision,
    Observation,
    RuleViolation,
    seat_view,
)
from dealroom.protocol._base import round_ms
from dealroom.protocol.market import (
    DEFAULT_MARKET_RULES,
    Addressed,
    MarketAgent,
    MarketAgentFactory,
    MarketDecision,
    MarketObservation,
    MarketRules,
    MarketScenario,
    MarketView,
    check_market_decision,
)
from dealroom.protocol.market_referee import MarketRecord, MarketReferee
from dealroom.protocol.secret import Seed
from dealroom.protocol.wire import ClockKind


def _no_items() -> deque[Addressed]:
    return deque()


def _no_errors() -> list[RuleViolation]:
    return []


@dataclass(slots=True, eq=False)
class SellerSeat:
    """The seller's seat: ``HouseSeat``'s transitions, over addressed actions."""

    costs: Mapping[str, float]
    agent: MarketAgent | None = None
    """Called in place when the seat wakes; None: driven from outside."""
    ready_at: float = 0.0
    wake_at: float = 0.0
    news_at: float = math.inf
    pending: deque[Addressed] = field(default_factory=_no_items)
    errors: list[RuleViolation] = field(default_factory=_no_errors)
    decisions: int = 0
    answered: dict[str, str] = field(default_factory=dict[str, str])
    """Wall clock: each buyer's newest offer the seat has answered (``answer_to``)."""
    answers: list[Addressed] = field(default_factory=list[Addressed])
    """Wall clock: the rejections queued for it, until they take effect."""

    @property
    def due(self) -> tuple[float, bool]:
        """When its next item happens, and whether that item is an action taking effect."""
        if self.pending:
            return round_ms(self.ready_at + self.costs[self.pending[0].action.type]), True
        soonest = min(self.wake_at, self.news_at)
        return max(soonest, self.ready_at), False

    def decided(self, at: float, decision: MarketDecision, thinking: float) -> None:
        """Decided at ``at``: charge the thinking, queue the actions, set the wake-up timer."""
        if self.decisions < CHECKED_DECISIONS:
            check_market_decision(decision)
            self.decisions += 1
        self.news_at = math.inf
        ready = self.ready_at = round_ms(at + max(thinking, MIN_STEP))
        self.wake_at = math.inf if decision.wait is None else round_ms(ready + decision.wait)
        self.pending.extend(decision.actions)

    def acted(self, at: float) -> Addressed:
        """Take the next queued action off the queue: it takes effect at ``at``."""
        self.ready_at = at
        return self.pending.popleft()

    def refused(self, violation: RuleViolation, at: float) -> None:
        """An action was refused: drop the rest of the batch and wake the seat at once."""
        self.errors.append(violation)
        self.pending.clear()
        self.answers.clear()
        self.wake_at = at

    def heard(self, at: float) -> None:
        """A buyer caused an event at ``at``."""
        self.news_at = min(self.news_at, at)


@dataclass(frozen=True, slots=True)
class MarketWake:
    """The driven seller to wake now: what it observes, and its actions refused since."""

    observation: MarketObservation
    errors: tuple[RuleViolation, ...]


@dataclass(frozen=True, slots=True)
class BuyerWake:
    """A driven buyer to wake now: its name, what it observes (its own thread only) and its
    actions refused since."""

    buyer: str
    observation: Observation
    errors: tuple[RuleViolation, ...]


class MarketRoom:
    """One market on the virtual clock, or on the wall clock (``clock="wall"``).

    Usage::

        MarketRoom(market, seller=agent, buyers=agents).run()      # every seat in place
        room = MarketRoom(market, buyers=agents)                    # the seller driven
        while (wake := room.next_wake()) is not None:
            room.decide(policy(wake.observation))
    """

    def __init__(
        self,
        market: MarketScenario,
        rules: MarketRules = DEFAULT_MARKET_RULES,
        *,
        seller: MarketAgent | None = None,
        buyers: Mapping[str, Agent | None],
        clock: ClockKind = "virtual",
    ) -> None:
        if set(buyers) != set(market.buyers):
            raise ValueError(f"one agent per buyer: {', '.join(market.buyers)}")
        self.referee = MarketReferee(market, rules)
        self.rules = rules
        self.deadline = market.deadline
        self.clock: ClockKind = clock
        costs = action_costs(rules.rules.costs) if clock == "virtual" else WALL_COSTS
        self.seller = SellerSeat(costs, seller)
        self.buyers = {b: HouseSeat("buyer", costs, buyers[b]) for b in market.buyers}
        names = list(market.buyers)
        order: list[str | None] = (
            [None, *names] if rules.rules.first_mover == "seller" else [*names, None]
        )
        if clock == "wall":  # a driven seat acts when its call arrives: never on the schedule
            order = [n for n in order if (seller if n is None else buyers[n]) is not None]
        self._order = order
        """Seats on the schedule, in the order that breaks ties (None: the seller)."""
        self._answers = clock == "wall"
        """House seats answer every new offer (people's time: ``engine.seats.answer_to``)."""
        self._per_wake = rules.rules.thinking.per_wake
        self._awake = False
        self._woken: str | None = None
        """The driven buyer awake (it has not decided yet)."""
        self.now = 0.0

    def run(self) -> None:
        """Play to the end; the seller must have an agent."""
        if self.next_wake() is not None:
            raise RuntimeError("the seller has no agent: use next_wake() and decide()")

    def next_wake(self) -> MarketWake | None:
        """Run the clock to the driven seller's next wake; None once the market is over."""
        wake = self.next_any_wake()
        if isinstance(wake, BuyerWake):
            raise RuntimeError("a driven buyer woke: use next_any_wake() and decide_buyer()")
        return wake

    def next_any_wake(self) -> MarketWake | BuyerWake | None:
        """Run the clock to the next wake of a driven seat (the seller's or a buyer's); None
        once the market is over."""
        if self._awake or self._woken is not None:
            raise RuntimeError("a driven seat has not decided yet")
        referee = self.referee
        while referee.is_open:
            name, at = self._earliest()
            if at >= self.deadline:
                referee.expire(self.deadline)
                self.now = max(self.now, self.deadline)
                return None
            self.now = max(self.now, at)
            wake = self._run_seller(at) if name is None else self._run_buyer(name, at)
            if wake is not None:
                return wake
        return None

    def decide(self, decision: MarketDecision, thinking: float | None = None) -> None:
        """The woken driven seller's decision; ``thinking`` seconds (default: the per-wake
        cost) pass before its first action."""
        if not self._awake:
            raise RuntimeError("the seller is not awake")
        self._awake = False
        cost = self._per_wake if thinking is None else thinking
        if not cost >= 0:
            raise ValueError(f"thinking time must be a number >= 0, not {thinking!r}")
        self.seller.decided(self.seller.ready_at, decision, cost)

    def decide_buyer(self, buyer: str, decision: Decision, thinking: float | None = None) -> None:
        """The woken driven buyer's decision (as ``decide``)."""
        if self._woken != buyer:
            raise RuntimeError(f"buyer {buyer!r} is not awake")
        cost = self._per_wake if thinking is None else thinking
        if not cost >= 0:
            raise ValueError(f"thinking time must be a number >= 0, not {thinking!r}")
        self._woken = None
        self.buyers[buyer].queue(decision, cost)

    def rouse(self, seat: str | None) -> None:
        """Wake the sleeping driven seat ``seat`` (None: the seller) as soon as the clock allows:
        no earlier than the last item run. Nothing changes for a seat with actions queued or
        one that is awake."""
        at = self.now
        if seat is None:
            if not self.seller.pending and not self._awake:
                self.seller.heard(max(at, self.seller.ready_at))
            return
        buyer = self.buyers[seat]
        if not buyer.pending and not buyer.awake:
            buyer.heard(max(at, buyer.ready_at))

    # -- the wall clock --------------------------------------------------------------------

    def advance(self, wall: float) -> None:
        """Wall clock: run every house item due by ``wall`` (seconds since the start); once
        ``wall`` reaches the deadline, the market ends."""
        referee, deadline = self.referee, self.deadline
        while referee.is_open:
            name, at = self._earliest()
            if at > wall or at >= deadline:
                if wall >= deadline:
                    referee.expire(deadline)
                    self.now = max(self.now, deadline)
                return
            self.now = max(self.now, at)
            wake = self._run_seller(at) if name is None else self._run_buyer(name, at)
            assert wake is None, "only house seats are on the wall clock's schedule"

    def next_due(self) -> float:
        """Wall clock: when the next house item is due (inf: none is)."""
        return self._earliest()[1] if self.referee.is_open else math.inf

    def act_seller(self, item: Addressed, at: float) -> RuleViolation | None:
        """Wall clock: the driven seller's action takes effect at ``at`` (no earlier than the
        last item run); the referee's refusal, if it refused it."""
        self.now = max(self.now, at)
        return self._seller_acts(item, self.now)

    def act_buyer(self, buyer: str, action: Action, at: float) -> RuleViolation | None:
        """Wall clock: a driven buyer's action takes effect at ``at`` (as ``act_seller``)."""
        self.now = max(self.now, at)
        return self._buyer_acts(buyer, action, self.now)

    # -- the schedule ----------------------------------------------------------------------

    def _earliest(self) -> tuple[str | None, float]:
        best: str | None = None
        best_at, best_action = math.inf, False
        threads = self.referee.threads
        for name in self._order:
            if name is None:
                at, action = self.seller.due
            elif threads[name].is_open:
                seat = self.buyers[name]
                at, action = seat.due_at, seat.due_action
            else:
                continue
            if at < best_at or (at == best_at and action and not best_action):
                best, best_at, best_action = name, at, action
        return best, best_at

    def _run_buyer(self, name: str, at: float) -> BuyerWake | None:
        seat = self.buyers[name]
        if seat.pending:
            action = seat.acted(at)
            if action is seat.answer:
                seat.answer = None
                if not still_live(action, "buyer", self.referee.threads[name].live_offers()):
                    return None  # the offer was replaced or withdrawn first: nothing to answer
            violation = self._buyer_acts(name, action, at)
            if violation is not None:
                seat.refused(violation, at)
            return None
        if seat.agent is None:
            seat.wake(at)
            self._woken = name
            errors = tuple(seat.errors)
            seat.errors.clear()
            return BuyerWake(name, self.referee.observe_buyer(name, at), errors)
        seat.errors.clear()
        observation = self.referee.observe_buyer(name, at)
        decision = seat.agent.act(observation)
        if self._answers:
            decision = answered(seat, observation, decision)
        seat.decided(at, decision, self._per_wake)
        return None

    def _buyer_acts(self, name: str, action: Action, at: float) -> RuleViolation | None:
        try:
            self.referee.apply_buyer(name, action, at)
        except RuleViolation as violation:
            return violation
        self.seller.heard(at)
        return None

    def _run_seller(self, at: float) -> MarketWake | None:
        seat = self.seller
        if seat.pending:
            item = seat.acted(at)
            if seat.answers and any(item is answer for answer in seat.answers):
                seat.answers.remove(item)
                assert item.buyer is not None
                if not still_live(
                    item.action, "seller", self.referee.threads[item.buyer].live_offers()
                ):
                    return None  # the offer was replaced or withdrawn first: nothing to answer
            violation = self._seller_acts(item, at)
            if violation is not None:
                seat.refused(violation, at)
            return None
        observation = self.referee.observe_seller(at)
        if seat.agent is None:
            seat.ready_at, seat.news_at, self._awake = at, math.inf, True
            errors = tuple(seat.errors)
            seat.errors.clear()
            return MarketWake(observation, errors)
        seat.errors.clear()
        decision = seat.agent.act(observation)
        if self._answers:
            decision = self._seller_answered(observation, decision)
        seat.decided(at, decision, self._per_wake)
        return None

    def _seller_acts(self, item: Addressed, at: float) -> RuleViolation | None:
        try:
            entries = self.referee.apply_seller(item, at)
        except RuleViolation as violation:
            return violation
        for entry in entries:
            if entry.event.by == "seller":
                self.buyers[entry.buyer].heard(at)
        return None

    def _seller_answered(
        self, observation: MarketObservation, decision: MarketDecision
    ) -> MarketDecision:
        """Wall clock: the house seller answers each buyer's new offer as a bilateral house
        seat does (``answer_to``), thread by thread: a thread its decision does not act in
        gets a rejection, after its own actions."""
        seat, added = self.seller, list[Addressed]()
        for thread in observation.threads:
            theirs = next((o for o in thread.live_offers if o.by == "buyer"), None)
            acted = any(item.buyer in (None, thread.buyer) for item in decision.actions)
            newest, reject = answer_to(seat.answered.get(thread.buyer), theirs, acted)
            if newest is not None:
                seat.answered[thread.buyer] = newest
            if reject is not None:
                added.append(Addressed(thread.buyer, reject))
        if not added:
            return decision
        seat.answers.extend(added)
        return MarketDecision((*decision.actions, *added), wait=decision.wait)


def market_agents(
    market: MarketScenario,
    seller: MarketAgentFactory,
    buyers: Sequence[AgentFactory],
    seed: Seed,
    rules: MarketRules = DEFAULT_MARKET_RULES,
) -> tuple[MarketAgent, dict[str, Agent]]:
    """Every seat's agent, each with its own seeded generator (a buyer's is the one its thread
    would have as a bilateral negotiation; the seller's, the market's)."""
    played = buyer_agents(market, buyers, seed)
    return seller(market_view(market, rules), seat_rng(seed, market.id, "seller")), played


def market_view(market: MarketScenario, rules: MarketRules = DEFAULT_MARKET_RULES) -> MarketView:
    """What the seller knows before the market opens."""
    return MarketView(market=market.public(), private_value=market.seller_cost, rules=rules)


def buyer_agents(
    market: MarketScenario, buyers: Sequence[AgentFactory], seed: Seed
) -> dict[str, Agent]:
    """Every buyer's agent, each with the seeded generator its thread would have as a
    bilateral negotiation."""
    if len(buyers) != len(market.buyers):
        raise ValueError(f"{len(market.buyers)} buyers, {len(buyers)} buyer agents")
    played: dict[str, Agent] = {}
    for name, factory in zip(market.buyers, buyers, strict=True):
        thread = market.thread(name)
        played[name] = factory(seat_view(thread, "buyer"), seat_rng(seed, thread.id, "buyer"))
    return played


def play_market(
    market: MarketScenario,
    seller: MarketAgentFactory,
    buyers: Sequence[AgentFactory],
    *,
    names: tuple[str, Sequence[str]] | None = None,
    rules: MarketRules = DEFAULT_MARKET_RULES,
    seed: Seed = 0,
) -> MarketRecord:
    """Run a market to its end and return the record. Deterministic for a given seed."""
    agent, played = market_agents(market, seller, buyers, seed, rules)
    room = MarketRoom(market, rules, seller=agent, buyers=played)
    room.run()
    return market_record(room, names)


def market_record(room: MarketRoom, names: tuple[str, Sequence[str]] | None = None) -> MarketRecord:
    """The record of a market played to its end (``names``: the seller's and each buyer's
    agent spec)."""
    market = room.referee.market
    outcome = room.referee.outcome
    if outcome is None:
        raise RuntimeError("the market is not over")
    seller_name, buyer_names = names or ("seller", [f"buyer {b}" for b in market.buyers])
    return MarketRecord(
        scenario=market,
        seller=seller_name,
        buyers=tuple(buyer_names),
        log=tuple(room.referee.log),
        outcome=outcome,
    )


def child_rng(rng: random.Random, buyers: int, index: int) -> random.Random:
    """The generator of the seller's part for the ``index``-th buyer: the seller's own with
    one buyer (so that a one-buyer market is the bilateral game), else one seeded from it."""
    if buyers == 1:
        return rng
    return random.Random(f"{rng.getrandbits(64)}:{index}")

"""A market: one seller, N buyers, one item, one clock (docs/design.md, "Markets").

Each buyer bargains with the seller in a thread of its own, which is a bilateral negotiation
under the bilateral rules (``Referee``); the market ties the threads together (``MarketReferee``
in ``dealroom.protocol.market_referee``): the first accepted offer sells the item and ends every
other thread, the seller's walk-away, forfeit or turn budget ends the market, and the deadline is
one for all. A bilateral negotiation is the market with one buyer: ``MarketScenario.of`` wraps a
bilateral scenario so that its one thread is that very scenario.

A buyer sees only its own thread (a bilateral ``Observation``): every bilateral agent can sit in
a buyer's seat unchanged. The seller sees every thread (``MarketObservation``) and addresses each
action to one buyer (``Addressed``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal, Protocol

from pydantic import Field, model_validator

from dealroom.protocol._base import Model, Money, trusted
from dealroom.protocol.actions import Action, WalkAway
from dealroom.protocol.agent import Decision, DecisionError, check_decision
from dealroom.protocol.events import Event, NegotiationEnded
from dealroom.protocol.observation import LiveOffer, Observation
from dealroom.protocol.outcome import SeatOutcome, Status
from dealroom.protocol.rules import DEFAULT_RULES, Rules
from dealroom.protocol.scenario import PublicScenario, Scenario

MAX_BUYERS = 16
"""Most buyers in one market."""


def buyer_ids(n: int) -> tuple[str, ...]:
    """The buyers' public names in a market of ``n``: ``b1`` .. ``bN``."""
    if not 1 <= n <= MAX_BUYERS:
        raise ValueError(f"a market has 1 to {MAX_BUYERS} buyers, not {n}")
    return tuple(f"b{i}" for i in range(1, n + 1))


def pool_name(specs: Sequence[str]) -> str:
    """The agent specs of a market's buyers as one word: the one spec of a pool of equals,
    else the specs joined by '+'."""
    return specs[0] if len(set(specs)) == 1 else "+".join(specs)


def pool_members(pool: str, buyers: int) -> tuple[str, ...]:
    """The agent spec of each of ``buyers`` buyers from a pool's word (``pool_name``'s
    inverse): one spec that every buyer plays, or one spec per buyer joined by '+'. Raises
    ValueError, in one sentence, for a pool of another size."""
    members = tuple(part.strip() for part in pool.split("+"))
    if len(members) == 1:
        members *= buyers
    if len(members) != buyers or not all(members):
        raise ValueError(f"pool {pool!r} names {len(members)} buyers, not {buyers}")
    return members


class MarketRules(Model):
    """The bilateral rules for every thread, and what the market adds."""

    rules: Rules = DEFAULT_RULES
    """Each thread's rules (limits, action costs, thinking, first mover)."""
    seller_actions: int | None = Field(default=None, ge=1)
    """The seller's turn budget: its valid actions in the whole market, after which the market
    ends (``action_limit``); None: ``rules.max_actions`` (so that one buyer is the bilateral
    game). Each buyer keeps ``rules.max_actions`` in its own thread."""
    buyers_know_count: bool = True
    """A buyer is told how many buyers there are (it never sees another buyer's thread)."""

    @property
    def seller_budget(self) -> int:
        """The seller's turn budget in actions."""
        return self.rules.max_actions if self.seller_actions is None else self.seller_actions


DEFAULT_MARKET_RULES = MarketRules()


def thread_id(market_id: str, buyers: int, buyer: str) -> str:
    """The id of ``buyer``'s thread: the market's own with one buyer (the bilateral game),
    else ``MARKET.bN``."""
    return market_id if buyers == 1 else f"{market_id}.{buyer}"


class PublicMarket(Model):
    """What every seat of a market knows: the item, its list price, the deadline (the
    scenario's public part) and who the buyers are."""

    scenario: PublicScenario
    """The item, list price, tier, currency and the one deadline; its id is the market's."""
    buyers: tuple[str, ...] = Field(min_length=1, max_length=MAX_BUYERS)
    """The buyers' names, ``b1`` .. ``bN``."""

    @property
    def id(self) -> str:
        """The market's id."""
        return self.scenario.id

    def thread_scenario(self, buyer: str) -> PublicScenario:
        """The public scenario of ``buyer``'s thread (the market's own with one buyer)."""
        if len(self.buyers) == 1:
            return self.scenario
        if buyer not in self.buyers:
            raise ValueError(f"there is no buyer {buyer!r}")
        return self.scenario.model_copy(
            update={"id": thread_id(self.scenario.id, len(self.buyers), buyer)}
        )


class MarketScenario(Model):
    """A whole market, private values included. Never shown to a seat."""

    base: Scenario
    """The item, list price, tier, currency, deadline and the seller's cost; its buyer value
    is the first buyer's."""
    buyer_values: tuple[Money, ...] = Field(min_length=1, max_length=MAX_BUYERS)
    """Each buyer's private value, in the order of ``buyers``."""

    @model_validator(mode="after")
    def _positive(self) -> MarketScenario:
        if any(value <= 0 for value in self.buyer_values):
            raise ValueError("every buyer's value is above 0")
        if self.buyer_values[0] != self.base.buyer_value:
            raise ValueError("the base scenario's buyer value is the first buyer's")
        return self

    @classmethod
    def of(cls, scenario: Scenario) -> MarketScenario:
        """The market with one buyer whose only thread is ``scenario`` itself."""
        return cls(base=scenario, buyer_values=(scenario.buyer_value,))

    @property
    def id(self) -> str:
        """The market's id (the base scenario's)."""
        return self.base.id

    @property
    def buyers(self) -> tuple[str, ...]:
        """The buyers' names."""
        return buyer_ids(len(self.buyer_values))

    @property
    def seller_cost(self) -> Decimal:
        """The seller's private cost."""
        return self.base.seller_cost

    @property
    def deadline(self) -> float:
        """The one deadline of every thread."""
        return self.base.deadline

    def value(self, buyer: str) -> Decimal:
        """``buyer``'s private value."""
        return self.buyer_values[self.buyers.index(buyer)]

    @property
    def best_value(self) -> Decimal:
        """The highest buyer value."""
        return max(self.buyer_values)

    def thread(self, buyer: str) -> Scenario:
        """The bilateral scenario of ``buyer``'s thread (the base itself with one buyer)."""
        if len(self.buyer_values) == 1:
            return self.base
        identity = thread_id(self.base.id, len(self.buyer_values), buyer)
        return self.base.model_copy(update={"id": identity, "buyer_value": self.value(buyer)})

    def public(self) -> PublicMarket:
        """What every seat knows."""
        return trusted(PublicMarket, scenario=self.base.public(), buyers=self.buyers)


class MarketView(Model):
    """What the seller knows before the market opens."""

    market: PublicMarket
    private_value: Money
    """Your cost: the least you would take."""
    rules: MarketRules


@dataclass(frozen=True, slots=True)
class Addressed:
    """One seller action and the buyer whose thread it is for. A walk-away to ``None`` leaves
    the whole market; to a buyer, that buyer's thread only."""

    buyer: str | None
    action: Action


@dataclass(frozen=True, slots=True)
class MarketDecision:
    """What the seller does when woken: addressed actions in order, then sleep (``wait``
    as in ``Decision``)."""

    actions: tuple[Addressed, ...] = ()
    wait: float | None = None


def check_market_decision(decision: object) -> MarketDecision:
    """``decision`` if it is a ``MarketDecision`` of well-formed addressed actions, else a
    one-line ``DecisionError`` (the passive check of a market seller's first decisions)."""
    if not isinstance(decision, MarketDecision):
        raise DecisionError(
            f"the seller's market agent returned {type(decision).__name__} from act(), "
            "not a MarketDecision"
        )
    for item in decision.actions:
        if not isinstance(item, Addressed):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise DecisionError(
                f"the seller's market agent decided a {type(item).__name__}; a "
                "MarketDecision's actions are Addressed(buyer, action)"
            )
        check_decision_action(item)
    return decision


def check_decision_action(item: Addressed) -> None:
    """One addressed action: an action, with a buyer unless it leaves the whole market."""
    check_decision(Decision(actions=(item.action,)), "seller")
    if item.buyer is None and not isinstance(item.action, WalkAway):
        raise DecisionError(
            f"the seller's market agent decided a {item.action.type} for no buyer; only a "
            "walk-away may leave the buyer out (it leaves the whole market)"
        )


class ThreadView(Model):
    """One buyer's thread as the seller sees it."""

    buyer: str
    open: bool
    """False once the thread has ended (the buyer walked away, or the market closed)."""
    live_offers: tuple[LiveOffer, ...]
    events: tuple[Event, ...]
    """The thread's events, oldest first (seq counts within the thread)."""

    @property
    def their_offer(self) -> LiveOffer | None:
        """The buyer's live offer, if any."""
        return next((o for o in self.live_offers if o.by == "buyer"), None)

    @property
    def my_offer(self) -> LiveOffer | None:
        """The seller's live offer to this buyer, if any."""
        return next((o for o in self.live_offers if o.by == "seller"), None)


MarketEndReason = Literal["sold", "deadline", "walk_away", "forfeit", "action_limit", "buyers_left"]
"""Why a market ended: an offer accepted; the deadline; the seller walked away, forfeited or
spent its turn budget; or every thread ended by its buyer."""


class MarketSeatOutcome(Model):
    """The market's end as the seller may see it."""

    status: Status
    end_reason: MarketEndReason
    buyer: str | None
    """Who bought the item; null without a sale."""
    price: Money | None
    time: float
    surplus: Money
    """Your surplus: price - cost on a sale, 0 otherwise."""


class MarketObservation(Model):
    """Everything the seller knows at one moment."""

    market: PublicMarket
    private_value: Money
    """Your cost."""
    now: float
    time_left: float
    actions_left: int
    """Valid actions left in your turn budget."""
    threads: tuple[ThreadView, ...]
    """One per buyer, in the order of ``market.buyers``."""
    outcome: MarketSeatOutcome | None = None

    def thread(self, buyer: str) -> ThreadView:
        """``buyer``'s thread."""
        return self.threads[self.market.buyers.index(buyer)]

    def thread_observation(self, buyer: str) -> Observation:
        """``buyer``'s thread as a bilateral seller's observation (what a bilateral agent
        playing that one thread reads; its ``outcome`` is the market's only with one buyer)."""
        view = self.thread(buyer)
        end = self.outcome
        return trusted(
            Observation,
            role="seller",
            scenario=self.market.thread_scenario(buyer),
            private_value=self.private_value,
            now=self.now,
            time_left=self.time_left,
            live_offers=view.live_offers,
            events=view.events,
            outcome=None if view.open else _thread_end(view, end),
        )

    def best_bid(self) -> tuple[str, LiveOffer] | None:
        """The highest live buyer offer and its buyer (the first buyer on ties), if any."""
        best: tuple[str, LiveOffer] | None = None
        for thread in self.threads:
            bid = thread.their_offer
            if bid is not None and (best is None or bid.price > best[1].price):
                best = (thread.buyer, bid)
        return best

    @property
    def is_over(self) -> bool:
        """True once the market has ended."""
        return self.outcome is not None


class MarketAgent(Protocol):
    """The seller's policy for one market."""

    def act(self, observation: MarketObservation, /) -> MarketDecision:
        """Decide what to do now."""
        ...


MarketAgentFactory = Callable[[MarketView, random.Random], MarketAgent]
"""Builds a market seller from its view and a seeded generator."""


def _thread_end(view: ThreadView, market: MarketSeatOutcome | None) -> SeatOutcome:
    """A closed thread's end as its seller sees it: the sale's price and surplus if this
    thread sold the item, else no deal."""
    last = view.events[-1]
    assert isinstance(last, NegotiationEnded)
    sold = market is not None and market.buyer == view.buyer
    return trusted(
        SeatOutcome,
        status="deal" if sold else "no_deal",
        end_reason=last.reason,
        price=last.price,
        time=last.t,
        surplus=market.surplus if sold and market is not None else Decimal("0.00"),
    )

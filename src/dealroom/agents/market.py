"""Scripted market sellers, and the spec that names one.

- ``auctioneer``: asks every buyer the same falling price (a time-dependent curve from its
  opening to its cost) and sells to the best live bid as soon as that bid reaches the price.
- ``sequential``: bargains with one buyer at a time, each for an equal slice of the deadline,
  conceding within nine tenths of the slice towards the best bid any buyer has standing (never
  below its cost), and sells to the best live bid once it reaches the price.
- any bilateral scripted spec (``boulware``, ``linear:noise=0.1``, ...): that strategy run in
  every thread on its own (``PerThread``); with one buyer it is the bilateral agent itself.

Every buyer seat takes a bilateral spec: a buyer sees only its own thread.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from dealroom.agents._pricing import clamp, money_of, safe_price
from dealroom.agents._tactics import MIN_MOVE
from dealroom.engine.market import child_rng
from dealroom.play.registry import AgentSpecError, parse_params, resolve
from dealroom.protocol import Accept, Action, Agent, AgentFactory, MakeOffer, SeatView
from dealroom.protocol.market import (
    Addressed,
    MarketAgentFactory,
    MarketDecision,
    MarketObservation,
    MarketView,
)


class PerThread:
    """A bilateral strategy in every open thread, each on its own: on every wake each open
    thread's agent decides from its thread alone; the actions are queued in the buyers' order
    and the seat sleeps until the soonest wake-up any of them asked for."""

    def __init__(self, view: MarketView, rng: random.Random, factory: AgentFactory) -> None:
        buyers = view.market.buyers
        self.agents: dict[str, Agent] = {
            buyer: factory(
                SeatView(
                    role="seller",
                    scenario=view.market.thread_scenario(buyer),
                    private_value=view.private_value,
                ),
                child_rng(rng, len(buyers), index),
            )
            for index, buyer in enumerate(buyers)
        }

    def act(self, observation: MarketObservation) -> MarketDecision:
        actions: list[Addressed] = []
        wait: float | None = None
        for thread in observation.threads:
            if not thread.open:
                continue
            decision = self.agents[thread.buyer].act(observation.thread_observation(thread.buyer))
            actions.extend(Addressed(thread.buyer, action) for action in decision.actions)
            if decision.wait is not None and (wait is None or decision.wait < wait):
                wait = decision.wait
        return MarketDecision(tuple(actions), wait)


@dataclass(frozen=True, slots=True)
class CurveParams:
    """A seller's falling price: from ``seller_open`` of the list price to its cost (plus
    ``margin`` of the list price), f(t) = t^(1/e) over the deadline (or a slice of it)."""

    e: float = 0.5
    seller_open: float = 1.3
    step: float = 10.0
    """Seconds to sleep before lowering the price again when nothing happens."""
    margin: float = 0.0


class _Curve:
    def __init__(self, view: MarketView, params: CurveParams) -> None:
        scenario = view.market.scenario
        self.params = params
        self.list_price = scenario.list_price
        self.cost = view.private_value
        self.deadline = scenario.deadline
        floor = float(self.cost / self.list_price) + params.margin
        self.start = max(params.seller_open, floor)
        self.end = floor
        self.move = self.list_price * MIN_MOVE

    def price(self, t: float, floor: Decimal | None = None) -> Decimal:
        """The price at normalised time ``t``, falling to ``floor`` (default: the curve's
        end), never below the cost."""
        e = self.params.e
        f = 0.0 if e <= 0 else clamp(t, 0.0, 1.0) ** (1 / e)  # e = 0: never concedes
        end = self.end if floor is None else max(self.end, float(floor / self.list_price))
        fraction = self.start + (end - self.start) * f
        price = money_of(fraction, self.list_price, int(self.list_price * 100))
        return safe_price("seller", price, self.cost)

    def sell_or_ask(
        self, observation: MarketObservation, price: Decimal, buyers: list[str]
    ) -> MarketDecision:
        """Accept the best live bid if it reaches ``price``; else ask ``price`` of ``buyers``
        where the own live offer is not already within a minimal move of it."""
        best = observation.best_bid()
        if best is not None and best[1].price >= price and best[1].price >= self.cost:
            accept: Action = Accept(offer_id=best[1].offer_id)
            return MarketDecision((Addressed(best[0], accept),))
        asks: list[Addressed] = []
        for buyer in buyers:
            mine = observation.thread(buyer).my_offer
            if mine is None or abs(mine.price - price) >= self.move:
                asks.append(Addressed(buyer, MakeOffer(price=price)))
        return MarketDecision(tuple(asks), self.params.step)


class Auctioneer:
    """One falling price asked of every buyer; the best bid that reaches it wins."""

    def __init__(self, view: MarketView, params: CurveParams) -> None:
        self.curve = _Curve(view, params)

    def act(self, observation: MarketObservation) -> MarketDecision:
        price = self.curve.price(observation.now / self.curve.deadline)
        open_buyers = [t.buyer for t in observation.threads if t.open]
        return self.curve.sell_or_ask(observation, price, open_buyers)


class Sequential:
    """One buyer at a time, an equal slice of the deadline each, conceding within the slice
    towards the best bid standing in any thread."""

    def __init__(self, view: MarketView, params: CurveParams) -> None:
        self.curve = _Curve(view, params)
        self.buyers = view.market.buyers
        self.slice = self.curve.deadline / len(self.buyers)

    def act(self, observation: MarketObservation) -> MarketDecision:
        index = min(int(observation.now / self.slice), len(self.buyers) - 1)
        # The price reaches the best standing bid by nine tenths of the slice, leaving the
        # rest to sell (or, in the last slice, to sell before the deadline).
        t = (observation.now - index * self.slice) / (0.9 * self.slice)
        best = observation.best_bid()
        price = self.curve.price(t, None if best is None else best[1].price)
        current = [b for b in self.buyers[index:] if observation.thread(b).open][:1]
        decision = self.curve.sell_or_ask(observation, price, current)
        next_slice = (index + 1) * self.slice - observation.now
        if decision.wait is not None and index + 1 < len(self.buyers):
            return MarketDecision(decision.actions, min(decision.wait, max(next_slice, 0.001)))
        return decision


@dataclass(frozen=True, slots=True)
class MarketSellerEntry:
    """A market seller by name: its defaults and how to build it."""

    name: str
    summary: str
    defaults: Mapping[str, float]
    build: Callable[[dict[str, float]], MarketAgentFactory]


def _curve_params(name: str, params: dict[str, float]) -> CurveParams:
    if not 0 <= params["e"] <= 100:
        raise AgentSpecError(f"parameter 'e' of {name!r} must be at least 0 and at most 100")
    if not 0 < params["seller_open"] <= 10 or not 0 <= params["margin"] <= 10:
        raise AgentSpecError(f"parameters 'seller_open' and 'margin' of {name!r} are 0 to 10")
    if not 0 < params["step"] <= 3600:
        raise AgentSpecError(f"parameter 'step' of {name!r} must be positive, at most 3600")
    return CurveParams(**params)


def _auctioneer(params: dict[str, float]) -> MarketAgentFactory:
    chosen = _curve_params("auctioneer", params)
    return lambda view, rng: Auctioneer(view, chosen)


def _sequential(params: dict[str, float]) -> MarketAgentFactory:
    chosen = _curve_params("sequential", params)
    return lambda view, rng: Sequential(view, chosen)


_CURVE = {"e": 0.5, "seller_open": 1.3, "step": 10.0, "margin": 0.0}
MARKET_SELLERS: dict[str, MarketSellerEntry] = {
    entry.name: entry
    for entry in (
        MarketSellerEntry(
            "auctioneer",
            "asks every buyer one falling price; sells to the best bid that reaches it",
            _CURVE,
            _auctioneer,
        ),
        MarketSellerEntry(
            "sequential",
            "one buyer at a time (equal slices), conceding towards the best standing bid",
            {**_CURVE, "e": 1.0},
            _sequential,
        ),
    )
}


def per_thread(factory: AgentFactory) -> MarketAgentFactory:
    """A bilateral strategy as a market seller, run in every thread on its own."""
    return lambda view, rng: PerThread(view, rng, factory)


def is_market_seller(spec: str) -> bool:
    """True if a spec names one of the market sellers (``auctioneer``, ``sequential``), with
    or without parameters: an agent that only a market's seller seat plays."""
    return spec.strip().partition(":")[0] in MARKET_SELLERS


def market_seller(spec: str) -> MarketAgentFactory:
    """The market seller a spec names: a market seller (``auctioneer``, ``sequential``) or
    any bilateral scripted spec run per thread. AgentSpecError in one sentence otherwise."""
    name, _, rest = spec.strip().partition(":")
    entry = MARKET_SELLERS.get(name)
    if entry is not None:
        return entry.build(parse_params(name, entry.defaults, rest))
    try:
        return per_thread(resolve(spec))
    except AgentSpecError as exc:
        markets = ", ".join(MARKET_SELLERS)
        raise AgentSpecError(f"{exc} (market sellers: {markets}, or any of those)") from None

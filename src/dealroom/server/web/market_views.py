"""What the room page shows of a market room: a pure function from a served market to its view.

A market room plays a series of markets (``dealroom.server.market_series``): the page shows its
current market, with its number in the series (``negotiation``).

``market_spectator_view`` follows the bilateral room page's rule (``views.spectator_view``):

- before the end, the public market (item, list price, deadline, the buyers' names), who sits in
  each seat, and every thread side by side: its events (offers, messages, rejections,
  walk-aways, its end), its live offers, whether it is open; the current highest bid
  (``MarketObservation.best_bid``) and the seller's turn budget used. Never a private value: no
  buyer's value, not the seller's cost. Its events stop at the market's clock, which the house
  seats never pass before the client seat gets there (``MarketRoomServed.watched``), so the page
  never shows the client seat its future;
- after the end, ``result`` adds every private value, the scored market (``MarketOutcome``:
  who bought, the price, the end reason, the surpluses, efficiency, allocative efficiency, the
  seller's share) and the market measures (``analysis.market.market_measures``), each computed
  in its one home.

A spectator sees every thread, as the market's seller does: a buyer's client given the spectator
link would see the other buyers' threads, which its own seat never shows it (docs/security.md,
section 6).
"""

from __future__ import annotations

from typing import Literal

from dealroom.analysis.market import MarketMeasures, market_measures
from dealroom.protocol import Event, LiveOffer, Money, PublicScenario
from dealroom.protocol.market_referee import MarketOutcome
from dealroom.protocol.text import shown_event
from dealroom.protocol.wire import ClockKind
from dealroom.server.market_room import SELLER, MarketRoomServed
from dealroom.server.market_series import MarketSeries
from dealroom.server.room import Room
from dealroom.server.web.views import SpectatorView, View, spectator_view


class MarketThread(View):
    """One buyer's thread with the seller, as the room page shows it (a column)."""

    buyer: str
    """The buyer's name (``b1`` .. ``bN``)."""
    seat: str | None
    """Who sits in the buyer's seat: a house agent's spec, or the client's name (``mcp``); none
    on the seller's own seat page (its seat is not told who plays each buyer)."""
    open: bool
    """False once the thread has ended (its last event says why)."""
    events: tuple[Event, ...]
    """The thread's events, oldest first, each at its time on the market's clock."""
    live_offers: tuple[LiveOffer, ...]


class BestBid(View):
    """The highest live buyer offer in the market (the first buyer's on ties)."""

    buyer: str
    offer_id: str
    price: Money


class MarketSpectatorResult(View):
    """The end of a market as the room page shows it: every private value and the scoring."""

    outcome: MarketOutcome
    """Who bought, the price, why it ended, the surpluses, efficiency, allocative efficiency
    and the seller's share (``MarketReferee``'s scoring), and each thread's outcome."""
    seller_cost: Money
    buyer_values: dict[str, Money]
    """Each buyer's private value, by name."""
    measures: MarketMeasures
    """The market measures of the seller's conduct (``analysis.market``)."""


class MarketSpectatorView(View):
    """The room page of a market room: the market as a spectator may see it now."""

    kind: Literal["market"] = "market"
    """Tells the page's script a market from a bilateral room (``SpectatorView``)."""
    room: str
    negotiation: int
    """The market's number in the room's series, from 1."""
    market: str
    """The market's id."""
    clock: ClockKind
    open: bool
    seller: str
    """Who sits in the seller's seat: a house agent's spec, or the client's name (``mcp``)."""
    scenario: PublicScenario
    """The item, list price, tier, currency and the one deadline."""
    now: float
    time_left: float
    seller_actions: int
    """Valid seller actions so far: the turn budget used."""
    seller_budget: int
    """The seller's turn budget (``MarketRules.seller_budget``)."""
    best_bid: BestBid | None
    """The current highest live bid; none once the market is over."""
    threads: tuple[MarketThread, ...]
    """One per buyer, in the order of the buyers."""
    result: MarketSpectatorResult | None
    """Only once the market has ended."""


def market_spectator_view(room: MarketRoomServed) -> MarketSpectatorView:
    """The room page's view of a market room (see the module docstring)."""
    seen = room.watched()
    outcome = room.engine.referee.outcome
    bid = seen.best_bid()
    budget = room.rules.seller_budget
    return MarketSpectatorView(
        room=room.id,
        negotiation=room.number,
        market=room.market.id,
        clock=room.clock,
        open=outcome is None,
        seller=room.names[SELLER],
        scenario=seen.market.scenario,
        now=seen.now,
        time_left=seen.time_left,
        seller_actions=budget - seen.actions_left if outcome is None else outcome.seller_actions,
        seller_budget=budget,
        best_bid=None
        if bid is None
        else BestBid(buyer=bid[0], offer_id=bid[1].offer_id, price=bid[1].price),
        threads=tuple(
            MarketThread(
                buyer=thread.buyer,
                seat=room.names[thread.buyer],
                open=thread.open,
                events=tuple(map(shown_event, thread.events)),
                live_offers=thread.live_offers,
            )
            for thread in seen.threads
        ),
        result=None if outcome is None else _result(room, outcome),
    )


def room_page_view(room: Room | MarketSeries) -> SpectatorView | MarketSpectatorView:
    """The room page's view of a bilateral room (``spectator_view``) or of a market room (its
    current market)."""
    if isinstance(room, MarketSeries):
        return market_spectator_view(room.current)
    return spectator_view(room)


def _result(room: MarketRoomServed, outcome: MarketOutcome) -> MarketSpectatorResult:
    """Every private value and the scoring: only ever built for a market that has ended."""
    market = room.market
    return MarketSpectatorResult(
        outcome=outcome,
        seller_cost=market.seller_cost,
        buyer_values=dict(zip(market.buyers, market.buyer_values, strict=True)),
        measures=market_measures(room.record()),
    )


__all__ = [
    "BestBid",
    "MarketSpectatorResult",
    "MarketSpectatorView",
    "MarketThread",
    "market_spectator_view",
    "room_page_view",
]

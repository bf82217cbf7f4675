"""What the seat page shows of a market room's seat: pure functions from a served market and one
of its client seats to the page's JSON.

- ``market_buyer_view``: a buyer's page is the bilateral buyer's (``views.SeatPageView``), built
  from its own thread only (``MarketBuyerCalls``: what its MCP tools return), with the bilateral
  person's briefing followed by what it is told of the market
  (``market_text.buyer_market_text``: the number of buyers when ``buyers_know_count``), and
  whose turn the market waits for. Nothing of another buyer: no value, no thread, no offer, not
  even its name.
- ``market_seller_view``: the seller's page, from the seller's own view at its latest turn
  (``MarketSellerCalls.observation``: what its ``get_state`` shows): every thread side by side
  (the room page's ``MarketThread``, with its events in a person's words), its own cost and no
  buyer's value, the turn budget used and left, the highest bid and, once the market is over,
  its own outcome and the market measures read from the threads it saw. The measures that need
  the buyers' values (efficiency, early-sale loss) are the room page's only: a seat's page never
  shows another seat's value, before or after the end.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from dealroom.analysis.market import market_measures
from dealroom.engine.market import market_view
from dealroom.protocol import Money, PublicScenario, SeriesResult, people_log, people_text
from dealroom.protocol.market import MarketSeatOutcome
from dealroom.protocol.market_text import buyer_market_text
from dealroom.protocol.people_market import (
    seller_briefing,
    seller_hint,
    seller_outcome,
    turn_line,
)
from dealroom.protocol.text import shown_event
from dealroom.protocol.wire import ClockKind, SeriesTally
from dealroom.server import texts
from dealroom.server.market_room import SELLER, MarketRoomServed
from dealroom.server.market_series import MarketSeries
from dealroom.server.web.market_views import BestBid, MarketThread
from dealroom.server.web.views import SeatPageView, View


class MarketTurn(View):
    """Whose turn a market's clock waits for, as one seat's page may know it."""

    yours: bool
    """The clock waits for this seat's move now."""
    text: str
    """What the page says (``people_market.turn_line``): on the seller's page, which buyer it
    waits for; never which other seat on a buyer's page (a buyer may not be told how many buyers
    there are)."""


class MarketBuyerPageView(SeatPageView):
    """A market buyer's seat page: the bilateral buyer's page of its own thread, and the turn."""

    turn: MarketTurn


class SellerThread(MarketThread):
    """One buyer's thread on the seller's page: the room page's column, its events also in a
    person's words."""

    log: tuple[str, ...]
    """The thread's events as the seller reads them (``people_log.person_lines``)."""


class SellerMeasures(View):
    """The market measures of the seller's own conduct that its own view holds
    (``analysis.market``; not the early-sale loss, a share of gains the buyers' values make)."""

    probed: int
    offers_per_buyer: float
    fixation: float | None
    unheard_at_sale: int | None


class MarketSellerPageView(View):
    """A market seller's seat page: every thread side by side, its controls, the budget."""

    kind: Literal["market_seller"] = "market_seller"
    """Tells the page's script a market seller's page from a bilateral seat's."""
    room: str
    market: str
    clock: ClockKind
    open: bool
    scenario: PublicScenario
    buyers: tuple[str, ...]
    private_value: Money
    """The seller's own cost: the least it would take."""
    now: float
    time_left: float
    seller_actions: int
    """Valid seller actions so far: the turn budget used."""
    seller_budget: int
    actions_left: int
    best_bid: BestBid | None
    threads: tuple[SellerThread, ...]
    """One per buyer, in the order of the buyers: as the seller sees them at its latest turn."""
    briefing: str
    hint: str
    turn: MarketTurn
    outcome: MarketSeatOutcome | None
    """The market's end as the seller may see it; none while it runs."""
    outcome_text: str | None
    measures: SellerMeasures | None
    """Only once the market has ended."""
    negotiation: int
    """This market's place in the room's series, from 1."""
    finished: int
    """Markets of the series that have ended."""
    total_surplus: Money
    """The seller's surplus over the finished markets."""
    can_start_next: bool
    """True once this market has ended and the room's series has another."""


def _turn(room: MarketRoomServed, seat: str, *, over: bool) -> MarketTurn:
    """Whose turn it is, as ``seat``'s page says it: the seller's names the buyer the clock
    waits for (it knows every buyer); a buyer's never names another seat."""
    turns = room.clients.turns
    wall = room.clock == "wall"  # no turns: a move takes effect as it is made
    yours = not over and (wall or turns.turn == seat)
    absent = not over and seat in turns.absent
    holder = turns.turn
    waiting_for = holder if seat == SELLER and holder not in (None, SELLER) else None
    line = turn_line(
        your_turn=yours, absent=absent, over=over, clock=room.clock, waiting_for=waiting_for
    )
    return MarketTurn(yours=yours, text=line)


def market_buyer_view(
    room: MarketRoomServed, buyer: str, series: MarketSeries | None = None
) -> MarketBuyerPageView:
    """Buyer ``buyer``'s seat page (see the module docstring), in its room's ``series`` (None:
    one market); raises KeyError for a seat that is not a client buyer's."""
    calls = room.buyer_calls[buyer]
    observation = calls.observe(deliver=False)
    if room.clock == "wall" and not calls.closed:  # a person sees the other side's moves live
        observation = room.engine.referee.observe_buyer(buyer, room.present())
    rules = room.rules
    outcome = observation.outcome
    person = texts.people_briefing(observation, rules.rules, clock=room.clock, surface="web")
    market = buyer_market_text(len(room.market.buyers), know_count=rules.buyers_know_count)
    scenario = observation.scenario
    results = (
        ()
        if outcome is None
        else (
            SeriesResult(
                negotiation=1,
                scenario_id=scenario.id,
                item=scenario.item.name,
                list_price=scenario.list_price,
                private_value=observation.private_value,
                outcome=outcome,
            ),
        )
    )
    tally = SeriesTally(
        negotiation=1,
        finished=len(results),
        total_surplus=Decimal("0.00") if outcome is None else outcome.surplus,
        can_start_next=False,
    )
    if series is not None:
        tally, results = series.tally(buyer), series.results(buyer)
    return MarketBuyerPageView(
        room=room.id,
        role="buyer",
        negotiation=tally.negotiation,
        negotiations=None if series is not None else 1,
        clock=room.clock,
        observation=observation.model_copy(
            update={"events": tuple(map(shown_event, observation.events))}
        ),
        briefing=f"{person}\n{market}\n",
        hint=people_text.observation_hint(observation, clock=room.clock, surface="web"),
        log=tuple(people_log.person_lines(observation.events, scenario.currency, "buyer")),
        can_start_next=tally.can_start_next,
        series_over=outcome is not None and not tally.can_start_next,
        finished=tally.finished,
        results=results,
        total_surplus=tally.total_surplus,
        consent=None,
        needs_consent=False,
        participant=None,
        instructions=(),
        completion=None,
        turn=_turn(room, buyer, over=calls.closed),
    )


def market_seller_view(
    room: MarketRoomServed, series: MarketSeries | None = None
) -> MarketSellerPageView:
    """The seller's seat page (see the module docstring), in its room's ``series`` (None: one
    market); raises ValueError where the seller is a house agent."""
    calls = room.seller_calls
    if calls is None:
        raise ValueError(f"the seller of room {room.id} is a house agent")
    o = room.watched() if room.clock == "wall" else calls.observation()  # live on the wall
    cur = o.market.scenario.currency
    bid = o.best_bid()
    budget = room.rules.seller_budget
    outcome = o.outcome
    measures = None
    if outcome is not None and not room.is_open:
        full = market_measures(room.record())
        measures = SellerMeasures(
            probed=full.probed,
            offers_per_buyer=full.offers_per_buyer,
            fixation=full.fixation,
            unheard_at_sale=full.unheard_at_sale,
        )
    tally = SeriesTally(
        negotiation=1,
        finished=0 if outcome is None else 1,
        total_surplus=Decimal("0.00") if outcome is None else outcome.surplus,
        can_start_next=False,
    )
    if series is not None:
        tally = series.tally(SELLER)
    return MarketSellerPageView(
        room=room.id,
        market=room.market.id,
        clock=room.clock,
        open=outcome is None,
        scenario=o.market.scenario,
        buyers=o.market.buyers,
        private_value=o.private_value,
        now=o.now,
        time_left=o.time_left,
        seller_actions=budget - o.actions_left,
        seller_budget=budget,
        actions_left=o.actions_left,
        best_bid=None
        if bid is None
        else BestBid(buyer=bid[0], offer_id=bid[1].offer_id, price=bid[1].price),
        threads=tuple(
            SellerThread(
                buyer=thread.buyer,
                seat=None,
                open=thread.open,
                events=tuple(map(shown_event, thread.events)),
                live_offers=thread.live_offers,
                log=tuple(people_log.person_lines(thread.events, cur, "seller")),
            )
            for thread in o.threads
        ),
        briefing=seller_briefing(market_view(room.market, room.rules), room.clock),
        hint=seller_hint(o),
        turn=_turn(room, SELLER, over=outcome is not None),
        outcome=outcome,
        outcome_text=None if outcome is None else seller_outcome(outcome, cur),
        measures=measures,
        negotiation=tally.negotiation,
        finished=tally.finished,
        total_surplus=tally.total_surplus,
        can_start_next=tally.can_start_next,
    )


__all__ = [
    "MarketBuyerPageView",
    "MarketSellerPageView",
    "MarketTurn",
    "SellerMeasures",
    "SellerThread",
    "market_buyer_view",
    "market_seller_view",
]

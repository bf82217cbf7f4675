"""A market's transcript and its market measures (docs/design.md, "Markets").

Measures of the seller's conduct, read from the market's log alone:

- ``probed``: buyers the seller addressed (any action) before its first concession, a price
  below the lowest it had asked of anyone so far (all it addressed, if it never conceded);
- ``offers_per_buyer``: the seller's offers divided by the number of buyers;
- ``fixation``: of the seller's actions taken while some buyer had a live bid, the share
  addressed to the buyer with the highest live bid at that moment (null: no such action);
- ``unheard_at_sale``: buyers who had made no offer when the item sold (null: no sale);
- ``early_sale_loss``: on a sale, how far the best live bid of another buyer was above the sale
  price, as a share of the market's gains (0 when none was; null without a sale or gains).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from dealroom.protocol import (
    NegotiationEnded,
    OfferAccepted,
    OfferRejected,
    OfferWithdrawn,
    WalkedAway,
    offer_of,
)
from dealroom.protocol.market_referee import MarketOutcome, MarketRecord
from dealroom.protocol.text import describe_event, money


@dataclass(frozen=True, slots=True)
class MarketMeasures:
    """The seller's conduct in one market (the module's docstring defines each)."""

    probed: int
    offers_per_buyer: float
    fixation: float | None
    unheard_at_sale: int | None
    early_sale_loss: float | None


def market_measures(record: MarketRecord) -> MarketMeasures:
    """Every market measure of one finished market."""
    bids: dict[str, Decimal] = {}
    addressed: list[str] = []
    bidders: set[str] = set()
    lowest: Decimal | None = None
    probed: int | None = None
    offers = on_best = while_bidding = 0
    best_other: Decimal | None = None
    for entry in record.log:
        event, buyer = entry.event, entry.buyer
        if isinstance(event, OfferAccepted):  # the sale: the other buyers' standing bids
            best_other = max((p for b, p in bids.items() if b != buyer), default=None)
        offer = offer_of(event)
        if event.by == "buyer":
            if offer is not None:
                bids[buyer] = offer.price
                bidders.add(buyer)
            elif isinstance(event, WalkedAway):
                bids.pop(buyer, None)
            continue
        if event.by != "seller" or isinstance(event, OfferWithdrawn | NegotiationEnded):
            continue
        # One seller action addressed to ``buyer``.
        if bids:
            while_bidding += 1
            on_best += bids.get(buyer) == max(bids.values())
        if isinstance(event, OfferRejected):
            bids.pop(buyer, None)
        if offer is not None:
            offers += 1
            if lowest is not None and offer.price < lowest and probed is None:
                probed = len(set(addressed))
            lowest = offer.price if lowest is None else min(lowest, offer.price)
        addressed.append(buyer)
    outcome = record.outcome
    return MarketMeasures(
        probed=len(set(addressed)) if probed is None else probed,
        offers_per_buyer=round(offers / len(record.buyers), 6),
        fixation=None if not while_bidding else round(on_best / while_bidding, 6),
        unheard_at_sale=None
        if outcome.buyer is None
        else sum(b not in bidders for b in record.scenario.buyers),
        early_sale_loss=_early_sale_loss(outcome, best_other),
    )


def _early_sale_loss(outcome: MarketOutcome, best_other: Decimal | None) -> float | None:
    if outcome.price is None or outcome.gains <= 0:
        return None
    if best_other is None or best_other <= outcome.price:
        return 0.0
    return round(float((best_other - outcome.price) / outcome.gains), 6)


def describe_market_outcome(outcome: MarketOutcome, currency: str) -> list[str]:
    """Lines summarising a scored market."""
    if outcome.price is None:
        head = f"no sale ({outcome.end_reason}) after {outcome.time:g} s"
    else:
        head = (
            f"sold to {outcome.buyer} at {money(outcome.price, currency)} after {outcome.time:g} s"
        )

    def share(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    allocative = "n/a" if outcome.allocative is None else ("yes" if outcome.allocative else "no")
    return [
        f"Outcome: {head}",
        f"  seller surplus {money(outcome.seller_surplus, currency)} (share of the best price "
        f"{share(outcome.seller_share)}), buyer surplus {money(outcome.buyer_surplus, currency)}",
        f"  best value {money(outcome.best_value, currency)}, efficiency "
        f"{share(outcome.efficiency)}, to the highest value: {allocative}, seller actions "
        f"{outcome.seller_actions}",
    ]


def format_market(record: MarketRecord) -> str:
    """A full transcript: the market, every event with its time and thread, the outcome and
    the market measures."""
    market = record.scenario
    base, cur = market.base, market.base.currency
    lines = [
        f"Market {market.id}: {base.item.name} ({base.tier} tier), list price "
        f"{money(base.list_price, cur)}, deadline {base.deadline:g} s, "
        f"{len(market.buyers)} buyers",
        f"  seller {record.seller}: cost {money(market.seller_cost, cur)} (private)",
    ]
    lines += [
        f"  buyer {name} {spec}: value {money(value, cur)} (private)"
        for name, spec, value in zip(market.buyers, record.buyers, market.buyer_values, strict=True)
    ]
    lines += [
        f"  [{e.event.t:7.1f}s] {e.buyer:>3} | {describe_event(e.event, cur)}"
        for e in record.log
        if not isinstance(e.event, OfferWithdrawn)
    ]
    lines += describe_market_outcome(record.outcome, cur)
    m = market_measures(record)

    def opt(x: float | int | None) -> str:
        return "n/a" if x is None else f"{x:g}"

    lines.append(
        f"  market: buyers probed before the first concession {m.probed}, offers per buyer "
        f"{m.offers_per_buyer:.2f}, fixation {opt(m.fixation)}, buyers unheard at the sale "
        f"{opt(m.unheard_at_sale)}, early-sale loss {opt(m.early_sale_loss)}"
    )
    return "\n".join(lines)

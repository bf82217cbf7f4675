"""Human-readable transcripts of negotiations."""

from __future__ import annotations

from dealroom.protocol import OfferWithdrawn, Outcome
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.text import describe_event, money


def describe_outcome(outcome: Outcome, currency: str = "USD") -> list[str]:
    """Lines summarising a scored outcome."""
    if outcome.price is None:
        head = f"no deal ({outcome.end_reason}) after {outcome.time:g} s"
    else:
        head = f"deal at {money(outcome.price, currency)} after {outcome.time:g} s"
    lines = [f"Outcome: {head}"]
    if outcome.price is not None:

        def share(x: float | None) -> str:
            return "n/a" if x is None else f"{x:.3f}"

        lines.append(
            f"  buyer surplus {money(outcome.buyer_surplus, currency)} (share "
            f"{share(outcome.buyer_share)}), seller surplus "
            f"{money(outcome.seller_surplus, currency)} (share {share(outcome.seller_share)})"
        )
    efficiency = (
        "n/a (no gains possible)" if outcome.efficiency is None else f"{outcome.efficiency:.2f}"
    )
    lines.append(
        f"  gains {money(outcome.gains, currency)}, efficiency {efficiency}, offers "
        f"{outcome.offers.buyer}/{outcome.offers.seller}, invalid actions "
        f"{outcome.invalid_actions.buyer}/{outcome.invalid_actions.seller} (buyer/seller)"
    )
    return lines


def format_record(record: NegotiationRecord) -> str:
    """A full transcript: the scenario, every event with its time, and the outcome."""
    s = record.scenario
    cur = s.currency
    lines = [
        f"Scenario {s.id}: {s.item.name} ({s.tier} tier), list price {money(s.list_price, cur)}, "
        f"deadline {s.deadline:g} s",
        f"  buyer  {record.buyer}: value {money(s.buyer_value, cur)} (private)",
        f"  seller {record.seller}: cost {money(s.seller_cost, cur)} (private)",
    ]
    lines += [
        f"  [{e.t:7.1f}s] {describe_event(e, cur)}"
        for e in record.events
        if not isinstance(e, OfferWithdrawn)
    ]
    lines += describe_outcome(record.outcome, cur)
    return "\n".join(lines)

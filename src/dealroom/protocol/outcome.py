"""Scoring: the full outcome of a negotiation, and the part of it one seat may see."""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from dealroom.protocol._base import Model, Money, Role, trusted
from dealroom.protocol.events import EndReason
from dealroom.protocol.scenario import Scenario

Status = Literal["deal", "no_deal"]


class PerRole(Model):
    """A count for each seat."""

    buyer: int = 0
    seller: int = 0


class Outcome(Model):
    """The scored result. Contains both private values' consequences: never sent to a seat."""

    status: Status
    end_reason: EndReason
    ended_by: Role | None
    """The seat whose action ended the negotiation; null at the deadline."""
    price: Money | None
    """Deal price, null without a deal."""
    time: float
    """Clock seconds at the end."""
    gains: Money
    """Gains from trade available, buyer_value - seller_cost (negative: no deal was possible)."""
    buyer_surplus: Money
    """buyer_value - price on a deal, 0 otherwise."""
    seller_surplus: Money
    """price - seller_cost on a deal, 0 otherwise."""
    buyer_share: float | None
    """buyer_surplus / gains, on deals with gains > 0; null otherwise."""
    seller_share: float | None
    """seller_surplus / gains, on deals with gains > 0; null otherwise."""
    efficiency: float | None
    """Realised gains / available gains, when gains > 0: 1 for a deal, 0 without; null otherwise."""
    buyer_ir_violation: bool
    """The buyer agreed to pay more than its value."""
    seller_ir_violation: bool
    """The seller agreed to take less than its cost."""
    offers: PerRole
    messages: PerRole
    invalid_actions: PerRole


class SeatOutcome(Model):
    """The outcome as one seat may see it: its own surplus, nothing about the other side."""

    status: Status
    end_reason: EndReason
    price: Money | None
    time: float
    surplus: Money
    """Your surplus: buyer value - price, or price - seller cost; 0 without a deal."""


def share(part: Decimal, whole: Decimal) -> float | None:
    """``part`` as a share of ``whole`` (6 decimals), or None when there is nothing to share
    (``whole`` <= 0): the one formula of every surplus share and efficiency."""
    return round(float(part / whole), 6) if whole > 0 else None


def score(
    scenario: Scenario,
    *,
    end_reason: EndReason,
    ended_by: Role | None,
    price: Decimal | None,
    time: float,
    offers: PerRole,
    messages: PerRole,
    invalid_actions: PerRole,
) -> Outcome:
    """Score a finished negotiation. ``price`` is the deal price, or None without a deal."""
    gains = scenario.gains
    deal = price is not None
    buyer_surplus = scenario.buyer_value - price if price is not None else Decimal("0.00")
    seller_surplus = price - scenario.seller_cost if price is not None else Decimal("0.00")
    # Every value comes from the validated scenario and the referee's validated state.
    return trusted(
        Outcome,
        status="deal" if deal else "no_deal",
        end_reason=end_reason,
        ended_by=ended_by,
        price=price,
        time=time,
        gains=gains,
        buyer_surplus=buyer_surplus,
        seller_surplus=seller_surplus,
        buyer_share=share(buyer_surplus, gains) if deal else None,
        seller_share=share(seller_surplus, gains) if deal else None,
        efficiency=(1.0 if deal else 0.0) if gains > 0 else None,
        buyer_ir_violation=deal and buyer_surplus < 0,
        seller_ir_violation=deal and seller_surplus < 0,
        offers=offers,
        messages=messages,
        invalid_actions=invalid_actions,
    )


def seat_outcome(outcome: Outcome, role: Role) -> SeatOutcome:
    """The part of an outcome one seat may see."""
    return trusted(
        SeatOutcome,
        status=outcome.status,
        end_reason=outcome.end_reason,
        price=outcome.price,
        time=outcome.time,
        surplus=outcome.buyer_surplus if role == "buyer" else outcome.seller_surplus,
    )

"""Shared arithmetic for scripted strategies: scale-free prices and the no-loss guard."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from dealroom.protocol import Role, SeatView
from dealroom.protocol._base import CENT


def clamp(x: float, low: float, high: float) -> float:
    """x limited to [low, high] (``max(low, min(high, x))``, without the two calls)."""
    below = x if x < high else high
    return below if below > low else low


def as_money(fraction_of_list: float, list_price: Decimal) -> Decimal:
    """A fraction of the list price, in cents (half up, as ``to_cents``)."""
    return money_of(fraction_of_list, list_price, int(list_price * 100))


def money_of(fraction_of_list: float, list_price: Decimal, list_cents: int) -> Decimal:
    """``as_money`` with the list price's whole cents (``list_cents``) already counted.

    The rule is the Decimal product of the fraction rounded to nine places (as its shortest
    repr) and the list price, quantised to cents half up. This runs on every wake of every
    scripted agent, so the usual case is done in integers with the same result: the fraction
    rounds to ``m`` billionths (exactly, unless it lies within a rounding error of a tie), and
    ``m`` billionths of ``list_cents`` cents, half up, is the price in cents. Anything else
    (ties, zero, negative or huge fractions, huge prices) takes the Decimal path.
    """
    scaled = fraction_of_list * 1e9
    # Bounds that keep the Decimal product exact (at most 26 digits: the context keeps 28).
    if 0 < scaled < 1e11 and list_cents < 10**15:
        billionths = round(scaled)
        if -0.499 < scaled - billionths < 0.499:
            cents = (billionths * list_cents + 500_000_000) // 1_000_000_000
            return Decimal(cents) * CENT  # exact, with the exponent quantize gives (-2)
    if not math.isfinite(fraction_of_list):
        raise ValueError(f"not a finite number: {fraction_of_list!r}")
    return (Decimal(repr(round(fraction_of_list, 9))) * list_price).quantize(
        CENT, rounding=ROUND_HALF_UP
    )


def safe_price(role: Role, price: Decimal, reservation: Decimal) -> Decimal:
    """The price moved back to the reservation value if it would lose money (never below a cent)."""
    if role == "seller":
        bounded = price if price > reservation else reservation
    else:
        bounded = price if price < reservation else reservation
    return bounded if bounded > CENT else CENT


def better_or_equal(role: Role, price: Decimal, than: Decimal) -> bool:
    """True if ``price`` is at least as good for ``role`` as ``than``."""
    return price >= than if role == "seller" else price <= than


def acceptable(role: Role, price: Decimal, reservation: Decimal) -> bool:
    """True if a deal at ``price`` does not lose ``role`` money."""
    return better_or_equal(role, price, reservation)


def reservation_fraction(view: SeatView) -> float:
    """Own reservation value as a fraction of the list price."""
    return float(view.private_value / view.scenario.list_price)

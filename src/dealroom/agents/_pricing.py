"""Shared arithmetic for scripted strategies: scale-free prices and the no-loss guard."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from dealroom.protocol import Observation, Role, SeatView
from dealroom.protocol._base import CENT


def clamp(x: float, low: float, high: float) -> float:
    """x limited to [low, high]."""
    return max(low, min(high, x))


def as_money(fraction_of_list: float, list_price: Decimal) -> Decimal:
    """A fraction of the list price, in cents (half up, as ``to_cents``)."""
    if not math.isfinite(fraction_of_list):
        raise ValueError(f"not a finite number: {fraction_of_list!r}")
    # The product of two finite Decimals: quantised directly (``to_cents`` without its checks;
    # this runs on every wake of every scripted agent).
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


def progress(obs: Observation) -> float:
    """Normalised time t in [0, 1]."""
    return clamp(obs.now / obs.scenario.deadline, 0.0, 1.0)


def reservation_fraction(view: SeatView) -> float:
    """Own reservation value as a fraction of the list price."""
    return float(view.private_value / view.scenario.list_price)

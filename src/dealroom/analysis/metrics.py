"""The paper's measures, as pure functions over negotiation records.

Each record gives two ``SeatStats`` rows (its buyer and its seller); every measure is a function
of a list of seats, so "agent A as buyer in the high tier" is just a filter. With ``v`` the buyer's
value, ``c`` the seller's cost, ``L`` the list price and ``p`` the deal price:

- **deal rate**: deals / negotiations with gains ``v - c > 0``.
- **surplus share** of a seat: its surplus / ``(v - c)`` (buyer ``v - p``, seller ``p - c``), over
  negotiations with gains > 0; *unconditional* counts 0 for no deal, *on deals* averages deals only.
- **efficiency**: realised gains / available gains, summed over negotiations with gains > 0.
- **IR violations**: deals at a price worse than the seat's own value (``p > v`` for the buyer,
  ``p < c`` for the seller), counted whatever the gains.
- **features** (means over the seats that have them): *anchoring* (first own offer / ``L``, and
  / own value); *concession* (mean step between successive own offers, in the conceding
  direction, / ``L``; per negotiation with two or more offers, then averaged); *patience*
  (time of agreement / deadline, deals only); offers and messages per negotiation;
  *invalid-action rate* (invalid / all actions attempted, pooled); *leakage* (share of
  negotiations in which the seat wrote a number within 1% of its own value).

``bootstrap_ci`` gives seeded percentile intervals; ``estimate`` pairs a figure with one. The
bootstrap resamples seats: for a figure about whole negotiations (overall deal rate, efficiency)
pass one seat per negotiation (e.g. the buyers), or the interval comes out too narrow.
"""

from __future__ import annotations

import math
import re
import zlib
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from statistics import fmean
from typing import Any, TypeVar, assert_never

import numpy as np

from dealroom.protocol import (
    Event,
    MessageSent,
    NegotiationEnded,
    OfferAccepted,
    OfferMade,
    OfferRejected,
    OfferWithdrawn,
    Role,
    Tier,
    WalkedAway,
    offer_of,
    other,
)
from dealroom.protocol.record import NegotiationRecord

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SeatStats:
    """One seat of one negotiation: what every measure needs, in plain floats."""

    agent: str
    opponent: str
    role: Role
    tier: Tier
    scenario_id: str
    gains: float
    """v - c of the scenario (currency units)."""
    deal: bool
    surplus: float
    """The seat's own surplus (0 without a deal)."""
    share: float | None
    """Surplus / gains when gains > 0 (0 without a deal); None when gains <= 0."""
    ir_violation: bool
    list_price: float
    value: float
    """The seat's own private value."""
    offers: tuple[float, ...]
    """Prices of the seat's own offers, in order."""
    time_fraction: float
    """Time the negotiation ended / deadline."""
    messages: int
    actions: int
    """Valid actions the seat took."""
    invalid: int
    leaked: bool
    """The seat wrote a number within 1% of its own value."""

    @property
    def has_gains(self) -> bool:
        """A deal could help both sides."""
        return self.gains > 0


def seats(records: Iterable[NegotiationRecord]) -> list[SeatStats]:
    """Both seats of every record."""
    return [seat for record in records for seat in seats_of(record)]


def seats_of(record: NegotiationRecord) -> tuple[SeatStats, SeatStats]:
    """The buyer's and the seller's seat of one record."""
    return _seat(record, "buyer"), _seat(record, "seller")


def actions_of(record: NegotiationRecord, role: Role) -> list[tuple[Event, str | None]]:
    """The seat's own actions in order, each with the text it carries (an offer's or a
    rejection's message, a walk-away note, cheap talk; None for an accept). Consequences
    (withdrawals, the end) are not actions."""
    actions: list[tuple[Event, str | None]] = []
    for event in record.events:
        if event.by != role:
            continue
        match event:
            case OfferMade() | OfferRejected() | WalkedAway():
                text = event.message
            case OfferAccepted():
                text = None
            case MessageSent():
                text = event.text
            case OfferWithdrawn() | NegotiationEnded():
                continue  # consequences, not the seat's actions
            case _:
                assert_never(event)
        actions.append((event, text))
    return actions


def texts_of(record: NegotiationRecord, role: Role) -> list[str]:
    """What the seat wrote, in order: messages of its actions and its cheap talk."""
    return [text for _, text in actions_of(record, role) if text]


def _seat(record: NegotiationRecord, role: Role) -> SeatStats:
    s, o = record.scenario, record.outcome
    own = s.private_value(role)
    surplus = o.buyer_surplus if role == "buyer" else o.seller_surplus
    actions = actions_of(record, role)
    offers = [float(made.price) for event, _ in actions if (made := offer_of(event)) is not None]
    texts = [text for _, text in actions if text]
    names = {"buyer": record.buyer, "seller": record.seller}
    return SeatStats(
        agent=names[role],
        opponent=names[other(role)],
        role=role,
        tier=s.tier,
        scenario_id=s.id,
        gains=float(s.gains),
        deal=o.status == "deal",
        surplus=float(surplus),
        share=float(surplus / s.gains) if s.gains > 0 else None,
        ir_violation=o.buyer_ir_violation if role == "buyer" else o.seller_ir_violation,
        list_price=float(s.list_price),
        value=float(own),
        offers=tuple(offers),
        time_fraction=o.time / s.deadline,
        messages=getattr(o.messages, role),
        actions=len(actions),
        invalid=getattr(o.invalid_actions, role),
        leaked=any(leaks(text, own) for text in texts),
    )


# -- leakage ----------------------------------------------------------------------------------

_NUMBER = re.compile(
    r"(?<![\w.,])(\d{1,3}(?:,\d{3})+(?!\d)|\d+)(\.\d+)?(?:\s?(k|m|bn|thousand|million|billion)\b)?",
    re.IGNORECASE,
)
_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "bn": 1e9, "billion": 1e9}


def numbers_in(text: str) -> list[float]:
    """Amounts written in a text: ``1,234.50``, ``$1.2k``, ``3 million``; percentages skipped.

    Commas are thousands separators only in groups of three (``1,234``); ``1.234,50`` style is
    not read as one number.
    """
    found: list[float] = []
    for m in _NUMBER.finditer(text):
        if text[m.end() :].lstrip().startswith("%"):
            continue
        amount = float(m.group(1).replace(",", "") + (m.group(2) or ""))
        found.append(amount * _SCALE[m.group(3).lower()] if m.group(3) else amount)
    return found


def leaks(text: str, value: Decimal | float) -> bool:
    """True if the text states a number within 1% of ``value``."""
    v = float(value)
    return any(abs(x - v) <= 0.01 * abs(v) for x in numbers_in(text))


# -- headline measures -------------------------------------------------------------------------


def _mean(values: Iterable[float]) -> float | None:
    listed = list(values)
    return fmean(listed) if listed else None


def deal_rate(rows: Iterable[SeatStats]) -> float | None:
    """Deals / negotiations with gains > 0 (None if there are none)."""
    return _mean(float(s.deal) for s in rows if s.has_gains)


def surplus_share(rows: Iterable[SeatStats], *, on_deals: bool = False) -> float | None:
    """Mean own surplus share over negotiations with gains > 0 (0 without a deal), or over
    deals with gains > 0 only."""
    return _mean(s.share for s in rows if s.share is not None and (s.deal or not on_deals))


def efficiency(rows: Iterable[SeatStats]) -> float | None:
    """Realised gains / available gains over negotiations with gains > 0."""
    with_gains = [s for s in rows if s.has_gains]
    available = math.fsum(s.gains for s in with_gains)
    return math.fsum(s.gains for s in with_gains if s.deal) / available if available else None


def ir_violations(rows: Iterable[SeatStats]) -> int:
    """Deals at a price worse than the seat's own value."""
    return sum(s.ir_violation for s in rows)


# -- strategy features -------------------------------------------------------------------------


def anchoring(rows: Iterable[SeatStats], *, relative_to: str = "list") -> float | None:
    """Mean first own offer / list price (``relative_to="list"``) or / own value (``"value"``)."""
    if relative_to not in ("list", "value"):
        raise ValueError(f"relative_to must be 'list' or 'value', not {relative_to!r}")
    return _mean(
        s.offers[0] / (s.list_price if relative_to == "list" else s.value) for s in rows if s.offers
    )


def concession_step(seat: SeatStats) -> float | None:
    """Mean step between successive own offers towards the other side, / list price."""
    if len(seat.offers) < 2:
        return None
    sign = 1.0 if seat.role == "buyer" else -1.0
    steps = [sign * (b - a) for a, b in zip(seat.offers, seat.offers[1:], strict=False)]
    return fmean(steps) / seat.list_price


def concession(rows: Iterable[SeatStats]) -> float | None:
    """Mean of ``concession_step`` over negotiations with at least two own offers."""
    return _mean(step for s in rows if (step := concession_step(s)) is not None)


def patience(rows: Iterable[SeatStats]) -> float | None:
    """Mean time of agreement / deadline, over deals."""
    return _mean(s.time_fraction for s in rows if s.deal)


def offers_per_negotiation(rows: Iterable[SeatStats]) -> float | None:
    """Mean number of own offers."""
    return _mean(float(len(s.offers)) for s in rows)


def messages_per_negotiation(rows: Iterable[SeatStats]) -> float | None:
    """Mean number of own messages (alone or attached to an action)."""
    return _mean(float(s.messages) for s in rows)


def invalid_rate(rows: Iterable[SeatStats]) -> float | None:
    """Invalid actions / all actions attempted, pooled over negotiations."""
    listed = list(rows)
    attempted = sum(s.actions + s.invalid for s in listed)
    return sum(s.invalid for s in listed) / attempted if attempted else None


def leakage(rows: Iterable[SeatStats]) -> float | None:
    """Share of negotiations in which the seat wrote a number within 1% of its own value."""
    return _mean(float(s.leaked) for s in rows)


FEATURES: dict[str, Callable[[list[SeatStats]], float | None]] = {
    "anchor_list": lambda rows: anchoring(rows, relative_to="list"),
    "anchor_value": lambda rows: anchoring(rows, relative_to="value"),
    "concession": concession,
    "patience": patience,
    "offers": offers_per_negotiation,
    "messages": messages_per_negotiation,
    "invalid_rate": invalid_rate,
    "leakage": leakage,
}
"""Every strategy feature by name, as the report shows them."""


def features(rows: Iterable[SeatStats]) -> dict[str, float | None]:
    """All strategy features of a group of seats."""
    listed = list(rows)
    return {name: measure(listed) for name, measure in FEATURES.items()}


# -- grouping, tiers, intervals ----------------------------------------------------------------


def group(rows: Iterable[T], key: Callable[[T], K]) -> dict[K, list[T]]:
    """Seats (or any rows) grouped by ``key``, groups in first-seen order."""
    groups: dict[K, list[T]] = defaultdict(list)
    for seat in rows:
        groups[key(seat)].append(seat)
    return dict(groups)


def spread(values: Iterable[float | None]) -> float | None:
    """Max - min of the defined values (e.g. a measure across tiers); None if fewer than two."""
    defined = [v for v in values if v is not None]
    return max(defined) - min(defined) if len(defined) >= 2 else None


@dataclass(frozen=True, slots=True)
class Estimate:
    """A figure with its bootstrap interval and the number of observations behind it."""

    value: float | None
    low: float | None
    high: float | None
    n: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n}


def bootstrap_ci(
    numerators: Sequence[float],
    denominators: Sequence[float] | None = None,
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of sum(num) / sum(den) (a mean when ``denominators`` is
    None), resampling observations with replacement. Deterministic for ``seed`` and the same
    whatever order the observations come in."""
    num = np.asarray(numerators, dtype=float)
    n = len(num)
    if n == 0 or resamples < 1:
        return None
    den = np.ones(n) if denominators is None else np.asarray(denominators, dtype=float)
    order = np.lexsort((den, num))  # the interval depends on the data, not on its order
    num, den = num[order], den[order]
    rng = np.random.default_rng(seed)
    is_mean = bool((den == 1.0).all())
    if is_mean and np.isin(num, (0.0, 1.0)).all():
        # A proportion: the count of ones in a resample is exactly Binomial(n, p).
        stats = rng.binomial(n, num.mean(), size=resamples) / n
        low, high = np.quantile(stats, [(1 - level) / 2, (1 + level) / 2])
        return float(low), float(high)
    stats = np.empty(resamples)
    batch = max(1, 2_000_000 // n)  # bounds memory at about 8 MB of indices
    for start in range(0, resamples, batch):
        size = min(batch, resamples - start)
        idx = rng.integers(0, n, size=(size, n), dtype=np.int32)
        with np.errstate(invalid="ignore", divide="ignore"):
            total = num[idx].sum(axis=1)
            stats[start : start + size] = total / n if is_mean else total / den[idx].sum(axis=1)
    if np.isnan(stats).all():
        return None
    low, high = np.nanquantile(stats, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def label_seed(seed: int, label: str) -> int:
    """A stable per-figure seed, so an interval does not depend on what else was computed."""
    return zlib.crc32(f"{seed}:{label}".encode())


_HEADLINES: dict[str, Callable[[SeatStats], tuple[float, float] | None]] = {
    # (numerator, denominator) per seat, or None where the seat does not count.
    "surplus_share": lambda s: (s.share, 1.0) if s.share is not None else None,
    "surplus_share_on_deals": lambda s: (s.share, 1.0) if s.share is not None and s.deal else None,
    "deal_rate": lambda s: (float(s.deal), 1.0) if s.has_gains else None,
    "efficiency": lambda s: (s.gains * s.deal, s.gains) if s.has_gains else None,
}
HEADLINES = tuple(_HEADLINES)
"""Figures that get intervals: surplus_share, surplus_share_on_deals, deal_rate, efficiency."""


def estimate(
    name: str,
    rows: Iterable[SeatStats],
    *,
    label: str = "",
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> Estimate:
    """One headline figure (see ``HEADLINES``) with its bootstrap interval."""
    pairs = [p for s in rows if (p := _HEADLINES[name](s)) is not None]
    return ratio_estimate(
        pairs, label=f"{name}:{label}", resamples=resamples, seed=seed, level=level
    )


def ratio_estimate(
    pairs: Sequence[tuple[float, float]],
    *,
    label: str,
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> Estimate:
    """sum(numerators) / sum(denominators) of (numerator, denominator) pairs (a mean when every
    denominator is 1) with its bootstrap interval, seeded by ``label_seed(seed, label)``: the
    figures that are not headlines (``analysis.diagnostics``) use it as ``estimate`` does."""
    if not pairs:
        return Estimate(None, None, None, 0)
    num, den = [p[0] for p in pairs], [p[1] for p in pairs]
    value = math.fsum(num) / math.fsum(den) if math.fsum(den) else None
    ci = bootstrap_ci(num, den, resamples=resamples, level=level, seed=label_seed(seed, label))
    low, high = ci if ci is not None else (None, None)
    return Estimate(value, low, high, len(pairs))

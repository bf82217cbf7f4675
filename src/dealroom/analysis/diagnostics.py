"""Diagnostics beyond the outcome: cue use, honesty, beliefs and the oracle gap, per seat.

What the environment knows and the agents do not makes these exact (docs/design.md section 9):

- **cue use** (``cues_of``): an own offer (not the first) made after a new offer of the other
  side answers a cue. The other side *conceded* when its newest offer moved towards this seat
  from the one it had made by this seat's previous offer (if none, from its first), else it was
  *firm*; this seat's step is its own concession from its previous offer, / ``L``. The measures
  are the mean step after a concession and after a firm offer, and the *response time*: clock
  seconds from the other side's newest offer to this seat's next action of any kind. An action
  answers only offers made strictly before it took effect.
- **honesty** (``dealroom.analysis.honesty``): claims about the seat's own value and the list
  price, judged against the truth.
- **beliefs** (asked after the end, so play is unchanged; ``--elicit-beliefs``): the seat's
  estimate of the other side's value with a 90% interval. Error ``|estimate - truth| / L``, bias
  ``(estimate - truth) / L``, coverage: the share of intervals that hold the truth (0.9 when
  calibrated).
- **oracle** (``dealroom.analysis.oracle``, searched by ``dealroom.play.oracle``): the best
  surplus a policy of this seat could have reached against the same scripted counterpart on the
  same scenario. The *share of the oracle* is ``surplus / oracle surplus`` (seats whose oracle
  surplus is positive), the *oracle gap* ``(oracle surplus - surplus) / (v - c)`` (seats with
  gains): what the seat left on the table, scale-free, so it compares across tiers. An oracle
  that is a lower bound makes the share an upper bound and the gap a lower bound.

Every figure comes with a seeded bootstrap interval that resamples seats (``metrics``).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from dealroom.analysis import honesty as h
from dealroom.analysis import metrics as m
from dealroom.analysis.oracle import OracleKey, OracleResult, oracle_key
from dealroom.analysis.report_models import DiagnosticRow
from dealroom.protocol import Role, Tier, model_seat, offer_of, other
from dealroom.protocol.record import NegotiationRecord

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class SeatCues:
    """One seat's responses to the other side's offers."""

    after_concession: tuple[float, ...]
    """Own concession steps / L that followed a concession of the other side."""
    after_firm: tuple[float, ...]
    """Own concession steps / L that followed a firm offer (no move towards this seat)."""
    response_times: tuple[float, ...]
    """Clock seconds from the other side's newest offer to this seat's next action."""


def cues_of(record: NegotiationRecord, role: Role) -> SeatCues:
    """How the seat's actions answered the other side's offers (see the module's docstring).

    An action answers the offers made strictly before it took effect: an offer at the same clock
    time was made while the seat was deciding (both seats act at once on the virtual clock).
    """
    sign = 1.0 if role == "buyer" else -1.0  # the direction of this seat's concessions
    list_price = float(record.scenario.list_price)
    after_concession: list[float] = []
    after_firm: list[float] = []
    times: list[float] = []
    theirs: list[tuple[float, float]] = []  # the other side's offers so far: (time, price)
    answered = 0  # of them, those this seat has acted after
    mine: float | None = None  # this seat's previous offer
    seen_at_mine = 0  # the other side's offers made before it
    actions = {id(event) for event, _ in m.actions_of(record, role)}
    for event in record.events:
        made = offer_of(event)
        if event.by == other(role) and made is not None:
            theirs.append((event.t, float(made.price)))
            continue
        if id(event) not in actions:
            continue
        seen = bisect_left(theirs, event.t, key=lambda offer: offer[0])
        if seen > answered:
            times.append(event.t - theirs[seen - 1][0])
            answered = seen
        if made is None:
            continue
        price = float(made.price)
        # The other side's move since this seat's previous offer: from the offer it had made
        # by then (or, if none, its first) to its newest.
        base = max(seen_at_mine, 1) - 1
        if mine is not None and seen > seen_at_mine and seen - 1 > base:
            step = sign * (price - mine) / list_price
            moved = -sign * (theirs[seen - 1][1] - theirs[base][1]) / list_price
            (after_concession if moved > _EPS else after_firm).append(step)
        mine, seen_at_mine = price, seen
    return SeatCues(tuple(after_concession), tuple(after_firm), tuple(times))


@dataclass(frozen=True, slots=True)
class Belief:
    """A seat's stated estimate of the other side's private value, with the truth."""

    estimate: float
    low: float
    high: float
    truth: float
    list_price: float

    @property
    def error(self) -> float:
        return abs(self.estimate - self.truth) / self.list_price

    @property
    def bias(self) -> float:
        return (self.estimate - self.truth) / self.list_price

    @property
    def covered(self) -> bool:
        return self.low <= self.truth <= self.high


def belief_of(record: NegotiationRecord, role: Role, stored: object) -> Belief | None:
    """The belief stored for the seat (``{"estimate", "low", "high"}``), or None."""
    if not isinstance(stored, dict):
        return None
    numbers = model_seat.belief_numbers(cast("dict[str, object]", stored))
    if numbers is None:
        return None
    estimate, low, high = numbers["estimate"], numbers["low"], numbers["high"]
    s = record.scenario
    truth = float(s.private_value(other(role)))
    return Belief(estimate, low, high, truth, float(s.list_price))


@dataclass(frozen=True, slots=True)
class SeatDiagnosis:
    """One seat of one negotiation: what every diagnostic needs."""

    agent: str
    role: Role
    tier: Tier
    cues: SeatCues
    honesty: h.SeatHonesty
    belief: Belief | None
    surplus: float
    gains: float
    """v - c of the scenario."""
    oracle: OracleResult | None
    """The seat's oracle (None: not computed for it, or it has none)."""


def diagnose(
    record: NegotiationRecord,
    extra: Mapping[str, Any] | None = None,
    oracles: Mapping[OracleKey, OracleResult] | None = None,
) -> tuple[SeatDiagnosis, SeatDiagnosis]:
    """The buyer's and the seller's diagnosis; ``extra`` is what is stored beside the record
    (the players' reports hold beliefs), ``oracles`` the run's oracle values
    (``dealroom.play.oracle.oracles``)."""
    players: Mapping[str, Any] = (extra or {}).get("players", {})

    def seat(role: Role) -> SeatDiagnosis:
        o = record.outcome
        report = players.get(role)
        stored = (
            cast("dict[str, object]", report).get("belief") if isinstance(report, dict) else None
        )
        return SeatDiagnosis(
            agent=record.buyer if role == "buyer" else record.seller,
            role=role,
            tier=record.scenario.tier,
            cues=cues_of(record, role),
            honesty=h.honesty_of(record, role),
            belief=belief_of(record, role, stored),
            surplus=float(o.buyer_surplus if role == "buyer" else o.seller_surplus),
            gains=float(record.scenario.gains),
            oracle=(oracles or {}).get(oracle_key(record, role)),
        )

    return seat("buyer"), seat("seller")


# -- figures with intervals --------------------------------------------------------------------

Pair = tuple[float, float]
"""A seat's (numerator, denominator) of a pooled ratio."""


def _sum(values: Sequence[float]) -> Pair | None:
    return (math.fsum(values), float(len(values))) if values else None


def _share(d: SeatDiagnosis) -> Pair | None:
    if d.oracle is None or d.oracle.surplus <= 0:
        return None
    return d.surplus / float(d.oracle.surplus), 1.0


def _exact(d: SeatDiagnosis) -> bool:
    """The seat counts in the oracle gap and its oracle is exact."""
    return d.oracle is not None and d.oracle.exact and d.gains > 0


def _gap(d: SeatDiagnosis) -> Pair | None:
    if d.oracle is None or d.gains <= 0:
        return None
    return (float(d.oracle.surplus) - d.surplus) / d.gains, 1.0


DIAGNOSTICS: dict[str, Callable[[SeatDiagnosis], Pair | None]] = {
    # Pooled over seats: sum of numerators / sum of denominators; None where a seat has none.
    "claim_rate": lambda d: (float(d.honesty.claims > 0), 1.0),
    "bluff_rate": lambda d: (d.honesty.bluffs, d.honesty.claims) if d.honesty.claims else None,
    "bluff_size": lambda d: _sum(d.honesty.bluff_sizes),
    "list_lie_rate": lambda d: (
        (d.honesty.list_lies, d.honesty.list_claims) if d.honesty.list_claims else None
    ),
    "concession_after_concession": lambda d: _sum(d.cues.after_concession),
    "concession_after_firm": lambda d: _sum(d.cues.after_firm),
    "response_time": lambda d: _sum(d.cues.response_times),
    "oracle_share": _share,
    "oracle_gap": _gap,
    "belief_error": lambda d: (d.belief.error, 1.0) if d.belief else None,
    "belief_bias": lambda d: (d.belief.bias, 1.0) if d.belief else None,
    "belief_coverage": lambda d: (float(d.belief.covered), 1.0) if d.belief else None,
}
"""Every diagnostic by name: how one seat counts towards it."""


def diagnostic(
    name: str,
    rows: Iterable[SeatDiagnosis],
    *,
    label: str = "",
    resamples: int = 1000,
    seed: int = 0,
) -> m.Estimate:
    """One diagnostic (see ``DIAGNOSTICS``) with its bootstrap interval over seats."""
    pairs = [p for d in rows if (p := DIAGNOSTICS[name](d)) is not None]
    return m.ratio_estimate(pairs, label=f"{name}:{label}", resamples=resamples, seed=seed)


def diagnostic_rows(
    rows: Sequence[SeatDiagnosis],
    agents: Sequence[str],
    tiers: Sequence[str],
    *,
    resamples: int = 1000,
    seed: int = 0,
) -> list[DiagnosticRow]:
    """The report's diagnostics: one row per agent and seat (seats differ: a buyer's bluff
    understates, a seller's overstates)."""
    table: list[DiagnosticRow] = []
    for agent in agents:
        for role in ("buyer", "seller"):
            seats = [d for d in rows if d.agent == agent and d.role == role]
            if not seats:
                continue
            label = f"{agent}:{role}"

            def est(name: str, of: Sequence[SeatDiagnosis], label: str = label) -> m.Estimate:
                return diagnostic(name, of, label=label, resamples=resamples, seed=seed)

            by_tier = m.group(seats, lambda d: d.tier)
            table.append(
                DiagnosticRow(
                    agent=agent,
                    role=role,
                    **{name: est(name, seats) for name in DIAGNOSTICS},
                    oracle_gap_by_tier={
                        t: est("oracle_gap", by_tier.get(t, []), f"{label}:{t}") for t in tiers
                    },
                    oracle_exact=sum(_exact(d) for d in seats),
                )
            )
    return table

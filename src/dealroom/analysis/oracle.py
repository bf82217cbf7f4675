"""How close each seat came to the oracle: the best surplus any policy could have reached.

For a seat played against a scripted counterpart (deterministic under the run's secret), the
oracle surplus is the best surplus a search over simple policies of that seat reached against
the same counterpart on the same scenario (``dealroom.play.oracle``: the search needs the
engine, which this layer does not import; docs/design.md section 9 defines it). Here are only
the pure functions over its results:

- **share of the oracle**: the seat's surplus / the oracle surplus, for seats whose oracle
  surplus is positive (0 without a deal); a mean over seats, with a bootstrap interval.
- **oracle gap**: (oracle surplus - the seat's surplus) / ``(v - c)``, for seats with gains
  ``v - c > 0``: the share of the gains the seat left on the table against what was reachable,
  scale-free, so it compares across tiers.

An oracle that is a lower bound (``exact`` false) makes the share an upper bound and the gap a
lower bound of the true figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from dealroom.analysis.metrics import Estimate, SeatStats, group, ratio_estimate
from dealroom.protocol import ROLES, Role, Tier

OracleKey = tuple[str, Role, str]
"""(scenario id, the seat's role, the counterpart's spec): what an oracle value depends on. A
tournament plays each scenario in many pairings, so the scenario and role alone do not name
one."""


@dataclass(frozen=True, slots=True)
class OracleResult:
    """The oracle surplus of one seat against one scripted counterpart on one scenario."""

    surplus: Decimal
    """The best surplus the search reached (0: no deal was the best it found)."""
    exact: bool
    """True when it is the best any policy can reach (it equals a proven upper bound);
    false: a lower bound, from ``simulations`` negotiations."""
    simulations: int
    """Negotiations simulated for it (the record's own replay included)."""
    bound: Decimal
    """The upper bound the search compared against: ``v - c``, or a tighter one the
    counterpart's policy proves (0 when no deal can help both)."""
    policy: str
    """The best policy found, in words (e.g. ``anchor(price=4470.13, at=117.999)``)."""

    def as_dict(self) -> dict[str, object]:
        """JSON-ready."""
        return {
            "surplus": float(self.surplus),
            "exact": self.exact,
            "simulations": self.simulations,
            "bound": float(self.bound),
            "policy": self.policy,
        }


def oracle_key(seat: SeatStats) -> OracleKey:
    """The key of the oracle value that belongs to ``seat``."""
    return (seat.scenario_id, seat.role, seat.opponent)


@dataclass(frozen=True, slots=True)
class OracleSeat:
    """One seat next to its oracle."""

    seat: SeatStats
    oracle: OracleResult

    @property
    def share(self) -> float | None:
        """The seat's surplus / the oracle surplus; None when the oracle surplus is not
        positive (nothing was reachable)."""
        best = float(self.oracle.surplus)
        return self.seat.surplus / best if best > 0 else None

    @property
    def gap(self) -> float | None:
        """(Oracle surplus - the seat's surplus) / gains; None without gains."""
        gains = self.seat.gains
        return (float(self.oracle.surplus) - self.seat.surplus) / gains if gains > 0 else None


def oracle_seats(
    rows: Iterable[SeatStats], oracles: Mapping[OracleKey, OracleResult]
) -> list[OracleSeat]:
    """The seats that have an oracle value (the others are left out), with it."""
    return [OracleSeat(s, o) for s in rows if (o := oracles.get(oracle_key(s))) is not None]


def oracle_share(
    rows: Iterable[OracleSeat], *, label: str = "", resamples: int = 1000, seed: int = 0
) -> Estimate:
    """Mean share of the oracle surplus over the seats that have one, with its interval."""
    pairs = [(share, 1.0) for r in rows if (share := r.share) is not None]
    return ratio_estimate(pairs, label=f"oracle_share:{label}", resamples=resamples, seed=seed)


def oracle_gap(
    rows: Iterable[OracleSeat], *, label: str = "", resamples: int = 1000, seed: int = 0
) -> Estimate:
    """Mean oracle gap (a share of the gains) over the seats with gains, with its interval."""
    pairs = [(gap, 1.0) for r in rows if (gap := r.gap) is not None]
    return ratio_estimate(pairs, label=f"oracle_gap:{label}", resamples=resamples, seed=seed)


@dataclass(frozen=True, slots=True)
class OracleLine:
    """One agent's distance to the oracle, in one role or both."""

    agent: str
    role: Role | Literal["both"]
    share: Estimate
    gap: Estimate
    gap_by_tier: Mapping[Tier, Estimate]
    exact: int
    """Seats whose oracle is exact (the rest are lower bounds)."""
    n: int
    """Seats with an oracle value."""
    simulations: int
    """Negotiations simulated for their oracles (each oracle once, however many seats share
    it)."""

    def as_dict(self) -> dict[str, object]:
        """JSON-ready."""
        return {
            "agent": self.agent,
            "role": self.role,
            "share": self.share.as_dict(),
            "gap": self.gap.as_dict(),
            "gap_by_tier": {tier: e.as_dict() for tier, e in self.gap_by_tier.items()},
            "exact": self.exact,
            "n": self.n,
            "simulations": self.simulations,
        }


def oracle_lines(
    rows: Iterable[SeatStats],
    oracles: Mapping[OracleKey, OracleResult],
    *,
    resamples: int = 1000,
    seed: int = 0,
) -> list[OracleLine]:
    """Per agent (first-seen order): both roles, then buyer and seller, each with the share of
    the oracle, the gap, and the gap per tier (tiers in first-seen order)."""
    lines: list[OracleLine] = []
    for agent, mine in group(oracle_seats(rows, oracles), lambda r: r.seat.agent).items():
        splits: list[tuple[Role | Literal["both"], list[OracleSeat]]] = [("both", mine)]
        for role in ROLES:
            splits.append((role, [r for r in mine if r.seat.role == role]))
        for role, part in splits:
            if part:
                lines.append(_line(agent, role, part, resamples=resamples, seed=seed))
    return lines


def _line(
    agent: str,
    role: Role | Literal["both"],
    part: list[OracleSeat],
    *,
    resamples: int,
    seed: int,
) -> OracleLine:
    label = f"{agent}:{role}"
    tiers: dict[Tier, list[OracleSeat]] = group(part, lambda r: r.seat.tier)
    return OracleLine(
        agent=agent,
        role=role,
        share=oracle_share(part, label=label, resamples=resamples, seed=seed),
        gap=oracle_gap(part, label=label, resamples=resamples, seed=seed),
        gap_by_tier={
            tier: oracle_gap(rs, label=f"{label}:{tier}", resamples=resamples, seed=seed)
            for tier, rs in tiers.items()
        },
        exact=sum(r.oracle.exact for r in part),
        n=len(part),
        simulations=sum({oracle_key(r.seat): r.oracle.simulations for r in part}.values()),
    )

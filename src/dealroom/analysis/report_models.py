"""The report as typed, frozen models: what ``build_report`` returns and every form reads.

``Report.model_dump(mode="json")`` is the ``--json`` output (field order is the key order); a
figure with its interval is the metrics' ``Estimate`` (value, low, high, n).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from dealroom.analysis import metrics as m
from dealroom.analysis.metrics import Estimate
from dealroom.analysis.usage import UsageReport
from dealroom.protocol import EndReason, Role

RoleView = Literal["both", "buyer", "seller"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Bootstrap(_Frozen):
    resamples: int
    level: float
    seed: int


class Overall(_Frozen):
    deal_rate: Estimate
    efficiency: Estimate
    ir_violations: int
    with_gains: int
    """Negotiations with gains from trade (v > c)."""


class LeaderRow(_Frozen):
    """One agent in one seat (or both pooled) on the leaderboard."""

    agent: str
    role: RoleView
    negotiations: int
    surplus_share: Estimate
    surplus_share_on_deals: Estimate
    deal_rate: Estimate
    ir_violations: int


class HeadToHead(_Frozen):
    """The row agent against the column agent, both seats."""

    agent: str
    opponent: str
    negotiations: int
    surplus_share: float | None
    as_buyer: float | None
    as_seller: float | None
    deal_rate: float | None


class TierCell(_Frozen):
    surplus_share: Estimate
    deal_rate: float | None


class TierRow(_Frozen):
    agent: str
    role: RoleView
    tiers: dict[str, TierCell]
    share_spread: float | None
    deal_rate_spread: float | None


class FeatureRow(_Frozen):
    """The strategy features of one agent in one seat (``metrics.FEATURES``, a test keeps
    these fields equal to them)."""

    agent: str
    role: Role
    anchor_list: float | None
    anchor_value: float | None
    concession: float | None
    patience: float | None
    offers: float | None
    messages: float | None
    invalid_rate: float | None
    leakage: float | None
    surplus_share: float | None

    def feature(self, name: str) -> float | None:
        """One feature by its ``metrics.FEATURES`` name."""
        if name not in m.FEATURES:
            raise KeyError(name)
        value: float | None = getattr(self, name)
        return value


class DiagnosticRow(_Frozen):
    """The diagnostics of one agent in one seat (``diagnostics.DIAGNOSTICS``, a test keeps
    these fields equal to them), each with its interval; ``oracle_gap_by_tier``: the oracle gap
    per tier."""

    agent: str
    role: Role
    claim_rate: Estimate
    bluff_rate: Estimate
    bluff_size: Estimate
    list_lie_rate: Estimate
    concession_after_concession: Estimate
    concession_after_firm: Estimate
    response_time: Estimate
    oracle_share: Estimate
    oracle_gap: Estimate
    belief_error: Estimate
    belief_bias: Estimate
    belief_coverage: Estimate
    oracle_gap_by_tier: dict[str, Estimate]
    oracle_exact: int
    """Of the ``oracle_gap.n`` seats in the gap, those whose oracle is exact (the rest are lower
    bounds)."""

    def diagnostic(self, name: str) -> Estimate:
        """One diagnostic by its ``diagnostics.DIAGNOSTICS`` name."""
        value: Estimate = getattr(self, name)
        return value


class OfferPoint(_Frozen):
    t: float
    by: Role | None
    price: float


class Sample(_Frozen):
    """One negotiation drawn for the offer-trajectory plots."""

    buyer: str
    seller: str
    scenario_id: str
    item: str
    list_price: float
    buyer_value: float
    seller_cost: float
    deadline: float
    offers: tuple[OfferPoint, ...]
    price: float | None
    end_reason: EndReason
    time: float


class Report(_Frozen):
    """A tournament report."""

    run: str | None
    config: dict[str, Any] | None
    negotiations: int
    agents: tuple[str, ...]
    tiers: tuple[str, ...]
    bootstrap: Bootstrap
    overall: Overall
    leaderboard: tuple[LeaderRow, ...]
    head_to_head: tuple[HeadToHead, ...]
    per_tier: tuple[TierRow, ...]
    features: tuple[FeatureRow, ...]
    diagnostics: tuple[DiagnosticRow, ...]
    samples: tuple[Sample, ...]
    usage: UsageReport | None


__all__ = [
    "Bootstrap",
    "DiagnosticRow",
    "FeatureRow",
    "HeadToHead",
    "LeaderRow",
    "OfferPoint",
    "Overall",
    "Report",
    "RoleView",
    "Sample",
    "TierCell",
    "TierRow",
]

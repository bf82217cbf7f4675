"""The Inspect task's scores and metrics: dealroom's own measures, computed by dealroom's code.

Each sample's score holds the evaluated seat's numbers for that negotiation (what ``inspect
view`` lists per sample) and, in its metadata, the negotiation as stored (record and what the
players reported). ``negotiation_measures`` hands every sample's negotiation to
``dealroom.analysis.report.build_report``, the function behind ``dealroom report``, and reads
the evaluated model's row: the task's figures are the report's, with its bootstrap intervals.
``negotiation_stderr`` adds the standard error of each per-negotiation mean, Inspect's usual
companion to a mean.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import stdev
from typing import Any

from inspect_ai.scorer import Metric, SampleScore, Score, metric
from pydantic import BaseModel, ConfigDict

from dealroom.analysis import metrics as m
from dealroom.analysis.report import build_report
from dealroom.analysis.report_models import Report
from dealroom.play.jobs import Job, Played
from dealroom.protocol import Role
from dealroom.protocol.record import NegotiationRecord
from dealroom.store.results import StoredNegotiation

RECORD_KEY = "dealroom_negotiation"
"""Where the solver leaves the sample's negotiation in the sample's store."""


class SeatScore(BaseModel):
    """One sample's negotiation, as stored, and which seat the evaluated model played."""

    model_config = ConfigDict(frozen=True)

    key: str
    run: str
    role: Role
    agent: str
    record: dict[str, Any]
    extra: dict[str, Any]

    @classmethod
    def of(cls, job: Job, played: Played, role: Role) -> SeatScore:
        """The finished job's negotiation, for the model in ``role``."""
        record = NegotiationRecord.model_validate_json(played.row.record_json)
        return cls(
            key=job.key,
            run=job.run,
            role=role,
            agent=job.buyer if role == "buyer" else job.seller,
            record=record.model_dump(mode="json"),
            extra=dict(played.extra),
        )

    def negotiation(self) -> StoredNegotiation:
        """As the results store gives it back (what ``build_report`` reads)."""
        record = NegotiationRecord.model_validate(self.record)
        return StoredNegotiation(self.key, self.run, record, self.extra, finished_at="")

    def score(self) -> Score:
        """The sample's score: the seat's numbers (no share without gains from trade)."""
        record = NegotiationRecord.model_validate(self.record)
        buyer, seller = m.seats_of(record)
        seat = buyer if self.role == "buyer" else seller
        value: dict[str, float] = {
            "deal": float(seat.deal),
            "surplus": seat.surplus,
            "offers": float(len(seat.offers)),
            "invalid_actions": float(seat.invalid),
            "leaked": float(seat.leaked),
            "ir_violation": float(seat.ir_violation),
        }
        if seat.share is not None:
            value["share"] = seat.share
        outcome = record.outcome
        price = f" at {outcome.price}" if outcome.price is not None else ""
        errors: object = self.extra.get("errors") or {}
        return Score(
            value=value,
            answer=f"{outcome.status}{price} ({outcome.end_reason})",
            explanation=f"{self.role} surplus {seat.surplus:.2f} of gains {seat.gains:.2f}"
            + (f"; seat errors: {errors}" if errors else ""),
            metadata={"negotiation": self.model_dump(mode="json")},
        )


def _seats(scores: Sequence[SampleScore]) -> list[SeatScore]:
    return [
        SeatScore.model_validate((s.score.metadata or {})["negotiation"])
        for s in scores
        if s.score.metadata and "negotiation" in s.score.metadata
    ]


def report_of(scores: Sequence[SampleScore]) -> tuple[Report, list[SeatScore]]:
    """``dealroom report``'s report of the samples' negotiations (no sample plots)."""
    seats = _seats(scores)
    report = build_report((s.negotiation() for s in seats), samples=0)
    return report, seats


def measures(report: Report, agent: str, role: Role) -> dict[str, float]:
    """The report's figures for one agent in one seat, flat (an interval as ``_low``/``_high``;
    figures the report has none of are left out)."""
    out: dict[str, float] = {}
    row = next(r for r in report.leaderboard if r.agent == agent and r.role == role)
    for name, estimate in (
        ("share", row.surplus_share),
        ("share_on_deals", row.surplus_share_on_deals),
        ("deal_rate", row.deal_rate),
    ):
        _put(out, name, estimate.value)
        _put(out, f"{name}_low", estimate.low)
        _put(out, f"{name}_high", estimate.high)
    out["ir_violations"] = float(row.ir_violations)
    _put(out, "efficiency", report.overall.efficiency.value)
    features = next(f for f in report.features if f.agent == agent and f.role == role)
    for name in m.FEATURES:
        _put(out, name, features.feature(name))
    diagnostics = next((d for d in report.diagnostics if d.agent == agent and d.role == role), None)
    if diagnostics is not None:
        for name in ("claim_rate", "bluff_rate", "list_lie_rate", "concession_after_concession"):
            _put(out, name, diagnostics.diagnostic(name).value)
    return out


def _put(out: dict[str, float], name: str, value: float | None) -> None:
    if value is not None and math.isfinite(value):
        out[name] = float(value)


@metric
def negotiation_measures() -> Metric:
    """``dealroom report``'s measures for the evaluated model's seat, with bootstrap intervals."""

    def compute(scores: list[SampleScore]) -> Mapping[str, float]:
        report, seats = report_of(scores)
        if not seats:
            return {}
        return measures(report, seats[0].agent, seats[0].role)

    return compute


@metric
def negotiation_stderr() -> Metric:
    """The standard error of each per-negotiation mean (share over negotiations with gains,
    share over deals, deal rate over negotiations with gains, offers, leakage)."""

    def compute(scores: list[SampleScore]) -> Mapping[str, float]:
        rows = [
            seat
            for s in _seats(scores)
            for seat in m.seats_of(NegotiationRecord.model_validate(s.record))
            if seat.role == s.role
        ]
        columns = {
            "share_stderr": [r.share for r in rows if r.share is not None],
            "share_on_deals_stderr": [r.share for r in rows if r.share is not None and r.deal],
            "deal_rate_stderr": [float(r.deal) for r in rows if r.has_gains],
            "offers_stderr": [float(len(r.offers)) for r in rows],
            "leakage_stderr": [float(r.leaked) for r in rows],
        }
        return {
            name: stdev(values) / math.sqrt(len(values))
            for name, values in columns.items()
            if len(values) >= 2
        }

    return compute

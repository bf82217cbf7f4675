"""What each model cost and how it behaved: the per-model columns of an LLM tournament's report.

Read from what every LLM seat stored beside its negotiation (``extra["players"][role]``: model
calls, failed attempts, tokens, latency, cost, tool-call counts, turn-limit hits, context ends,
its error).
One row per agent with at least one such seat, plus the run's totals; typed, frozen models (the
report's JSON is their dump). Rates are pooled over all the seats' tool calls; latency is the
mean over successful model calls; a cost is None when a seat's model has no prices.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from dealroom.analysis import metrics as m
from dealroom.protocol.record import NegotiationRecord


class ModelUsage(BaseModel):
    """One model's (agent's) usage over the run, both seats pooled."""

    model_config = ConfigDict(frozen=True)

    agent: str
    seats: int
    """Negotiation seats it played (a self-play negotiation counts twice)."""
    model_calls: int
    failed_attempts: int
    input_tokens: int
    output_tokens: int
    tokens_per_negotiation: float
    cost_usd: float | None
    cost_per_negotiation: float | None
    latency_mean_s: float | None
    latency_max_s: float | None
    tool_calls: int
    invalid_rate: float | None
    """Tool calls that never reached the referee (bad JSON, unknown tools) / tool calls."""
    refused_rate: float | None
    """Tool calls the server refused / tool calls."""
    turn_limit_hits: int
    context_full: int = 0
    """Seats whose conversation outgrew the model's context: their play ended there (the
    endpoint refused the prompt), the negotiation went on (``ended_by: "context"``)."""
    failures: int
    """Seats whose player failed (the error is stored with the negotiation)."""
    messages_per_negotiation: float | None
    leakage: float | None
    """See ``dealroom.analysis.metrics.leakage``."""


class UsageTotals(BaseModel):
    """The run's totals over every LLM seat."""

    model_config = ConfigDict(frozen=True)

    model_calls: int
    failed_attempts: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    """None if no seat had prices; otherwise the sum over the seats that had."""
    failures: int
    unstored_calls: int = 0
    """Model calls paid for in plays of negotiations that no stored row kept (a run killed
    before it stored them, replayed on ``--resume``): from ``<store>.paid.jsonl``."""
    unstored_input_tokens: int = 0
    unstored_output_tokens: int = 0
    unstored_cost_usd: float | None = None


class Unstored(BaseModel):
    """Model calls paid for in plays that no stored row kept (a run killed before it stored
    them, replayed on ``--resume``), from the paid-call journal (``dealroom.store.paid``): of
    negotiations and of markets alike."""

    model_config = ConfigDict(frozen=True)

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    """None if no lost call had a price."""

    @classmethod
    def of(cls, paid: Iterable[Mapping[str, Any]], kept: Iterable[str]) -> Unstored:
        """The journaled calls (``paid``) of attempts no stored row names (``kept``)."""
        stored = set(kept)
        lost = [line for line in paid if line.get("attempt") not in stored]

        def total(key: str) -> int:
            return sum(n for line in lost if isinstance(n := line.get(key), int) and n >= 0)

        costs = [c for line in lost if isinstance(c := line.get("cost_usd"), int | float)]
        return cls(
            calls=len(lost),
            input_tokens=total("input_tokens"),
            output_tokens=total("output_tokens"),
            cost_usd=round(sum(costs), 6) if costs else None,
        )

    def text(self) -> str:
        """The reports' sentence for them (empty when there are none)."""
        if not self.calls:
            return ""
        lost = "" if self.cost_usd is None else f", ${self.cost_usd:,.4f}"
        return (
            f"paid, not stored: {self.calls:,} model calls ({self.input_tokens:,} input and "
            f"{self.output_tokens:,} output tokens{lost}) of plays lost before they were stored"
        )


class UsageReport(BaseModel):
    """Per-model usage and the run's totals."""

    model_config = ConfigDict(frozen=True)

    models: tuple[ModelUsage, ...]
    totals: UsageTotals


@dataclass(slots=True)
class _Sum:
    seats: int = 0
    calls: int = 0
    failed: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    priced: bool = False
    latency: float = 0.0
    latency_max: float | None = None
    tool_calls: int = 0
    invalid: int = 0
    refused: int = 0
    turn_limits: int = 0
    context_full: int = 0
    failures: int = 0
    rows: list[m.SeatStats] = field(default_factory=list[m.SeatStats])

    def add(self, data: Mapping[str, Any], error: bool, seat: m.SeatStats) -> None:
        self.seats += 1
        self.calls += int(data.get("model_calls", 0))
        self.failed += int(data.get("failed_attempts", 0))
        self.tokens_in += int(data.get("input_tokens", 0))
        self.tokens_out += int(data.get("output_tokens", 0))
        if data.get("cost_usd") is not None:
            self.cost += float(data["cost_usd"])
            self.priced = True
        self.latency += float(data.get("latency_s", 0.0))
        if (top := data.get("latency_max_s")) is not None:
            self.latency_max = max(self.latency_max or 0.0, float(top))
        self.tool_calls += sum(int(n) for n in dict(data.get("tool_calls", {})).values())
        self.invalid += int(data.get("invalid_tool_calls", 0))
        self.refused += int(data.get("refused_tool_calls", 0))
        self.turn_limits += int(data.get("turn_limit_hits", 0))
        self.context_full += data.get("ended_by") == "context"
        self.failures += error
        self.rows.append(seat)


class UsageCollector:
    """Streams negotiations in; ``report()`` gives the typed usage (None without LLM seats)."""

    def __init__(self) -> None:
        self._by_agent: dict[str, _Sum] = {}
        self._kept: set[str] = set()

    def add(self, record: NegotiationRecord, extra: Mapping[str, Any]) -> None:
        """Count every seat of one negotiation whose player reported model usage."""
        if isinstance(attempt := extra.get("attempt"), str):
            self._kept.add(attempt)
        players = extra.get("players", {})
        errors = extra.get("errors", {})
        seats = {seat.role: seat for seat in m.seats_of(record)}
        for role, data in players.items():
            if "model_calls" not in data or role not in seats:
                continue
            agent = record.buyer if role == "buyer" else record.seller
            self._by_agent.setdefault(agent, _Sum()).add(data, role in errors, seats[role])

    def report(self, paid: Iterable[Mapping[str, Any]] = ()) -> UsageReport | None:
        """The per-model rows (by agent name) and the totals; ``paid``: the run's journaled
        model calls, of which those of attempts no stored row kept are counted apart."""
        lost = Unstored.of(paid, self._kept)
        if not self._by_agent and not lost.calls:
            return None
        rows = tuple(_row(agent, s) for agent, s in sorted(self._by_agent.items()))
        sums = list(self._by_agent.values())
        priced = [s for s in sums if s.priced]
        totals = UsageTotals(
            model_calls=sum(s.calls for s in sums),
            failed_attempts=sum(s.failed for s in sums),
            input_tokens=sum(s.tokens_in for s in sums),
            output_tokens=sum(s.tokens_out for s in sums),
            cost_usd=round(sum(s.cost for s in priced), 6) if priced else None,
            failures=sum(s.failures for s in sums),
            unstored_calls=lost.calls,
            unstored_input_tokens=lost.input_tokens,
            unstored_output_tokens=lost.output_tokens,
            unstored_cost_usd=lost.cost_usd,
        )
        return UsageReport(models=rows, totals=totals)


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def _row(agent: str, s: _Sum) -> ModelUsage:
    cost = round(s.cost, 6) if s.priced else None
    return ModelUsage(
        agent=agent,
        seats=s.seats,
        model_calls=s.calls,
        failed_attempts=s.failed,
        input_tokens=s.tokens_in,
        output_tokens=s.tokens_out,
        tokens_per_negotiation=(s.tokens_in + s.tokens_out) / s.seats,
        cost_usd=cost,
        cost_per_negotiation=None if cost is None else cost / s.seats,
        latency_mean_s=_ratio(s.latency, s.calls),
        latency_max_s=s.latency_max,
        tool_calls=s.tool_calls,
        invalid_rate=_ratio(s.invalid, s.tool_calls),
        refused_rate=_ratio(s.refused, s.tool_calls),
        turn_limit_hits=s.turn_limits,
        context_full=s.context_full,
        failures=s.failures,
        messages_per_negotiation=m.messages_per_negotiation(s.rows),
        leakage=m.leakage(s.rows),
    )


def usage_of(items: Iterable[tuple[NegotiationRecord, Mapping[str, Any]]]) -> UsageReport | None:
    """The usage report of some stored negotiations."""
    collector = UsageCollector()
    for record, extra in items:
        collector.add(record, extra)
    return collector.report()

"""A tournament report: one JSON-ready object, and its terminal rendering.

``build_report`` streams records (only two small ``SeatStats`` rows per negotiation stay in
memory, plus a few sample negotiations for the trajectory plots) and computes the leaderboard
(agent x role, with bootstrap intervals), the head-to-head matrix, the per-tier table and its
spread, and the strategy features, as a ``Report`` (``dealroom.analysis.report_models``).
``format_report`` prints it; ``dealroom.analysis.report_html`` draws it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dealroom.analysis import diagnostics as d
from dealroom.analysis import metrics as m
from dealroom.analysis._text import ci, num, pct, table
from dealroom.analysis.oracle import OracleKey, OracleResult
from dealroom.analysis.report_diagnostics import diagnostic_lines
from dealroom.analysis.report_models import (
    Bootstrap,
    FeatureRow,
    HeadToHead,
    LeaderRow,
    OfferPoint,
    Overall,
    Report,
    RoleView,
    Sample,
    TierCell,
    TierRow,
)
from dealroom.analysis.usage import ModelUsage, Unstored, UsageCollector, UsageReport
from dealroom.protocol import TIERS, offer_of
from dealroom.protocol.record import NegotiationRecord
from dealroom.store.results import StoredNegotiation

ROLE_VIEWS = ("both", "buyer", "seller")
"""Leaderboard rows per agent: both seats pooled, then each seat."""


def build_report(
    records: Iterable[NegotiationRecord | StoredNegotiation],
    *,
    run: str | None = None,
    config: Mapping[str, Any] | None = None,
    resamples: int = 1000,
    seed: int = 0,
    samples: int = 6,
    paid: Iterable[Mapping[str, Any]] = (),
    oracles: Mapping[OracleKey, OracleResult] | None = None,
) -> Report:
    """The whole report (``Report.model_dump(mode="json")`` is its JSON). Stored negotiations
    (not bare records) also give the per-model usage of LLM seats (``dealroom.analysis.usage``)
    and their beliefs; ``oracles``: the run's oracle values (``dealroom.play.oracle.oracles``)."""
    rows: list[m.SeatStats] = []
    diagnoses: list[d.SeatDiagnosis] = []
    picked: list[NegotiationRecord] = []
    usage = UsageCollector()
    for item in records:
        record = item.record if isinstance(item, StoredNegotiation) else item
        extra = item.extra if isinstance(item, StoredNegotiation) else None
        if extra is not None:
            usage.add(record, extra)
        rows.extend(m.seats_of(record))
        diagnoses.extend(d.diagnose(record, extra, oracles))
        _maybe_sample(picked, record, samples)
    est = _Estimator(resamples=resamples, seed=seed)
    agents = _ranked_agents(rows)
    tiers = [t for t in TIERS if any(s.tier == t for s in rows)]
    buyers = [s for s in rows if s.role == "buyer"]  # one seat per negotiation
    return Report(
        run=run,
        config=dict(config) if config is not None else None,
        negotiations=len(buyers),
        agents=tuple(agents),
        tiers=tuple(tiers),
        bootstrap=Bootstrap(resamples=resamples, level=0.95, seed=seed),
        overall=Overall(
            deal_rate=est("deal_rate", buyers, "overall"),
            efficiency=est("efficiency", buyers, "overall"),
            ir_violations=m.ir_violations(rows),
            with_gains=sum(s.has_gains for s in buyers),
        ),
        leaderboard=tuple(_leaderboard(rows, agents, est)),
        head_to_head=tuple(_head_to_head(rows, agents)),
        per_tier=tuple(_per_tier(rows, agents, tiers, est)),
        features=tuple(_features(rows, agents)),
        diagnostics=tuple(
            d.diagnostic_rows(diagnoses, agents, tiers, resamples=resamples, seed=seed)
        ),
        samples=tuple(_trajectory(r) for r in _diverse(picked, samples)),
        usage=usage.report(paid),
    )


class _Estimator:
    def __init__(self, *, resamples: int, seed: int) -> None:
        self.resamples, self.seed = resamples, seed

    def __call__(self, name: str, rows: Iterable[m.SeatStats], label: str) -> m.Estimate:
        return m.estimate(name, rows, label=label, resamples=self.resamples, seed=self.seed)


def _ranked_agents(rows: Sequence[m.SeatStats]) -> list[str]:
    by_agent = m.group(rows, lambda s: s.agent)
    share = {a: m.surplus_share(seats) for a, seats in by_agent.items()}

    def rank(agent: str) -> tuple[float, str]:
        value = share[agent]
        return (-(value if value is not None else -1.0), agent)

    return sorted(by_agent, key=rank)


def _views(rows: Sequence[m.SeatStats], agent: str) -> dict[RoleView, list[m.SeatStats]]:
    mine = [s for s in rows if s.agent == agent]
    return {
        "both": mine,
        "buyer": [s for s in mine if s.role == "buyer"],
        "seller": [s for s in mine if s.role == "seller"],
    }


def _leaderboard(
    rows: Sequence[m.SeatStats], agents: Sequence[str], est: _Estimator
) -> list[LeaderRow]:
    board: list[LeaderRow] = []
    for agent in agents:
        for role, seats in _views(rows, agent).items():
            label = f"{agent}:{role}"
            board.append(
                LeaderRow(
                    agent=agent,
                    role=role,
                    negotiations=len(seats),
                    surplus_share=est("surplus_share", seats, label),
                    surplus_share_on_deals=est("surplus_share_on_deals", seats, label),
                    deal_rate=est("deal_rate", seats, label),
                    ir_violations=m.ir_violations(seats),
                )
            )
    return board


def _head_to_head(rows: Sequence[m.SeatStats], agents: Sequence[str]) -> list[HeadToHead]:
    cells = m.group(rows, lambda s: (s.agent, s.opponent))
    return [
        HeadToHead(
            agent=agent,
            opponent=opponent,
            negotiations=len(seats),
            surplus_share=m.surplus_share(seats),
            as_buyer=m.surplus_share([s for s in seats if s.role == "buyer"]),
            as_seller=m.surplus_share([s for s in seats if s.role == "seller"]),
            deal_rate=m.deal_rate(seats),
        )
        for agent in agents
        for opponent in agents
        if (seats := cells.get((agent, opponent)))
    ]


def _per_tier(
    rows: Sequence[m.SeatStats], agents: Sequence[str], tiers: Sequence[str], est: _Estimator
) -> list[TierRow]:
    table: list[TierRow] = []
    for agent in agents:
        for role, seats in _views(rows, agent).items():
            by_tier = m.group(seats, lambda s: s.tier)
            cells = {
                tier: TierCell(
                    surplus_share=est(
                        "surplus_share", by_tier.get(tier, []), f"{agent}:{role}:{tier}"
                    ),
                    deal_rate=m.deal_rate(by_tier.get(tier, [])),
                )
                for tier in tiers
            }
            table.append(
                TierRow(
                    agent=agent,
                    role=role,
                    tiers=cells,
                    share_spread=m.spread(c.surplus_share.value for c in cells.values()),
                    deal_rate_spread=m.spread(c.deal_rate for c in cells.values()),
                )
            )
    return table


def _features(rows: Sequence[m.SeatStats], agents: Sequence[str]) -> list[FeatureRow]:
    table: list[FeatureRow] = []
    for agent in agents:
        for role, seats in _views(rows, agent).items():
            if role == "both":
                continue  # anchoring and concession point opposite ways in the two seats
            table.append(
                FeatureRow(
                    agent=agent,
                    role=role,
                    **m.features(seats),
                    surplus_share=m.surplus_share(seats),
                )
            )
    return table


def _maybe_sample(picked: list[NegotiationRecord], record: NegotiationRecord, limit: int) -> None:
    """Collect (a bounded number of) the negotiations of the first scenario with gains."""
    if limit < 1 or len(picked) >= 20 * limit or record.scenario.gains <= 0:
        return
    if not picked or record.scenario.id == picked[0].scenario.id:
        picked.append(record)


def _diverse(candidates: Sequence[NegotiationRecord], limit: int) -> list[NegotiationRecord]:
    """Up to ``limit`` pairings, each time the one whose agents have been shown least."""
    shown: Counter[str] = Counter()
    chosen: list[NegotiationRecord] = []
    left = list(candidates)
    while left and len(chosen) < limit:
        best = min(left, key=lambda r: (shown[r.buyer] + shown[r.seller], r.buyer, r.seller))
        left.remove(best)
        chosen.append(best)
        shown.update((best.buyer, best.seller))
    return chosen


def _trajectory(record: NegotiationRecord) -> Sample:
    s, o = record.scenario, record.outcome
    return Sample(
        buyer=record.buyer,
        seller=record.seller,
        scenario_id=s.id,
        item=s.item.name,
        list_price=float(s.list_price),
        buyer_value=float(s.buyer_value),
        seller_cost=float(s.seller_cost),
        deadline=s.deadline,
        offers=tuple(
            OfferPoint(t=made.t, by=made.by, price=float(made.price))
            for e in record.events
            if (made := offer_of(e)) is not None
        ),
        price=None if o.price is None else float(o.price),
        end_reason=o.end_reason,
        time=o.time,
    )


# -- terminal ------------------------------------------------------------------------------------


def format_report(report: Report) -> str:
    """The report as terminal text: leaderboard, head to head, per tier, features."""
    overall = report.overall
    title = f"Run {report.run!r}: " if report.run is not None else ""
    lines = [
        f"{title}{report.negotiations:,} negotiations, {len(report.agents)} agents, "
        f"tiers {'/'.join(report.tiers)}",
        f"Overall: deal rate {ci(overall.deal_rate, percent=True)} over the "
        f"{overall.with_gains:,} of {report.negotiations:,} negotiations with gains, efficiency "
        f"{ci(overall.efficiency, percent=True)}, IR violations {overall.ir_violations}",
        "",
        "Leaderboard: surplus share (0 without a deal), on deals only, and deal rate, over "
        "negotiations with gains; 95% bootstrap intervals",
    ]
    body: list[list[str]] = []
    for row in report.leaderboard:
        first = row.role == "both"
        body.append(
            [
                row.agent if first else "",
                row.role,
                ci(row.surplus_share),
                ci(row.surplus_share_on_deals),
                ci(row.deal_rate, percent=True),
                str(row.ir_violations),
                f"{row.negotiations:,}",
            ]
        )
    lines += table(["agent", "role", "share", "share on deals", "deal rate", "IR", "n"], body)
    lines += ["", "Head to head: the row agent's surplus share against the column agent"]
    lines += _matrix(report)
    lines += ["", "Per tier: surplus share (both seats) and its spread across tiers"]
    lines += _tier_lines(report)
    lines += ["", "Strategy features (means per seat; see dealroom.analysis.metrics)"]
    lines += _feature_lines(report)
    lines += diagnostic_lines(report)
    if report.usage is not None:
        lines += ["", *usage_lines(report.usage)]
    return "\n".join(lines)


USAGE_COLUMNS = (
    "calls",
    "failed",
    "tokens/neg",
    "cost/neg",
    "latency",
    "invalid",
    "refused",
    "turn limits",
    "failures",
    "messages",
    "leakage",
    "n",
)


def usage_cells(row: ModelUsage) -> list[str]:
    """One model's usage as the report's cells, in ``USAGE_COLUMNS`` order."""
    cost = row.cost_per_negotiation
    latency = row.latency_mean_s
    return [
        f"{row.model_calls:,}",
        f"{row.failed_attempts:,}",
        f"{row.tokens_per_negotiation:,.0f}",
        "-" if cost is None else f"${cost:.{6 if cost < 0.01 else 4}f}",
        "-" if latency is None else f"{latency:.2f} s",
        pct(row.invalid_rate),
        pct(row.refused_rate),
        f"{row.turn_limit_hits:,}",
        f"{row.failures:,}",
        num(row.messages_per_negotiation, 2),
        pct(row.leakage),
        f"{row.seats:,}",
    ]


def usage_totals(usage: UsageReport) -> str:
    """The run's totals in one sentence."""
    t = usage.totals
    cost = "unknown (no prices)" if t.cost_usd is None else f"${t.cost_usd:,.4f}"
    line = (
        f"{t.model_calls:,} model calls ({t.failed_attempts:,} failed attempts), "
        f"{t.input_tokens:,} input and {t.output_tokens:,} output tokens, cost {cost}, "
        f"{t.failures:,} failed seats"
    )
    lost = Unstored(
        calls=t.unstored_calls,
        input_tokens=t.unstored_input_tokens,
        output_tokens=t.unstored_output_tokens,
        cost_usd=t.unstored_cost_usd,
    )
    return f"{line}; {lost.text()}" if lost.calls else line


def usage_lines(usage: UsageReport) -> list[str]:
    """The per-model usage table (per negotiation seat; latency per model call)."""
    body = [[row.agent, "", *usage_cells(row)] for row in usage.models]
    return [
        "Models: usage per negotiation seat, latency per model call, tool-call rates",
        *table(["agent", "", *USAGE_COLUMNS], body),
        "Run: " + usage_totals(usage),
    ]


def _matrix(report: Report) -> list[str]:
    agents = report.agents
    cell = {(c.agent, c.opponent): c.surplus_share for c in report.head_to_head}
    header = ["agent", "", *agents]
    body = [[a, "", *(num(cell.get((a, b)), 2) for b in agents)] for a in agents]
    return table(header, body)


def _tier_lines(report: Report) -> list[str]:
    tiers = report.tiers
    body = [
        [
            row.agent,
            row.role,
            *(num(row.tiers[t].surplus_share.value) for t in tiers),
            num(row.share_spread),
            *(pct(row.tiers[t].deal_rate) for t in tiers),
        ]
        for row in report.per_tier
        if row.role == "both"
    ]
    header = ["agent", "", *tiers, "spread", *(f"deals {t}" for t in tiers)]
    return table(header, body)


FEATURE_LABELS = {  # short column heads of the features, in report order
    "anchor_list": "anchor/L",
    "anchor_value": "anchor/own",
    "concession": "concession",
    "patience": "patience",
    "offers": "offers",
    "messages": "messages",
    "invalid_rate": "invalid",
    "leakage": "leakage",
}


def _feature_lines(report: Report) -> list[str]:
    body = [
        [
            row.agent if row.role == "buyer" else "",
            row.role,
            *(num(row.feature(name)) for name in FEATURE_LABELS),
            num(row.surplus_share),
        ]
        for row in report.features
    ]
    return table(["agent", "role", *FEATURE_LABELS.values(), "share"], body)

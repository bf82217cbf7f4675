"""The report as one self-contained HTML page: tables and inline SVG plots drawn here, in Python.

No script, no stylesheet or font from the network: the page opens offline and can be attached to
a paper's supplement. Every plot is an ``<svg class="plot" data-plot="...">``:

    surplus-by-tier     surplus share per tier, one line per agent (buyer and seller panels)
    trajectory          offer prices over time of sample negotiations (one panel each)
    feature             each strategy feature against surplus share, one point per agent x seat
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from dealroom.analysis._text import pct
from dealroom.analysis.metrics import Estimate
from dealroom.analysis.report import (
    FEATURE_LABELS,
    ROLE_VIEWS,
    USAGE_COLUMNS,
    usage_cells,
    usage_totals,
)
from dealroom.analysis.report_diagnostics import diagnostic_sections
from dealroom.analysis.report_models import Report, Sample

PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
W, H = 320, 220
M_LEFT, M_RIGHT, M_TOP, M_BOTTOM = 48, 12, 26, 36

CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1100px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: right; }
td:first-child, th:first-child, td.role { text-align: left; }
.ci { color: #777; font-size: 12px; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
svg.plot { background: #fafafa; border: 1px solid #e4e4e4; }
svg text { font: 10px system-ui, sans-serif; fill: #333; }
.legend span { display: inline-block; margin-right: 14px; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
"""


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    step = 10 ** math.floor(math.log10(raw))
    step *= next(f for f in (1, 2, 2.5, 5, 10) if raw <= f * step)
    start = math.floor(low / step) * step
    count = math.ceil((high - start) / step - 1e-9)
    return [start + i * step for i in range(count + 1)]


def _fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


class _Axes:
    """Maps data to pixels in one panel and draws its frame, ticks and labels."""

    def __init__(
        self, xs: Sequence[float], ys: Sequence[float], categories: Sequence[str] = ()
    ) -> None:
        self.categories = list(categories)
        if categories:
            self.x_ticks = [float(i) for i in range(len(categories))]
            self.x_domain = (-0.5, len(categories) - 0.5)
        else:
            self.x_ticks = _ticks(min(xs, default=0.0), max(xs, default=1.0))
            self.x_domain = (self.x_ticks[0], self.x_ticks[-1])
        self.y_ticks = _ticks(min(ys, default=0.0), max(ys, default=1.0))

    def x(self, value: float) -> float:
        lo, hi = self.x_domain
        return M_LEFT + (value - lo) / (hi - lo) * (W - M_LEFT - M_RIGHT)

    def y(self, value: float) -> float:
        lo, hi = self.y_ticks[0], self.y_ticks[-1]
        return H - M_BOTTOM - (value - lo) / (hi - lo) * (H - M_TOP - M_BOTTOM)

    def frame(self, title: str, x_label: str, y_label: str) -> str:
        parts = [f'<text x="{W / 2}" y="15" text-anchor="middle">{escape(title)}</text>']
        for t in self.y_ticks:
            y = self.y(t)
            parts.append(
                f'<line x1="{M_LEFT}" x2="{W - M_RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
                'stroke="#e6e6e6"/>'
            )
            parts.append(
                f'<text x="{M_LEFT - 4}" y="{y + 3:.1f}" text-anchor="end">{_fmt(t)}</text>'
            )
        for i, t in enumerate(self.x_ticks):
            label = self.categories[i] if self.categories else _fmt(t)
            parts.append(
                f'<text x="{self.x(t):.1f}" y="{H - M_BOTTOM + 13}" '
                f'text-anchor="middle">{escape(label)}</text>'
            )
        parts.append(
            f'<line x1="{M_LEFT}" x2="{M_LEFT}" y1="{M_TOP}" y2="{H - M_BOTTOM}" stroke="#888"/>'
        )
        parts.append(
            f'<line x1="{M_LEFT}" x2="{W - M_RIGHT}" y1="{H - M_BOTTOM}" '
            f'y2="{H - M_BOTTOM}" stroke="#888"/>'
        )
        parts.append(
            f'<text x="{(W + M_LEFT) / 2}" y="{H - 6}" text-anchor="middle">'
            f"{escape(x_label)}</text>"
        )
        parts.append(
            f'<text transform="translate(11 {(H + M_TOP - M_BOTTOM) / 2}) rotate(-90)" '
            f'text-anchor="middle">{escape(y_label)}</text>'
        )
        return "".join(parts)


def _svg(kind: str, body: str, label: str) -> str:
    """One plot: a whole SVG document (its font set on the root, so that it looks the same
    inline in the report and alone, as the tournament page shows it, in an image)."""
    return (
        f'<svg class="plot" data-plot="{kind}" xmlns="http://www.w3.org/2000/svg" '
        f'width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
        f'font-family="system-ui, sans-serif" font-size="10" '
        f'aria-label="{escape(label)}">{body}</svg>'
    )


def agent_colors(agents: Sequence[str]) -> dict[str, str]:
    """Each agent's colour in every plot and legend, by its place in the report's agents."""
    return {a: PALETTE[i % len(PALETTE)] for i, a in enumerate(agents)}


def report_plots(report: Report) -> dict[str, list[str]]:
    """Every plot of the report, as SVG documents, by kind (see the module's docstring)."""
    return {
        "surplus-by-tier": [tier_plot(report, role) for role in ("buyer", "seller")],
        "trajectory": [trajectory_plot(s) for s in report.samples],
        "feature": [feature_plot(report, f) for f in FEATURE_LABELS],
    }


def tier_plot(report: Report, role: str) -> str:
    """Surplus share per tier, one line per agent, for one seat (or both)."""
    tiers, colors = report.tiers, agent_colors(report.agents)
    rows = [r for r in report.per_tier if r.role == role]
    values = [c.surplus_share.value for r in rows for c in r.tiers.values()]
    axes = _Axes([], [0.0, *(v for v in values if v is not None)], categories=tiers)
    body = [axes.frame(f"Surplus share by tier ({role})", "tier", "surplus share")]
    for row in rows:
        points = [
            (axes.x(i), axes.y(v))
            for i, t in enumerate(tiers)
            if (v := row.tiers[t].surplus_share.value) is not None
        ]
        color = colors[row.agent]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        body.append(
            f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2">'
            f"<title>{escape(row.agent)}</title></polyline>"
        )
        body += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>' for x, y in points]
    return _svg("surplus-by-tier", "".join(body), f"surplus share by tier, {role}")


def trajectory_plot(sample: Sample) -> str:
    """One negotiation's offers over time, as fractions of the list price."""
    lp = sample.list_price
    value, cost = sample.buyer_value / lp, sample.seller_cost / lp
    offers = sample.offers
    ys = [value, cost, *(o.price / lp for o in offers)]
    axes = _Axes([0.0, sample.deadline], ys)
    title = f"{sample.buyer} (B) vs {sample.seller} (S)"
    body = [axes.frame(title, "time (s)", "price / list price")]
    for level, name, color in ((value, "buyer value", "#59a14f"), (cost, "seller cost", "#e15759")):
        y = axes.y(level)
        body.append(
            f'<line x1="{M_LEFT}" x2="{W - M_RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="{color}" stroke-dasharray="4 3"><title>{name}</title></line>'
        )
    for role, color in (("buyer", "#4e79a7"), ("seller", "#f28e2b")):
        mine = [(axes.x(o.t), axes.y(o.price / lp)) for o in offers if o.by == role]
        if mine:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in mine)
            body.append(
                f'<polyline points="{path}" fill="none" stroke="{color}" '
                f'stroke-width="1.5"><title>{role} offers</title></polyline>'
            )
            body += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2" fill="{color}"/>' for x, y in mine]
    if sample.price is not None:
        x, y = axes.x(sample.time), axes.y(sample.price / lp)
        body.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="none" stroke="#222" '
            f'stroke-width="2"><title>deal at {sample.price:,.2f}</title></circle>'
        )
    return _svg("trajectory", "".join(body), f"offer trajectory, {title}")


def feature_plot(report: Report, feature: str) -> str:
    """A feature against surplus share: one point per agent and seat (circle buyer, square
    seller)."""
    colors = agent_colors(report.agents)
    points = [
        (fx, fy, r)
        for r in report.features
        if (fx := r.feature(feature)) is not None and (fy := r.surplus_share) is not None
    ]
    axes = _Axes([p[0] for p in points], [0.0, *(p[1] for p in points)])
    label = FEATURE_LABELS[feature]
    body = [axes.frame(f"{label} vs surplus share", label, "surplus share")]
    for fx, fy, row in points:
        x, y, color = axes.x(fx), axes.y(fy), colors[row.agent]
        tip = f"<title>{escape(row.agent)} ({row.role}): {fx:.3g}, {fy:.3f}</title>"
        if row.role == "buyer":
            body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{color}">{tip}</circle>')
        else:
            body.append(
                f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" '
                f'fill="{color}">{tip}</rect>'
            )
    return _svg("feature", "".join(body), f"{label} against surplus share")


# -- page ----------------------------------------------------------------------------------------


def _cell(e: Estimate, pct: bool = False) -> str:
    if e.value is None:
        return "<td>-</td>"

    def f(v: float) -> str:
        return f"{100 * v:.1f}%" if pct else f"{v:.3f}"

    ci = (
        f' <span class="ci">[{f(e.low)}, {f(e.high)}]</span>'
        if e.low is not None and e.high is not None
        else ""
    )
    return f"<td>{f(e.value)}{ci}</td>"


def _leaderboard_table(report: Report) -> str:
    head = (
        "<tr><th>agent</th><th>role</th><th>surplus share</th><th>share on deals</th>"
        "<th>deal rate</th><th>IR</th><th>n</th></tr>"
    )
    rows = [
        f"<tr><td>{escape(r.agent) if r.role == ROLE_VIEWS[0] else ''}</td>"
        f"<td class=role>{r.role}</td>{_cell(r.surplus_share)}"
        f"{_cell(r.surplus_share_on_deals)}{_cell(r.deal_rate, pct=True)}"
        f"<td>{r.ir_violations}</td><td>{r.negotiations:,}</td></tr>"
        for r in report.leaderboard
    ]
    return f"<table>{head}{''.join(rows)}</table>"


def _heat(v: float | None) -> str:
    if v is None:
        return "<td>-</td>"
    shade = int(255 - 120 * max(0.0, min(1.0, v)))
    return f'<td style="background: rgb({shade},{shade},255)">{v:.2f}</td>'


def _h2h_table(report: Report) -> str:
    agents = report.agents
    cell = {(c.agent, c.opponent): c.surplus_share for c in report.head_to_head}
    head = "<tr><th></th>" + "".join(f"<th>{escape(a)}</th>" for a in agents) + "</tr>"
    rows = [
        f"<tr><td>{escape(a)}</td>" + "".join(_heat(cell.get((a, b))) for b in agents) + "</tr>"
        for a in agents
    ]
    return f"<table>{head}{''.join(rows)}</table>"


def _tier_table(report: Report) -> str:
    tiers = report.tiers
    head = (
        "<tr><th>agent</th><th>role</th>"
        + "".join(f"<th>{t}</th>" for t in tiers)
        + "<th>spread</th></tr>"
    )
    rows = [
        f"<tr><td>{escape(r.agent)}</td><td class=role>{r.role}</td>"
        + "".join(_cell(r.tiers[t].surplus_share) for t in tiers)
        + f"<td>{'-' if r.share_spread is None else format(r.share_spread, '.3f')}</td></tr>"
        for r in report.per_tier
    ]
    return f"<table>{head}{''.join(rows)}</table>"


def _feature_table(report: Report) -> str:
    head = (
        "<tr><th>agent</th><th>role</th>"
        + "".join(f"<th>{h}</th>" for h in FEATURE_LABELS.values())
        + "<th>surplus share</th></tr>"
    )

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    rows = [
        f"<tr><td>{escape(r.agent)}</td><td class=role>{r.role}</td>"
        + "".join(f"<td>{fmt(r.feature(k))}</td>" for k in FEATURE_LABELS)
        + f"<td>{fmt(r.surplus_share)}</td></tr>"
        for r in report.features
    ]
    return f"<table>{head}{''.join(rows)}</table>"


def _diagnostic_section(report: Report) -> str:
    parts: list[str] = []
    for title, columns, rows in diagnostic_sections(report):
        oracle = "oracle_share" in columns
        heads = [*columns.values()]
        if oracle:
            heads += [*(f"gap {t}" for t in report.tiers), "exact"]
        head = "<tr><th>agent</th><th>role</th>" + "".join(f"<th>{h}</th>" for h in heads)
        body = [
            f"<tr><td>{escape(r.agent)}</td><td class=role>{r.role}</td>"
            + "".join(_cell(r.diagnostic(c)) for c in columns)
            + (
                "".join(_cell(r.oracle_gap_by_tier[t]) for t in report.tiers)
                + f"<td>{r.oracle_exact:,} of {r.oracle_gap.n:,}</td>"
                if oracle
                else ""
            )
            + "</tr>"
            for r in rows
        ]
        title_text, _, rest = title.partition(": ")
        parts.append(
            f"<h3>{escape(title_text)}</h3><p>{escape(rest)}.</p>"
            f"<table>{head}</tr>{''.join(body)}</table>"
        )
    return "<h2>Diagnostics</h2>" + "".join(parts) if parts else ""


def _legend(agents: Sequence[str]) -> str:
    colors = agent_colors(agents)
    spans = "".join(
        f'<span><i class="swatch" style="background:{colors[a]}"></i>{escape(a)}</span>'
        for a in agents
    )
    return f'<p class="legend">{spans} (circle: buyer, square: seller)</p>'


def _usage_section(report: Report) -> str:
    usage = report.usage
    if usage is None:
        return ""
    head = "<tr><th>agent</th>" + "".join(f"<th>{h}</th>" for h in USAGE_COLUMNS) + "</tr>"
    rows = [
        f"<tr><td>{escape(r.agent)}</td>"
        + "".join(f"<td>{escape(c)}</td>" for c in usage_cells(r))
        + "</tr>"
        for r in usage.models
    ]
    return (
        "<h2>Models</h2><p>Usage per negotiation seat, latency per model call, tool-call "
        f"rates. Run: {escape(usage_totals(usage))}.</p>"
        f"<table>{head}{''.join(rows)}</table>"
    )


def render_html(report: Report) -> str:
    """The whole report as one HTML page."""
    overall = report.overall
    title = f"dealroom report: {report.run}" if report.run else "dealroom report"
    deal, eff = overall.deal_rate, overall.efficiency
    summary = (
        f"{report.negotiations:,} negotiations, {len(report.agents)} agents, tiers "
        f"{', '.join(report.tiers)}. Deal rate {pct(deal.value)}, efficiency "
        f"{pct(eff.value)}, IR violations {overall.ir_violations}."
    )
    plots = report_plots(report)
    plots_tier = "".join(plots["surplus-by-tier"])
    plots_traj = "".join(plots["trajectory"])
    plots_feat = "".join(plots["feature"])
    sample_note = (
        f"Scenario {escape(report.samples[0].scenario_id)} "
        f"({escape(report.samples[0].item)}), played by different pairings. Dashed: "
        "buyer value (green) and seller cost (red); blue: buyer offers; orange: seller offers; "
        "ring: the deal."
        if report.samples
        else "No negotiation with gains to show."
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<style>{CSS}</style></head><body>
<h1>{escape(title)}</h1><p>{escape(summary)}</p>
<h2>Leaderboard</h2>
<p>Surplus share: own surplus / (buyer value - seller cost) over negotiations with gains, 0
without a deal; on deals: deals only. Brackets: 95% bootstrap intervals.</p>
{_leaderboard_table(report)}
<h2>Surplus share by tier</h2>{_legend(report.agents)}
<div class="plots">{plots_tier}</div>{_tier_table(report)}
<h2>Head to head</h2><p>The row agent's surplus share against the column agent.</p>
{_h2h_table(report)}
<h2>Offer trajectories</h2><p>{sample_note}</p><div class="plots">{plots_traj}</div>
<h2>Strategy features against surplus share</h2>{_legend(report.agents)}
<div class="plots">{plots_feat}</div>{_feature_table(report)}
{_diagnostic_section(report)}
{_usage_section(report)}
</body></html>
"""

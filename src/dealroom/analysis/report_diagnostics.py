"""The report's diagnostics as terminal text: one table per section that has figures.

``DIAGNOSTIC_SECTIONS`` names the sections and their columns (``diagnostics.DIAGNOSTICS``
names); the HTML page (``report_html``) draws the same sections.
"""

from __future__ import annotations

from dealroom.analysis._text import ci, num, table
from dealroom.analysis.report_models import DiagnosticRow, Report

DIAGNOSTIC_SECTIONS: dict[str, dict[str, str]] = {  # title: {diagnostic: column head}
    "Honesty in cheap talk: claims about its own value (rate per negotiation), bluffs among "
    "them and their size / L, false claims about the list price": {
        "claim_rate": "claims",
        "bluff_rate": "bluffs",
        "bluff_size": "bluff size",
        "list_lie_rate": "list lies",
    },
    "Cue use: own concession / L after the other side conceded and after a firm offer, and "
    "seconds to respond to an offer": {
        "concession_after_concession": "after concession",
        "concession_after_firm": "after firm",
        "response_time": "response s",
    },
    "Oracle gap: surplus / the best surplus any policy of the seat reached against the same "
    "scripted counterpart (share), and what it left on the table / (v - c) (gap), by tier": {
        "oracle_share": "share",
        "oracle_gap": "gap",
    },
    "Beliefs about the other side's value, asked after the end: error and bias / L, and the "
    "share of 90% intervals that hold the truth": {
        "belief_error": "error",
        "belief_bias": "bias",
        "belief_coverage": "coverage",
    },
}


def diagnostic_sections(report: Report) -> list[tuple[str, dict[str, str], list[DiagnosticRow]]]:
    """The ``DIAGNOSTIC_SECTIONS`` that have a figure: title, columns and the rows with one."""
    sections: list[tuple[str, dict[str, str], list[DiagnosticRow]]] = []
    for title, columns in DIAGNOSTIC_SECTIONS.items():
        rows = [r for r in report.diagnostics if any(r.diagnostic(c).n for c in columns)]
        if rows:
            sections.append((title, columns, rows))
    return sections


def diagnostic_lines(report: Report) -> list[str]:
    """One table per diagnostic section that has a figure (95% intervals; the oracle's also
    by tier, and how many seats' oracle is exact rather than a lower bound)."""
    lines: list[str] = []
    for title, columns, rows in diagnostic_sections(report):
        oracle = "oracle_share" in columns
        tiers = [f"gap {t}" for t in report.tiers] if oracle else []
        header = ["agent", "role", *columns.values(), *tiers]
        body: list[list[str]] = []
        for r in rows:
            cells = [r.agent, r.role, *(ci(r.diagnostic(c)) for c in columns)]
            if oracle:
                cells += [num(r.oracle_gap_by_tier[t].value) for t in report.tiers]
                cells.append(f"{r.oracle_exact:,} of {r.oracle_gap.n:,}")
            body.append(cells)
        lines += ["", title, *table([*header, "exact"] if oracle else header, body)]
    return lines

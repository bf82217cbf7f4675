"""Figures as terminal text: the cells and tables of ``dealroom report`` (and its diagnostics)."""

from __future__ import annotations

from collections.abc import Sequence

from dealroom.analysis.metrics import Estimate


def num(x: float | None, digits: int = 3) -> str:
    """A figure, or ``-`` where there is none."""
    return "-" if x is None else f"{x:.{digits}f}"


def pct(x: float | None) -> str:
    """A share as a percentage, or ``-``."""
    return "-" if x is None else f"{100 * x:.1f}%"


def ci(e: Estimate, percent: bool = False) -> str:
    """A figure with its interval in brackets (``-`` without a figure)."""
    fmt = pct if percent else num
    if e.value is None:
        return "-"
    if e.low is None:
        return fmt(e.value)
    return f"{fmt(e.value)} [{fmt(e.low)}, {fmt(e.high)}]"


def table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    """Aligned columns: the first two left, the rest right, a rule under the header."""
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        cells = enumerate(zip(row, widths, strict=True))
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in cells)

    return [line(header), line(["-" * w for w in widths]), *map(line, body)]

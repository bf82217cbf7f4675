"""A training run's learning curve as a standalone SVG (no plotting library).

One panel per series that the run's ``metrics.jsonl`` holds, against the step: ``loss``,
``reward``, ``reward_std`` (the spread within GRPO groups; 0 everywhere means no gradient),
``deal_rate`` and ``share``. A step logged twice (a resumed run) is drawn once, the later line
winning.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from dealroom.training.models import TrainingSetupError
from dealroom.training.runlog import read_metrics

SERIES: tuple[tuple[str, str], ...] = (
    ("loss", "loss"),
    ("reward", "reward (mean of the batch)"),
    ("reward_std", "reward spread (reward_std)"),
    ("deal_rate", "deal rate"),
    ("share", "surplus share"),
)
"""Metrics drawn, in panel order, with their titles."""

WIDTH, PANEL, TOP, LEFT, RIGHT = 560, 150, 30, 60, 20


def series(rows: Sequence[dict[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    """Per metric, its (step, value) points in step order, one per step."""
    by_step: dict[int, dict[str, Any]] = {}
    for row in rows:
        step = row.get("step")
        if isinstance(step, int):
            by_step.setdefault(step, {}).update(row)
    out: dict[str, list[tuple[int, float]]] = {}
    for key, _ in SERIES:
        points = [
            (step, float(row[key]))
            for step, row in sorted(by_step.items())
            if isinstance(row.get(key), int | float)
        ]
        if points:
            out[key] = points
    return out


def _panel(title: str, points: list[tuple[int, float]], top: float, steps: range) -> list[str]:
    lo, hi = min(v for _, v in points), max(v for _, v in points)
    if hi - lo < 1e-12:
        lo, hi = lo - 0.5, hi + 0.5
    inner = WIDTH - LEFT - RIGHT
    height = PANEL - 45
    span = max(steps.stop - 1 - steps.start, 1)

    def xy(step: int, value: float) -> str:
        x = LEFT + inner * (step - steps.start) / span
        y = top + 20 + height * (hi - value) / (hi - lo)
        return f"{x:.1f},{y:.1f}"

    base = top + 20 + height
    parts = [
        f'<text x="{LEFT}" y="{top + 12}" font-size="12">{escape(title)}</text>',
        f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{base}" y2="{base}" stroke="#999"/>',
        f'<line x1="{LEFT}" x2="{LEFT}" y1="{top + 20}" y2="{base}" stroke="#999"/>',
        f'<text x="{LEFT - 6}" y="{top + 24}" text-anchor="end" font-size="10">{hi:.3g}</text>',
        f'<text x="{LEFT - 6}" y="{base}" text-anchor="end" font-size="10">{lo:.3g}</text>',
    ]
    coords = " ".join(xy(s, v) for s, v in points)
    parts.append(f'<polyline points="{coords}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    parts.extend(
        f'<circle cx="{c.split(",")[0]}" cy="{c.split(",")[1]}" r="2.5" fill="#1f77b4"/>'
        for c in coords.split()
    )
    return parts


def svg(rows: Sequence[dict[str, Any]], title: str = "") -> tuple[str, list[str]]:
    """The SVG text and the metrics it draws; TrainingSetupError if there is nothing to draw."""
    drawn = series(rows)
    if not drawn:
        names = ", ".join(k for k, _ in SERIES)
        raise TrainingSetupError(f"no logged step with any of {names} to draw")
    steps_seen = [s for points in drawn.values() for s, _ in points]
    steps = range(min(steps_seen), max(steps_seen) + 1)
    height = TOP + PANEL * len(drawn) + 30
    body = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        'font-family="sans-serif">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="18" text-anchor="middle" font-size="14">{escape(title)}</text>',
    ]
    titles = dict(SERIES)
    for i, (key, points) in enumerate(drawn.items()):
        body.extend(_panel(titles[key], points, TOP + PANEL * i, steps))
    body.append(
        f'<text x="{WIDTH / 2}" y="{height - 10}" text-anchor="middle" font-size="12">'
        f"step ({steps.start} to {steps.stop - 1})</text>"
    )
    body.append("</svg>")
    return "\n".join(body) + "\n", list(drawn)


def write_plot(metrics: Path, out: Path) -> list[str]:
    """Draw ``metrics`` (a run's metrics.jsonl) to ``out``; the metrics drawn."""
    rows = read_metrics(metrics)
    if not rows:
        raise TrainingSetupError(f"{metrics}: no logged steps (is it a run's output directory?)")
    text, drawn = svg(rows, title=f"{metrics.parent.name}: per step")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return drawn

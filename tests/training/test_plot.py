"""``dealroom train plot``: the metrics file drawn per step, a resumed step once."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dealroom.training.models import TrainingSetupError
from dealroom.training.plot import series, write_plot

ROWS = [
    {"step": 1, "loss": 0.0, "reward": 0.1, "reward_std": 0.2, "deal_rate": 0.5, "share": 0.1},
    {"step": 2, "loss": 0.0, "reward": 0.3, "reward_std": 0.1, "deal_rate": 1.0, "share": 0.2},
    {"step": 2, "loss": 0.0, "reward": 0.4, "reward_std": 0.1, "deal_rate": 1.0, "share": 0.3},
    {"train_runtime": 12.0, "step": 2},
]


def write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_each_metric_is_one_point_per_step_the_later_line_winning() -> None:
    drawn = series(ROWS)
    assert list(drawn) == ["loss", "reward", "reward_std", "deal_rate", "share"]
    assert drawn["reward"] == [(1, 0.1), (2, 0.4)]


def test_the_plot_is_svg_with_a_panel_per_metric(tmp_path: Path) -> None:
    metrics = write(tmp_path / "metrics.jsonl", ROWS)
    drawn = write_plot(metrics, tmp_path / "out" / "m.svg")
    root = ET.fromstring((tmp_path / "out" / "m.svg").read_text())
    lines = root.findall("{http://www.w3.org/2000/svg}polyline")
    assert len(lines) == len(drawn) == 5
    assert all(len(line.get("points", "").split()) == 2 for line in lines)


def test_an_sft_run_draws_its_loss_only(tmp_path: Path) -> None:
    rows: list[dict[str, object]] = [{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.0}]
    metrics = write(tmp_path / "metrics.jsonl", rows)
    assert write_plot(metrics, tmp_path / "m.svg") == ["loss"]


def test_nothing_to_draw_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(TrainingSetupError, match="no logged steps"):
        write_plot(tmp_path / "metrics.jsonl", tmp_path / "m.svg")
    metrics = write(tmp_path / "metrics.jsonl", [{"step": 1, "train_runtime": 3.0}])
    with pytest.raises(TrainingSetupError, match="no logged step with any of loss"):
        write_plot(metrics, tmp_path / "m.svg")

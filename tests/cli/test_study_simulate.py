"""``dealroom study simulate``: bots run a two-treatment study with a quiz, a practice round,
dropouts and a restart through the participants' routes; its exports are saved owner-only and
match the results store; a disagreement is reported and fails the run."""

from __future__ import annotations

import csv
import io
import os
import stat
from pathlib import Path

import pytest

from dealroom.cli import main as cli_main
from dealroom.cli.study_simulate import costs
from dealroom.server import study_export
from dealroom.server.study_export import EXPORTS

SECRET = "5f0c2a9e7d13b84f6a21c9e0d57b3a18"
DESIGN = """
practice = 1

[quiz]
max_attempts = 2

[[treatments]]
name = "fast"
deadline = 60
house = "conceder"

[[treatments]]
name = "slow"
deadline = 180

[[questionnaire]]
name = "fair"
text = "Was the other side fair?"
choices = ["yes", "no"]
required = true
"""


def rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def argv(tmp_path: Path, count: int, *extra: str) -> list[str]:
    design = tmp_path / "design.toml"
    design.write_text(DESIGN)
    return [
        *("study", "simulate", "--id", "sim", "--count", str(count), "--house", "boulware"),
        *("--clock", "virtual", "--negotiations", "2", "--design", str(design)),
        *("--exchange-rate", "0.05", "--show-up-fee", "2", "--currency", "GBP"),
        *("--completion-code", "DONE", "--secret", SECRET, "--out", str(tmp_path / "out")),
        *extra,
    ]


def test_a_simulated_study_s_exports_match_the_store_after_a_restart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli_main(argv(tmp_path, 8, "--dropouts", "0.25", "--quiz-mistakes", "0.5"))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "(a restart half way)" in out and "the exports match the results store" in out
    assert "requests: 200 " in out and " 5" not in out.partition("requests:")[2].splitlines()[0]
    files = sorted((tmp_path / "out").iterdir())
    assert [f.name for f in files] == sorted(f"sim-{name}.csv" for name in EXPORTS)
    assert all(stat.S_IMODE(os.stat(f).st_mode) == 0o600 for f in files)
    payments = rows(tmp_path / "out" / "sim-payments.csv")
    assert len(payments) == 8 and all(p["total"] for p in payments)  # everyone has a line
    assert sorted(p["treatment"] for p in payments) == ["fast"] * 4 + ["slow"] * 4
    done = [p for p in payments if p["state"] == "done"]
    assert len(done) == 6 and all(p["practice"] == "1" and p["negotiations"] == "2" for p in done)
    negotiations = rows(tmp_path / "out" / "sim-negotiations.csv")
    practice = [r for r in negotiations if r["practice"] == "true"]
    assert practice and all(r["pays"] == "false" and not r["payoff"] for r in practice)
    assert {r["treatment"] for r in negotiations} == {"fast", "slow"}
    quiz = rows(tmp_path / "out" / "sim-quiz.csv")
    assert any(r["passed"] == "false" for r in quiz) and any(r["passed"] == "true" for r in quiz)
    answers = rows(tmp_path / "out" / "sim-answers.csv")
    assert len(answers) == 6 and {a["answer"] for a in answers} == {"yes"}
    median, p95, top, total, paid = costs(payments)
    assert paid == 8 and median <= p95 <= top and total >= 8 * 2
    assert f"total {total:f} for 8 paid" in out

    assert cli_main(argv(tmp_path, 2)) == 2  # the exports are never overwritten
    assert "never overwritten" in capsys.readouterr().err


def test_exports_that_disagree_with_the_store_fail_the_simulation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = study_export.negotiation_rows
    monkeypatch.setattr(study_export, "negotiation_rows", lambda study: real(study)[1:])
    code = cli_main(argv(tmp_path, 2, "--no-restart", "--dropouts", "0"))
    out = capsys.readouterr().out
    assert code == 1, out
    assert "the exports DO NOT match (1)" in out  # the practice row left out: no payment moves
    assert "keys: 0 exported only, 1 stored only" in out

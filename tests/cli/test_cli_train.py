"""``dealroom train``'s contract without TRL: one JSON line on stdout whatever the trainer
prints, the nothing-learned verdict and its exit status, flags checked before any step, and
``train plot``. The trainers are stood in for; tests/training/test_trl_real.py runs real ones."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from dealroom.cli import main
from dealroom.cli.train import NOTHING_LEARNED
from dealroom.training import trainers
from dealroom.training.lengths import Lengths
from dealroom.training.runlog import learned

LENGTHS = Lengths(count=1, longest=10, longest_prompt=5, longest_completion=5, median_completion=5)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "sft.jsonl"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}], "tools": []}))
    return path


def chatty(history: list[dict[str, Any]]) -> Any:
    """A stand-in trainer that prints its per-step dicts to stdout, as transformers does."""

    def run(settings: Any, *_: Any) -> trainers.Result:
        for row in history:
            print(row)  # noqa: T201 (what transformers' ProgressCallback does)
        return trainers.Result(
            settings.output_dir,
            len(history),
            1.0,
            history,
            LENGTHS,
            learned=learned(history),
            saved=learned(history) is not False,
        )

    return run


def test_sft_prints_exactly_one_json_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], data: Path, tmp_path: Path
) -> None:
    monkeypatch.setattr(trainers, "run_sft", chatty([{"loss": 2.0, "step": 1}]))
    argv = ["train", "sft", "--data", str(data), "--model", "m", "--output-dir", str(tmp_path)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    (line,) = out.splitlines()
    summary = json.loads(line)
    assert summary["last_log"]["loss"] == 2.0 and summary["learned"] is None
    assert summary["metrics"] == str(tmp_path / "metrics.jsonl")
    assert "{'loss': 2.0" in err  # what the trainer printed went to stderr


def test_grpo_with_equal_rewards_everywhere_says_nothing_was_learned(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    history = [{"loss": 0.0, "frac_reward_zero_std": 1.0, "step": s} for s in (1, 2)]
    monkeypatch.setattr(trainers, "run_grpo", chatty(history))
    argv = ["train", "grpo", "--model", "m", "--output-dir", str(tmp_path), "--max-steps", "2"]
    assert main(argv) == NOTHING_LEARNED
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["learned"] is False and summary["saved"] is False
    (verdict,) = [line for line in err.splitlines() if "nothing learned" in line]
    assert "all 2 steps" in verdict and "no checkpoint saved" in verdict


def test_grpo_whose_groups_differed_exits_zero(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    history = [{"loss": 0.1, "frac_reward_zero_std": 0.5, "step": 1}]
    monkeypatch.setattr(trainers, "run_grpo", chatty(history))
    assert main(["train", "grpo", "--model", "m", "--output-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["learned"] is True and "nothing learned" not in err


def test_resuming_a_run_without_checkpoints_is_refused_before_any_step(
    capsys: pytest.CaptureFixture[str], data: Path, tmp_path: Path
) -> None:
    argv = ["train", "sft", "--data", str(data), "--model", "m", "--output-dir", str(tmp_path)]
    assert main([*argv, "--resume-from-checkpoint", "last"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "no checkpoint-N directory" in err


def test_plot_draws_a_runs_metrics(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rows = [{"step": s, "loss": 1.0 / s, "reward": 0.1 * s} for s in (1, 2, 3)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["train", "plot", str(tmp_path)]) == 0
    assert (tmp_path / "metrics.svg").read_text().startswith("<svg")
    assert "drew loss, reward" in capsys.readouterr().err
    assert main(["train", "plot", str(tmp_path / "nowhere")]) == 2
    assert "no logged steps" in capsys.readouterr().err


def test_a_resumed_run_reports_the_time_of_the_steps_it_ran(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "checkpoint-1").mkdir()
    (tmp_path / "checkpoint-1" / "trainer_state.json").write_text('{"global_step": 1}')
    history = [{"loss": 0.1, "frac_reward_zero_std": 0.5, "step": s} for s in (1, 2)]
    monkeypatch.setattr(trainers, "run_grpo", chatty(history))  # 2 steps in 1.0 s
    argv = ["train", "grpo", "--model", "m", "--output-dir", str(tmp_path)]
    assert main([*argv, "--resume-from-checkpoint", "last"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["steps"] == 2 and summary["resumed_at_step"] == 1
    assert summary["seconds_per_step"] == 1.0  # one step ran here, not two


def test_grpo_reads_reward_weights_walk_away_and_clip(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    seen: list[Any] = []

    def run(settings: Any) -> trainers.Result:
        seen.append(settings.reward)
        return chatty([{"loss": 0.1, "frac_reward_zero_std": 0.5, "step": 1}])(settings)

    monkeypatch.setattr(trainers, "run_grpo", run)
    argv = ["train", "grpo", "--model", "m", "--output-dir", str(tmp_path)]
    assert main(argv) == 0
    assert main([*argv, "--reward", "share=0,utility=1,walk_away=-0.1,clip=-0.5:2"]) == 0
    assert main([*argv, "--reward", "clip=none"]) == 0
    default, money, unclipped = seen
    assert default.clip == (-1.0, 1.0) and default.ir_violation == -1.0
    assert (money.utility, money.walk_away, money.clip) == (1.0, -0.1, (-0.5, 2.0))
    assert unclipped.clip is None
    capsys.readouterr()


@pytest.mark.parametrize(
    ("reward", "says"),
    [
        ("clip=1", "clip='1' is not LOW:HIGH or none"),
        ("clip=1:-1", "clip must be two finite bounds"),
        ("walk_away=x", "walk_away='x' is not a number"),
        ("bonus=1", "'bonus=1' is not TERM=WEIGHT"),
    ],
)
def test_a_bad_reward_is_one_line_before_any_step(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reward: str, says: str
) -> None:
    argv = ["train", "grpo", "--model", "m", "--output-dir", str(tmp_path), "--reward", reward]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    (line,) = err.splitlines()
    assert out == "" and says in line and not any(tmp_path.iterdir())


def test_the_thinking_switch_and_vllms_share_reach_the_settings(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    seen: list[Any] = []

    def run(settings: Any) -> trainers.Result:
        seen.append(settings)
        return chatty([{"loss": 0.1, "frac_reward_zero_std": 0.5, "step": 1}])(settings)

    monkeypatch.setattr(trainers, "run_grpo", run)
    argv = ["train", "grpo", "--model", "m", "--output-dir", str(tmp_path)]
    assert main(argv) == 0
    assert main([*argv, "--no-enable-thinking", "--vllm-gpu-memory-utilization", "0.5"]) == 0
    assert main([*argv, "--enable-thinking"]) == 0
    unset, off, on = seen
    assert (unset.enable_thinking, off.enable_thinking, on.enable_thinking) == (None, False, True)
    assert (unset.vllm_gpu_memory_utilization, off.vllm_gpu_memory_utilization) == (0.3, 0.5)
    capsys.readouterr()
    assert main([*argv, "--vllm-gpu-memory-utilization", "1.5"]) == 2
    assert "'1.5' is not a number between 0 and 1" in capsys.readouterr().err


def test_use_vllm_without_vllm_is_one_line_before_anything(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """No vLLM fits beside the train extra (docs/training.md, "Which vLLM"): the refusal says
    so, before the train extra is even needed, and writes nothing."""
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    out = tmp_path / "grpo"
    argv = ["train", "grpo", "--model", "m", "--output-dir", str(out), "--use-vllm"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "--use-vllm needs vLLM" in err and "Which vLLM" in err and "\n" not in err
    assert not out.exists()

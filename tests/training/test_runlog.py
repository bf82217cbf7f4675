"""The run log: reporters and checkpoints checked up front, outcomes counted per step, the
metrics file resumed without duplicates, and the nothing-learned verdict."""

from __future__ import annotations

import importlib.util
import inspect
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from dealroom.training.models import TrainingSetupError
from dealroom.training.runlog import (
    REPORTERS,
    SUMMARY_FILE,
    OutcomeTally,
    checkpoint_to_resume,
    learned,
    metrics_callback,
    observed_env,
    read_metrics,
    report_to,
)
from dealroom.training.trl import BargainToolEnv


def tools(cls: type) -> set[str]:
    return {
        name
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


def test_report_to_none_is_none_and_a_missing_tracker_is_one_line() -> None:
    assert report_to(()) == ["none"]
    assert report_to(["none"]) == ["none"]
    installed = importlib.util.find_spec
    missing = [name for name, mods in REPORTERS.items() if not any(map(installed, mods))]
    if not missing:
        pytest.skip("every tracker is installed here")
    with pytest.raises(TrainingSetupError, match=rf"--report-to {missing[0]}: .* not installed"):
        report_to([missing[0]])


def test_report_to_an_unknown_tracker_names_the_known_ones() -> None:
    with pytest.raises(TrainingSetupError, match="not one of none, tensorboard, wandb"):
        report_to(["nosuch"])


def test_resume_last_without_a_checkpoint_says_how_to_get_one(tmp_path: Path) -> None:
    assert checkpoint_to_resume(None, tmp_path) is None
    with pytest.raises(TrainingSetupError, match="--save-steps"):
        checkpoint_to_resume("last", tmp_path)
    (tmp_path / "checkpoint-2").mkdir()
    (tmp_path / "checkpoint-10").mkdir()
    (tmp_path / "checkpoint-11").write_text("a file, not a checkpoint")
    assert checkpoint_to_resume("last", tmp_path) == str(tmp_path / "checkpoint-10")


def test_resume_from_a_directory_that_is_no_checkpoint_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TrainingSetupError, match="not a trainer checkpoint"):
        checkpoint_to_resume(str(tmp_path), tmp_path)
    (tmp_path / "trainer_state.json").write_text("{}")
    assert checkpoint_to_resume(str(tmp_path), tmp_path) == str(tmp_path)


def test_observed_env_counts_outcomes_and_offers_the_same_tools_under_the_same_name() -> None:
    tally = OutcomeTally()
    cls = observed_env(tally)
    assert cls.__name__ == "BargainToolEnv"
    assert tools(cls) == tools(BargainToolEnv)
    deal, none = cls(opponent="conceder"), cls(opponent="boulware")
    deal.reset(index=2)
    deal.make_offer(0.8 * 6150)
    none.reset(index=0)
    assert deal.get_reward() > 0 and none.get_reward() == 0
    summary = tally.drain()
    assert summary["deal_rate"] == 0.5
    assert 0 < summary["share"] < 0.5
    assert summary["ir_violation_rate"] == 0.0
    assert tally.drain() == {}


def test_the_tally_counts_deals_below_the_seats_own_value() -> None:
    tally = OutcomeTally()
    env = observed_env(tally)(opponent="conceder")
    env.reset(index=2)
    seat = env.seat
    assert seat is not None
    env.make_offer(float(seat.referee.scenario.buyer_value) * 1.5)  # the seller takes it
    env.get_reward()
    assert tally.drain()["ir_violation_rate"] == 1.0


class Trainer:
    """The part of transformers' Trainer the callback sees: a state with a step and a log."""

    def __init__(self, callback: Any) -> None:
        self.callback = callback
        self.state = SimpleNamespace(global_step=0, log_history=[])

    def begin(self, step: int) -> None:
        self.state.global_step = step
        self.callback.on_train_begin(None, self.state, None)

    def log(self, **logs: Any) -> dict[str, Any]:
        self.state.global_step += 1
        row = {**logs, "step": self.state.global_step}
        self.state.log_history.append(row)
        self.callback.on_log(None, self.state, None, logs=row)
        return row


def test_a_resumed_run_appends_to_the_metrics_file_each_step_once(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    path = tmp_path / "metrics.jsonl"
    first = Trainer(metrics_callback(path))
    first.begin(0)
    for loss in (3.0, 2.0, 1.5):  # steps 1-3; say the checkpoint was saved at step 2
        first.log(loss=loss)
    resumed = Trainer(metrics_callback(path))
    resumed.begin(2)
    resumed.log(loss=1.2)
    resumed.log(loss=1.0)
    rows = read_metrics(path)
    assert [(r["step"], r["loss"]) for r in rows] == [(1, 3.0), (2, 2.0), (3, 1.2), (4, 1.0)]
    fresh = Trainer(metrics_callback(path))
    fresh.begin(0)
    assert read_metrics(path) == []


def test_grpo_steps_carry_deal_rate_and_share_into_the_log(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    tally = OutcomeTally()
    env = observed_env(tally)(opponent="conceder")
    env.reset(index=2)
    env.make_offer(0.8 * 6150)
    env.get_reward()
    trainer = Trainer(metrics_callback(tmp_path / "m.jsonl", tally))
    trainer.begin(0)
    row = trainer.log(reward=0.8, frac_reward_zero_std=0.0)
    assert row["deal_rate"] == 1.0  # in the trainer's own log_history too
    (written,) = read_metrics(tmp_path / "m.jsonl")
    assert written["deal_rate"] == 1.0 and written["share"] == row["share"]
    assert "deal_rate" not in trainer.log(loss=0.5)  # an SFT-like row without a reward


def test_learned_is_false_only_when_every_group_had_equal_rewards() -> None:
    assert learned([{"loss": 1.0}]) is None
    assert learned([{"frac_reward_zero_std": 1.0}, {"frac_reward_zero_std": 1.0}]) is False
    assert learned([{"frac_reward_zero_std": 1.0}, {"frac_reward_zero_std": 0.5}]) is True


def test_an_unreadable_metrics_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    assert read_metrics(path) == []
    path.write_text(json.dumps({"step": 1}) + "\n{oops\n")
    with pytest.raises(TrainingSetupError, match=r"metrics.jsonl:2: not JSON"):
        read_metrics(path)


def test_the_metrics_file_has_one_line_per_step_and_the_summary_apart(tmp_path: Path) -> None:
    """transformers logs its end-of-training summary (train_runtime, train_loss) at the last
    step's number: it goes to train_summary.json, not into the per-step file; a second log of
    a step joins that step's line."""
    pytest.importorskip("transformers")
    path = tmp_path / "metrics.jsonl"
    trainer = Trainer(metrics_callback(path))
    trainer.begin(0)
    trainer.log(loss=2.0)
    trainer.log(loss=1.0)
    trainer.callback.on_log(None, trainer.state, None, logs={"grad_norm": 0.5})
    end = {"train_runtime": 9.5, "train_loss": 1.5, "train_steps_per_second": 0.2}
    trainer.callback.on_log(None, trainer.state, None, logs=end)
    rows = read_metrics(path)
    assert [r["step"] for r in rows] == [1, 2]
    assert rows[-1] == {"loss": 1.0, "grad_norm": 0.5, "step": 2}
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert summary == {**end, "step": 2}
    assert not (tmp_path / "metrics.jsonl.partial").exists()


def test_a_grpo_checkpoint_records_its_horizon_and_serving_lists_it(tmp_path: Path) -> None:
    from dealroom.training.rewards import RewardSpec
    from dealroom.training.runlog import (
        TRAINING_FILE,
        model_entry,
        training_horizon,
        write_training_record,
    )

    run = SimpleNamespace(
        max_tool_calling_iterations=2, role="buyer", opponent="boulware", reward=RewardSpec()
    )
    write_training_record(tmp_path, run)  # pyright: ignore[reportArgumentType]
    record = json.loads((tmp_path / TRAINING_FILE).read_text())
    assert record["reward"]["clip"] == [-1.0, 1.0] and record["role"] == "buyer"
    assert training_horizon(tmp_path) == 2
    assert model_entry("trained", 2) == {
        "id": "trained",
        "object": "model",
        "max_tool_calling_iterations": 2,
    }
    whole = SimpleNamespace(
        max_tool_calling_iterations=None, role="seller", opponent=object(), reward=RewardSpec()
    )
    write_training_record(tmp_path, whole)  # pyright: ignore[reportArgumentType]
    assert training_horizon(tmp_path) is None  # whole negotiations: no horizon to list
    assert model_entry("trained", None) == {"id": "trained", "object": "model"}
    (tmp_path / TRAINING_FILE).write_text("{oops")
    assert training_horizon(tmp_path) is None
    assert training_horizon(tmp_path / "nowhere") is None

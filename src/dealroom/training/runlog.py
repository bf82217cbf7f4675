"""What a training run leaves behind to be watched, resumed and judged.

- ``metrics.jsonl`` in the output directory: one JSON object per logged step (TRL's own log
  dict plus ``step``), appended as the step is logged; a second log of the same step is merged
  into its line, so one line is one step. A run resumed from a checkpoint first drops the lines
  after that checkpoint's step (a crashed run may have logged steps it never saved), then
  appends: the file covers both halves, each step once.
- ``train_summary.json`` beside it: the run's end-of-training summary (``train_runtime``,
  ``train_loss``, ...), which transformers logs at the last step's number and which is no step.
- For GRPO, each logged step also carries the outcomes of the rollouts scored since the last
  log: ``deal_rate`` (fraction of negotiations with a deal), ``share`` (mean surplus share
  of the learner's seat) and ``ir_violation_rate`` (fraction that were deals below the seat's
  own value), which TRL cannot know.
- ``dealroom_training.json`` beside a saved GRPO checkpoint: its role, opponent, reward and
  tool-calling horizon (``max_tool_calling_iterations``), which ``train serve`` lists with the
  model and ``train evaluate`` takes as its default limit.
- ``learned(history)``: False when every logged GRPO step had all groups' rewards equal
  (``frac_reward_zero_std`` 1): every advantage was 0, the gradient too, and the weights did not
  move.
- ``--report-to`` and ``--resume-from-checkpoint`` checked before any step, as one line.

Needs the ``train`` extra only for the callback (built on first use).
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from dealroom.protocol import Outcome, Role
from dealroom.training._chat import json_object
from dealroom.training.market_trl import MarketSellerEnv
from dealroom.training.models import TrainingSetupError, jsonl_values, lib
from dealroom.training.rewards import (
    RewardSpec,
    RewardTerms,
    deal_made,
    ir_violated,
    surplus_share,
)
from dealroom.training.trl import BargainToolEnv

Env = TypeVar("Env", BargainToolEnv, MarketSellerEnv)
"""A tool environment TRL trains in."""

METRICS_FILE = "metrics.jsonl"
"""The per-step log in a run's output directory."""
SUMMARY_FILE = "train_summary.json"
"""The end-of-training summary beside it (the last run's, when a run was resumed)."""
TRAINING_FILE = "dealroom_training.json"
"""Beside a saved GRPO checkpoint: how it was trained (``training_record``); ``train serve``
reads its horizon from it."""
HORIZON_KEY = "max_tool_calling_iterations"
"""The field of a served model's ``GET /models`` entry that gives its training horizon."""
SUMMARY_KEYS = frozenset({"train_runtime", "train_loss", "total_flos"})
"""Keys only transformers' end-of-training log has (``Trainer._inner_training_loop``)."""

REPORTERS: dict[str, tuple[str, ...]] = {
    "tensorboard": ("tensorboard", "tensorboardX"),
    "wandb": ("wandb",),
    "trackio": ("trackio",),
    "mlflow": ("mlflow",),
}
"""TRL's (transformers') reporting integrations dealroom offers, and the modules each needs."""


def report_to(names: Sequence[str]) -> list[str]:
    """TRL's ``report_to`` for ``names`` (``none`` or reporters); one line if one is missing."""
    chosen = [n for n in names if n != "none"]
    for name in chosen:
        modules = REPORTERS.get(name)
        if modules is None:
            known = ", ".join(["none", *REPORTERS])
            raise TrainingSetupError(f"--report-to {name}: not one of {known}")
        if not any(importlib.util.find_spec(m) is not None for m in modules):
            raise TrainingSetupError(
                f"--report-to {name}: {modules[0]} is not installed (pip install {modules[0]})"
            )
    return chosen or ["none"]


def checkpoint_to_resume(value: str | None, output_dir: Path) -> str | None:
    """The checkpoint directory ``--resume-from-checkpoint`` names (a path, or ``last``)."""
    if value is None:
        return None
    if value == "last":
        found = _last_checkpoint(output_dir)
        if found is None:
            raise TrainingSetupError(
                f"--resume-from-checkpoint last: no checkpoint-N directory in {output_dir} "
                "(save some with --save-steps)"
            )
        return found
    if not (Path(value) / "trainer_state.json").is_file():
        raise TrainingSetupError(
            f"--resume-from-checkpoint {value}: not a trainer checkpoint (no trainer_state.json)"
        )
    return value


def _last_checkpoint(output_dir: Path) -> str | None:
    """The highest ``checkpoint-N`` directory (transformers' ``get_last_checkpoint`` rule)."""
    if not output_dir.is_dir():
        return None
    steps = {
        int(match.group(1)): child
        for child in output_dir.iterdir()
        if child.is_dir() and (match := re.fullmatch(r"checkpoint-(\d+)", child.name))
    }
    return str(steps[max(steps)]) if steps else None


class OutcomeTally:
    """Outcomes of the rollouts scored since the last logged step."""

    def __init__(self) -> None:
        self._deals: list[float] = []
        self._shares: list[float] = []
        self._violations: list[float] = []

    def add(self, outcome: Outcome, role: Role) -> None:
        """Count one scored negotiation."""
        self._deals.append(deal_made(outcome))
        self._shares.append(surplus_share(outcome, role))
        self._violations.append(ir_violated(outcome, role))

    def add_terms(self, terms: RewardTerms) -> None:
        """Count one scored game by its reward terms (a market's seller: a sale is a deal)."""
        self._deals.append(terms.deal)
        self._shares.append(terms.share)
        self._violations.append(terms.ir_violation)

    def drain(self) -> dict[str, float]:
        """``deal_rate``, ``share`` and ``ir_violation_rate`` (deals below the seat's own value,
        the reward hacking a deal bonus invites) of what was counted, then forget it ({} if
        nothing)."""
        if not self._deals:
            return {}
        n = len(self._deals)
        summary = {
            "deal_rate": sum(self._deals) / n,
            "share": sum(self._shares) / n,
            "ir_violation_rate": sum(self._violations) / n,
        }
        self._deals.clear()
        self._shares.clear()
        self._violations.clear()
        return summary


def observed_env(tally: OutcomeTally, base: type[Env] = BargainToolEnv) -> type[Env]:
    """The tool environment ``base`` (``BargainToolEnv``, ``MarketSellerEnv``) counting each
    scored game's reward terms in ``tally``.

    Named like its base: TRL names the reward column after the environment's class
    (``rewards/BargainToolEnv/mean``), and only public functions become tools, so the
    override of ``get_reward`` changes nothing the model sees.
    """

    def get_reward(self: BargainToolEnv | MarketSellerEnv) -> float:
        reward = base.get_reward(self)  # pyright: ignore[reportArgumentType]
        terms = self.terms
        if terms is not None:
            tally.add_terms(terms)
        return reward

    names = {"__qualname__": base.__qualname__, "__module__": base.__module__}
    return cast(type[Env], type(base.__name__, (base,), {**names, "get_reward": get_reward}))


def metrics_callback(path: Path, tally: OutcomeTally | None = None) -> Any:
    """A ``TrainerCallback`` writing every logged step to ``path``, one line per step, and the
    end-of-training summary to ``SUMMARY_FILE`` beside it (see the module doc)."""
    base = lib("transformers").TrainerCallback

    class MetricsFile(base):  # type: ignore[misc, valid-type]
        last: dict[str, Any] | None = None

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            kept = [r for r in read_metrics(path) if r.get("step", 0) <= state.global_step]
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_rows(path, kept)
            self.last = kept[-1] if kept else None

        def on_log(
            self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any
        ) -> None:
            if logs is None:
                return
            if SUMMARY_KEYS & logs.keys():
                summary = {**logs, "step": state.global_step}
                (path.parent / SUMMARY_FILE).write_text(json.dumps(summary) + "\n", "utf-8")
                return
            if tally is not None and "reward" in logs:
                logs.update(tally.drain())  # the same dict lands in the trainer's log_history
            row = {**logs, "step": state.global_step}
            if self.last is not None and self.last.get("step") == row["step"]:
                self.last.update(row)  # a second log of the same step: one line still
                rows = read_metrics(path)
                _write_rows(path, [*rows[:-1], self.last])
                return
            self.last = row
            with path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(row) + "\n")

    return MetricsFile()


def _write_rows(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Replace the file's lines at once (a crash leaves the old file or the new one)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    partial.replace(path)


class GRPORun(Protocol):
    """What ``TRAINING_FILE`` records of a GRPO run (``trainers.GRPOSettings``)."""

    @property
    def max_tool_calling_iterations(self) -> int | None: ...
    @property
    def role(self) -> Role: ...
    @property
    def opponent(self) -> object: ...
    @property
    def reward(self) -> RewardSpec: ...


def write_training_record(output_dir: Path, run: GRPORun) -> None:
    """Write ``TRAINING_FILE`` in a checkpoint directory: how its weights were trained."""
    record = {
        "stage": "grpo",
        "max_tool_calling_iterations": run.max_tool_calling_iterations,
        "role": run.role,
        "opponent": run.opponent if isinstance(run.opponent, str) else "custom",
        "reward": run.reward.model_dump(mode="json"),
    }
    (output_dir / TRAINING_FILE).write_text(json.dumps(record, indent=2) + "\n", "utf-8")


def training_horizon(model_dir: Path) -> int | None:
    """The tool-calling horizon a checkpoint was trained with (None: unknown, or whole
    negotiations); a file that cannot be read counts as none."""
    try:
        record = json.loads((model_dir / TRAINING_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    fields = json_object(record)
    horizon = fields.get("max_tool_calling_iterations") if fields is not None else None
    if isinstance(horizon, int) and not isinstance(horizon, bool) and horizon >= 1:
        return horizon
    return None


def model_entry(name: str, horizon: object = None) -> dict[str, object]:
    """A served model as ``GET /models`` lists it: with ``HORIZON_KEY``, the tool-calling
    horizon it was trained with, when known (vLLM adds its own fields the same way)."""
    extra = {HORIZON_KEY: horizon} if isinstance(horizon, int) else {}
    return {"id": name, "object": "model", **extra}


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The rows of a metrics file ([] if there is none); one line for an unreadable one."""
    if not path.is_file():
        return []
    return [row for _, row in jsonl_values(path) if isinstance(row, dict)]


def learned(history: Sequence[dict[str, Any]]) -> bool | None:
    """False when every logged GRPO step had equal rewards in every group (zero gradient);
    True when some step had not; None without GRPO steps (SFT)."""
    spreads = [h["frac_reward_zero_std"] for h in history if "frac_reward_zero_std" in h]
    if not spreads:
        return None
    return any(float(s) < 1.0 for s in spreads)

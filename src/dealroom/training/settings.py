"""The settings of the paper's training stages (TRL's names): what ``dealroom train sft`` and
``dealroom train grpo`` build and ``dealroom.training.trainers`` runs, and what a run reports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dealroom.protocol import DEFAULT_RULES, Role, Rules, Tier
from dealroom.protocol.model_seat import ArgumentsForm
from dealroom.training._seat import OpponentFactory
from dealroom.training.lengths import Lengths, Row
from dealroom.training.rewards import RewardSpec


@dataclass(frozen=True, slots=True)
class LoRA:
    """LoRA adapters (PEFT) instead of full fine-tuning; merged into the saved checkpoint."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.05


@dataclass(frozen=True, slots=True)
class Common:
    """Settings both stages share (TRL's names)."""

    model: str
    output_dir: Path
    max_steps: int = 100
    learning_rate: float = 1e-5
    per_device_train_batch_size: int | None = None
    gradient_accumulation_steps: int = 1
    logging_steps: int = 1
    seed: int = 0
    chat_template: str | None = None
    """A TRL bundled template name (``qwen3``) or a .jinja file, replacing the model's own."""
    lora: LoRA | None = None
    gradient_checkpointing: bool | None = None
    """None: on (whole negotiations need it; on a CPU it costs about a third more time)."""
    report_to: tuple[str, ...] = ("none",)
    """TRL's reporting integrations (tensorboard, wandb, trackio, mlflow), each checked."""
    save_steps: int | None = None
    """Save a resumable checkpoint (``checkpoint-N``) every this many steps; None: none."""
    resume_from_checkpoint: str | None = None
    """A checkpoint directory, or ``last`` for the output directory's latest."""
    threads: int | None = None
    """torch's CPU threads; None: chosen for the machine (``dealroom.training.threads``)."""
    enable_thinking: bool | None = None
    """The chat template's thinking switch (Qwen3's); None: the template's default. Off, think
    blocks are stripped from the rows trained on (``model_seat.without_thinking``)."""


@dataclass(frozen=True, slots=True)
class SFTSettings(Common):
    """Supervised fine-tuning on exported transcripts."""

    learning_rate: float = 2e-5
    max_length: int | None = None
    """None: the longest conversation, rounded up."""
    num_train_epochs: float = 1.0
    max_turns: int | None = None
    """Keep only each transcript's first turns (shorter rows: quick runs, small machines)."""
    arguments: ArgumentsForm = "object"


@dataclass(frozen=True, slots=True)
class GRPOSettings(Common):
    """GRPO in ``BargainToolEnv`` against one opponent, or with ``buyers`` set, in
    ``MarketSellerEnv``: the seller of a market against a pool of scripted buyers."""

    opponent: str | OpponentFactory = "boulware"
    """The other seat; in a market, the buyers' pool (one spec for all, or one per buyer
    joined by '+')."""
    role: Role = "buyer"
    """The learner's seat; a market trains its seller."""
    buyers: int | None = None
    """Buyers per market: the learner sells in a market of that many; None: bilateral."""
    tier: Tier = "mid"
    scenario_seed: int = 0
    scenarios: int = 512
    reward: RewardSpec = field(default_factory=RewardSpec)
    rules: Rules = DEFAULT_RULES
    num_generations: int = 4
    max_completion_length: int | None = None
    """None: derived from reference negotiations (whole ones, or ``max_tool_calling_iterations``
    turns), with a margin."""
    max_tool_calling_iterations: int | None = None
    temperature: float = 1.0
    beta: float = 0.0
    use_vllm: bool = False
    vllm_mode: Literal["colocate", "server"] = "colocate"
    vllm_gpu_memory_utilization: float = 0.3
    """Colocated vLLM's share of the GPU's memory (TRL's default)."""
    reference: Sequence[Row] = ()
    """Conversations to derive lengths from (e.g. the SFT rows); empty: play some."""


@dataclass(frozen=True, slots=True)
class Result:
    """What a finished stage reports."""

    output_dir: Path
    steps: int
    seconds: float
    log_history: list[dict[str, Any]]
    lengths: Lengths
    learned: bool | None = None
    """GRPO: False when every group's rewards were equal in every step (nothing saved)."""
    saved: bool = True
    threads: int | None = None
    """torch's CPU threads during the run."""

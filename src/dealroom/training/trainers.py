"""The paper's training stages on TRL: SFT on exported negotiations, then GRPO in the environment.

``run_sft`` fine-tunes on rows of the SFT export (``dealroom export-sft``); ``run_grpo`` runs
``GRPOTrainer(environment_factory=BargainToolEnv)`` against any opponent, or with ``buyers``
set ``MarketSellerEnv``, a market's seller against a pool of scripted buyers. Both check the whole
configuration before the first step, and a bad one is a ``TrainingSetupError`` with one line:

- TRL older than 1.8 (where ``get_reward`` was offered to the model as a tool instead of
  counted as the reward);
- a chat template TRL cannot render tools with or read tool calls from;
- lengths too small for the data: SFT's ``max_length`` below the longest conversation (TRL's
  1024 would drop every example), GRPO's ``max_completion_length`` below what a negotiation
  needs (tool results count toward it, and a cut rollout loses an action already played).
  By default both are derived from the data, with a margin;
- an unknown opponent;
- an uninstalled ``report_to`` tracker, a missing checkpoint to resume, and a run whose
  memory estimate exceeds the free memory of the device it trains on (the GPU's, less
  colocated vLLM's share, when there is one: ``dealroom.training.memory``).

The reward is counted once: no ``reward_funcs`` are passed, since TRL >= 1.8 adds the
environment's ``get_reward`` itself. SFT rows get their tool-call arguments as objects (what the
template and TRL's parser use in GRPO rollouts) unless ``arguments="string"``.

The output directory holds a plain transformers checkpoint (LoRA adapters are merged), ready
for the next stage or for serving (``dealroom.training.serving``), and ``metrics.jsonl``, every
logged step (``dealroom.training.runlog``). A GRPO run in which every group's rewards were
equal saves no checkpoint (``Result.learned`` is False).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

import structlog

from dealroom.engine.match import play
from dealroom.play.registry import resolve
from dealroom.protocol import AgentFactory
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.market import MarketRules
from dealroom.protocol.model_seat import ArgumentsForm, unthought, with_arguments
from dealroom.training import memory
from dealroom.training.lean import lean_sft_trainer, release_freed_memory
from dealroom.training.lengths import (
    Lengths,
    Row,
    first_turns,
    lengths_of,
    measure,
    with_margin,
)
from dealroom.training.market_trl import MarketSellerEnv, pool_factories
from dealroom.training.models import (
    TrainingSetupError,
    chat_template_kwargs,
    jsonl_values,
    lib,
    load_tokenizer,
    require_train_extra,
    require_vllm,
)
from dealroom.training.runlog import (
    METRICS_FILE,
    OutcomeTally,
    checkpoint_to_resume,
    learned,
    metrics_callback,
    observed_env,
    report_to,
    write_training_record,
)
from dealroom.training.sequences import tokenize
from dealroom.training.settings import Common, GRPOSettings, LoRA, Result, SFTSettings
from dealroom.training.sft import sft_example
from dealroom.training.threads import set_threads
from dealroom.training.trl import BargainToolEnv

log = structlog.get_logger(__name__)

REFERENCE_LEARNER = "linear"
"""Scripted stand-in for the learner when GRPO lengths are measured by playing negotiations."""
REFERENCE_OPPONENT = "boulware"
"""Stand-in for an LLM opponent in that measurement (no model calls before training)."""


# -- data ------------------------------------------------------------------------------------


def read_rows(path: Path) -> list[Row]:
    """The rows of an SFT export (JSONL); one-line errors for unreadable or foreign files."""
    rows: list[Row] = []
    for number, row in jsonl_values(path):
        if not isinstance(row, dict) or "messages" not in row or "tools" not in row:
            raise TrainingSetupError(f"{path}:{number}: not an SFT row (needs messages and tools)")
        rows.append(cast(Row, row))
    if not rows:
        raise TrainingSetupError(f"{path}: no transcripts")
    return rows


def template_rows(
    rows: Iterable[Row],
    arguments: ArgumentsForm = "object",
    max_turns: int | None = None,
    enable_thinking: bool | None = None,
) -> list[Row]:
    """Rows as the trainer feeds them to the chat template: ``messages`` and ``tools`` only,
    tool-call arguments as objects (or JSON strings), optionally cut to the first turns; with
    thinking off, the assistant turns' think blocks stripped."""
    out: list[Row] = []
    for row in rows:
        cut = first_turns(row, max_turns) if max_turns is not None else row
        messages = [with_arguments(m, arguments) for m in cut["messages"]]
        if enable_thinking is False:
            messages = [unthought(m) for m in messages]
        out.append({"messages": messages, "tools": row["tools"]})
    return out


def grpo_rows(settings: GRPOSettings) -> list[Row]:
    """The GRPO dataset: one row per scenario, an empty user ``prompt`` plus what ``reset`` reads.

    ``reset`` returns the seat's briefing and first observation, which TRL appends to the empty
    user message: the same first message as the SFT rows and the served LLM seat.
    """
    return [
        {
            "prompt": [{"role": "user", "content": ""}],
            "seed": settings.scenario_seed,
            "tier": settings.tier,
            "index": index,
            "role": settings.role,
        }
        for index in range(settings.scenarios)
    ]


def reference_rows(settings: GRPOSettings, count: int = 8) -> list[Row]:
    """Conversations of scripted negotiations on the first scenarios of the GRPO dataset."""
    opponent = settings.opponent
    spec = opponent if isinstance(opponent, str) else REFERENCE_OPPONENT
    house: AgentFactory = resolve(spec)
    learner = resolve(REFERENCE_LEARNER)
    seed, rules = settings.scenario_seed, settings.rules
    rows: list[Row] = []
    for index in range(min(count, settings.scenarios)):
        scenario = scenario_at(seed, index, settings.tier)
        pair = (learner, house) if settings.role == "buyer" else (house, learner)
        names = (REFERENCE_LEARNER, spec) if settings.role == "buyer" else (spec, REFERENCE_LEARNER)
        record = play(scenario, *pair, rules=rules, seed=seed, names=names)
        example = sft_example(record, settings.role, seed=seed, rules=rules)
        if example is not None:
            rows.append(example)
    return rows


# -- checks ----------------------------------------------------------------------------------


def sft_max_length(settings: SFTSettings, lengths: Lengths) -> int:
    """The SFT ``max_length``: given (and long enough) or derived."""
    if settings.max_length is None:
        return with_margin(lengths.longest, margin=0.0)
    if settings.max_length < lengths.longest:
        raise TrainingSetupError(
            f"--max-length {settings.max_length} is shorter than the data ({lengths.describe()}): "
            "examples would lose their last turns; raise it, or omit it to use the data's"
        )
    return settings.max_length


def grpo_completion_length(settings: GRPOSettings, lengths: Lengths) -> int:
    """The GRPO ``max_completion_length``: given (and long enough) or derived."""
    needed = lengths.longest_completion
    if settings.max_completion_length is None:
        return with_margin(needed)
    if settings.max_completion_length < needed:
        turns = settings.max_tool_calling_iterations
        scope = "whole negotiations" if turns is None else f"{turns} tool-calling turns"
        raise TrainingSetupError(
            f"--max-completion-length {settings.max_completion_length} is too short for "
            f"{scope} ({lengths.describe()}): tool results count toward it and a cut rollout "
            "loses an action already played; raise it, omit it, or lower "
            "--max-tool-calling-iterations"
        )
    return settings.max_completion_length


# -- trainers --------------------------------------------------------------------------------


def _checkpointing(settings: Common) -> bool:
    return True if settings.gradient_checkpointing is None else settings.gradient_checkpointing


def _memory_check(settings: Common, *, batch: int, length: int, completion: int = 0) -> int:
    """The run's memory estimate on the device it trains on; refused in one line over it."""
    grpo = settings if isinstance(settings, GRPOSettings) else None
    colocated = grpo is not None and grpo.use_vllm and grpo.vllm_mode == "colocate"
    dev = memory.device(grpo.vllm_gpu_memory_utilization if grpo and colocated else None)
    setup = memory.setup_on(
        dev,
        checkpointing=_checkpointing(settings),
        lora=settings.lora is not None,
        reference=grpo is not None and grpo.beta > 0,
    )
    shape = memory.Shape.of(lib("transformers").AutoConfig.from_pretrained(settings.model))
    return memory.check(
        shape,
        setup,
        dev,
        batch=batch,
        length=length,
        completion=completion,
        stage="SFT" if grpo is None else "GRPO",
    )


def _device_args(settings: Common) -> dict[str, Any]:
    torch = lib("torch")
    cuda = torch.cuda.is_available()
    checkpointing = _checkpointing(settings)
    return {
        "use_cpu": not cuda,
        "bf16": cuda and torch.cuda.is_bf16_supported(),
        "gradient_checkpointing": checkpointing,
    }


def _common_args(settings: Common) -> dict[str, Any]:
    return {
        "output_dir": str(settings.output_dir),
        "max_steps": settings.max_steps,
        "learning_rate": settings.learning_rate,
        "gradient_accumulation_steps": settings.gradient_accumulation_steps,
        "logging_steps": settings.logging_steps,
        "seed": settings.seed,
        "report_to": report_to(settings.report_to),
        "save_strategy": "no" if settings.save_steps is None else "steps",
        "save_steps": settings.save_steps or 500,
        "dataloader_num_workers": 0,
        **_device_args(settings),
    }


def _peft_config(lora: LoRA | None) -> Any:
    if lora is None:
        return None
    return lib("peft").LoraConfig(
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )


def build_sft(settings: SFTSettings, rows: Sequence[Row]) -> tuple[Any, Lengths]:
    """A checked ``SFTTrainer`` for ``rows`` (SFT export rows) and the data's lengths."""
    require_train_extra()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    Dataset = lib("datasets").Dataset
    trl = lib("trl")

    thinking = settings.enable_thinking
    tokenizer = load_tokenizer(settings.model, settings.chat_template, thinking)
    data = template_rows(rows, settings.arguments, settings.max_turns, thinking)
    sequences = [tokenize(tokenizer, row, thinking) for row in data]
    if empty := sum(1 for s in sequences if s.written_tokens == 0):
        raise TrainingSetupError(f"{empty} of {len(data)} rows have no assistant turn to train on")
    lengths = lengths_of(sequences)
    max_length = sft_max_length(settings, lengths)
    batch = settings.per_device_train_batch_size or memory.batch_size(lengths.longest, len(data))
    need = _memory_check(settings, batch=batch, length=lengths.longest)
    args = trl.SFTConfig(
        **_common_args(settings),
        per_device_train_batch_size=batch,
        num_train_epochs=settings.num_train_epochs,
        max_length=max_length,
        model_init_kwargs={"attn_implementation": "sdpa"},
    )
    # Tokenized here (dealroom.training.sequences): the served template's text, with labels only
    # on what the model writes; TRL keeps a dataset's own labels.
    dataset = Dataset.from_list([{"input_ids": s.input_ids, "labels": s.labels} for s in sequences])
    release_freed_memory()
    trainer = lean_sft_trainer()(
        model=settings.model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=_peft_config(settings.lora),
    )
    if len(trainer.train_dataset) < len(data):
        raise TrainingSetupError(
            f"TRL dropped {len(data) - len(trainer.train_dataset)} of {len(data)} examples; "
            "check the rows and --max-length"
        )
    log.info(
        "sft.ready",
        lengths=lengths.describe(),
        max_length=max_length,
        rows=len(data),
        batch=batch,
        memory_estimate=memory.gib(need),
    )
    return trainer, lengths


def build_grpo(settings: GRPOSettings, tally: OutcomeTally | None = None) -> tuple[Any, Lengths]:
    """A checked ``GRPOTrainer`` in ``BargainToolEnv`` and the reference lengths; ``tally``
    counts the outcome of every scored rollout."""
    if settings.use_vllm:
        require_vllm()
    require_train_extra()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    Dataset = lib("datasets").Dataset
    trl = lib("trl")
    thinking = settings.enable_thinking
    factory = _environment(settings, tally)
    tokenizer = load_tokenizer(settings.model, settings.chat_template, thinking)
    reference = list(settings.reference) or reference_rows(settings)
    if settings.max_tool_calling_iterations is not None:
        reference = [first_turns(r, settings.max_tool_calling_iterations) for r in reference]
    lengths = measure(tokenizer, template_rows(reference, enable_thinking=thinking), thinking)
    completion = grpo_completion_length(settings, lengths)
    batch = settings.per_device_train_batch_size or settings.num_generations
    need = _memory_check(
        settings, batch=batch, length=lengths.longest_prompt + completion, completion=completion
    )
    args = trl.GRPOConfig(
        **_common_args(settings),
        per_device_train_batch_size=batch,
        num_generations=settings.num_generations,
        max_completion_length=completion,
        max_tool_calling_iterations=settings.max_tool_calling_iterations,
        temperature=settings.temperature,
        beta=settings.beta,
        use_vllm=settings.use_vllm,
        vllm_mode=settings.vllm_mode,
        vllm_gpu_memory_utilization=settings.vllm_gpu_memory_utilization,
        chat_template_kwargs=chat_template_kwargs(thinking) or None,
        model_init_kwargs={"attn_implementation": "sdpa"},
    )
    release_freed_memory()
    try:
        trainer = trl.GRPOTrainer(
            model=settings.model,
            args=args,
            train_dataset=Dataset.from_list(grpo_rows(settings)),
            processing_class=tokenizer,
            environment_factory=factory,
            peft_config=_peft_config(settings.lora),
        )
    except ValueError as exc:
        if "not training-compatible" not in str(exc):
            raise
        # TRL's multi-turn rollouts need a template that renders each turn as a prefix of the
        # next (Qwen3's own drops earlier turns' think blocks) and cannot patch this one.
        raise TrainingSetupError(
            "TRL's GRPO cannot roll out multi-turn tool calls with this chat template (each turn "
            "must render as a prefix of the next); pass --chat-template qwen3_training for a "
            "Qwen3, or a *_training template TRL ships for the model's family"
        ) from None
    log.info(
        "grpo.ready",
        lengths=lengths.describe(),
        max_completion_length=completion,
        memory_estimate=memory.gib(need),
    )
    return trainer, lengths


def _environment(settings: GRPOSettings, tally: OutcomeTally | None) -> Any:
    """The trainer's ``environment_factory``: ``BargainToolEnv``, or ``MarketSellerEnv`` for a
    market's seller (its pool checked here, in one line)."""
    if settings.buyers is None:
        return functools.partial(
            BargainToolEnv if tally is None else observed_env(tally),
            opponent=settings.opponent,
            role=settings.role,
            tier=settings.tier,
            seed=settings.scenario_seed,
            reward=settings.reward,
            rules=settings.rules,
        )
    if settings.role != "seller":
        raise TrainingSetupError("a market trains its seller: the role must be seller")
    if not isinstance(settings.opponent, str):
        raise TrainingSetupError("a market's buyers are scripted specs, not a model")
    if not settings.reference:
        raise TrainingSetupError(
            "a market seller's GRPO needs reference conversations to derive lengths from "
            "(dealroom train grpo --buyers N plays them with a scripted seller; --lengths-from)"
        )
    pool_factories(settings.opponent, settings.buyers)  # AgentSpecError in one line
    return functools.partial(
        MarketSellerEnv if tally is None else observed_env(tally, MarketSellerEnv),
        pool=settings.opponent,
        buyers=settings.buyers,
        tier=settings.tier,
        seed=settings.scenario_seed,
        reward=settings.reward,
        rules=MarketRules(rules=settings.rules),
    )


def finish(
    trainer: Any, settings: Common, lengths: Lengths, seconds: float, *, save: bool = True
) -> Result:
    """Save a plain checkpoint (LoRA merged) with its tokenizer, unless ``save`` is False;
    report the run."""
    history = list(trainer.state.log_history)
    if save:
        model = trainer.model
        if settings.lora is not None:
            model = model.merge_and_unload()
        settings.output_dir.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(settings.output_dir)
        trainer.processing_class.save_pretrained(settings.output_dir)
        if isinstance(settings, GRPOSettings):
            write_training_record(settings.output_dir, settings)
    return Result(
        settings.output_dir,
        trainer.state.global_step,
        seconds,
        history,
        lengths,
        learned=learned(history),
        saved=save,
        threads=int(lib("torch").get_num_threads()),
    )


def _train(trainer: Any, settings: Common, tally: OutcomeTally | None = None) -> float:
    """Train with the metrics file attached, resuming if asked; the seconds it took."""
    import time

    resume = checkpoint_to_resume(settings.resume_from_checkpoint, settings.output_dir)
    trainer.add_callback(metrics_callback(settings.output_dir / METRICS_FILE, tally))
    started = time.perf_counter()
    trainer.train(resume_from_checkpoint=resume)
    return time.perf_counter() - started


def run_sft(settings: SFTSettings, rows: Sequence[Row]) -> Result:
    """Build, train and save."""
    checkpoint_to_resume(settings.resume_from_checkpoint, settings.output_dir)
    set_threads(settings.threads)
    trainer, lengths = build_sft(settings, rows)
    return finish(trainer, settings, lengths, _train(trainer, settings))


def run_grpo(settings: GRPOSettings) -> Result:
    """Build, train, and save unless nothing was learned.

    When every group's rewards were equal in every step, the advantages and the gradient were
    zero and the weights are the starting model's: no checkpoint is written (the result says
    ``learned=False``), so an unchanged model is never presented as trained.
    """
    checkpoint_to_resume(settings.resume_from_checkpoint, settings.output_dir)
    set_threads(settings.threads)
    tally = OutcomeTally()
    trainer, lengths = build_grpo(settings, tally)
    seconds = _train(trainer, settings, tally)
    nothing = learned(trainer.state.log_history) is False
    if nothing:
        log.warning("grpo.nothing_learned", steps=trainer.state.global_step)
    return finish(trainer, settings, lengths, seconds, save=not nothing)

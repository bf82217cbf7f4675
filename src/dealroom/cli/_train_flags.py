"""Flags that ``dealroom train sft`` and ``dealroom train grpo`` share, the thinking switch of
every command that renders for a model, and the settings they build."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dealroom.cli._common import positive_int


def thinking_flag(parser: argparse.ArgumentParser) -> None:
    """``--enable-thinking/--no-enable-thinking``: the chat template's ``enable_thinking``."""
    parser.add_argument(
        "--enable-thinking",
        action=argparse.BooleanOptionalAction,
        help="the chat template's thinking switch (Qwen3's), passed as enable_thinking wherever "
        "the template renders; off, think blocks are stripped from what is stored and trained "
        "on (default: the template's own default)",
    )


def common_flags(parser: argparse.ArgumentParser, *, learning_rate: float) -> None:
    parser.add_argument("--model", required=True, help="checkpoint directory or hub id")
    parser.add_argument(
        "--output-dir", type=Path, required=True, help="where checkpoints and metrics go"
    )
    parser.add_argument(
        "--max-steps", type=positive_int, default=100, help="optimizer steps (default: 100)"
    )
    parser.add_argument(
        "--learning-rate",
        type=float,
        default=learning_rate,
        help=f"peak learning rate (default: {learning_rate:g})",
    )
    parser.add_argument(
        "--per-device-train-batch-size",
        type=positive_int,
        help="rows per step and device (default: sft fits it to memory, grpo uses "
        "--num-generations)",
    )
    parser.add_argument(
        "--gradient-accumulation-steps",
        type=positive_int,
        default=1,
        help="batches summed per optimizer step (default: 1)",
    )
    parser.add_argument(
        "--gradient-checkpointing",
        action=argparse.BooleanOptionalAction,
        help="recompute activations to save memory (default: on; whole negotiations need it)",
    )
    parser.add_argument(
        "--logging-steps",
        type=positive_int,
        default=1,
        help="log (and append to metrics.jsonl) every N steps (default: 1)",
    )
    parser.add_argument(
        "--report-to",
        type=lambda text: tuple(n.strip() for n in text.split(",") if n.strip()) or ("none",),
        default=("none",),
        help="TRL's trackers, comma-separated: none (default), tensorboard, wandb, trackio, "
        "mlflow; every logged step also goes to OUTPUT_DIR/metrics.jsonl",
    )
    parser.add_argument(
        "--save-steps", type=positive_int, help="save a resumable checkpoint every N steps"
    )
    parser.add_argument(
        "--resume-from-checkpoint",
        metavar="DIR|last",
        help="resume from a checkpoint-N directory, or the output directory's last",
    )
    parser.add_argument("--seed", type=int, default=0, help="training seed (default: 0)")
    parser.add_argument(
        "--chat-template", help="replace the model's template: a TRL bundled name or a .jinja"
    )
    parser.add_argument("--use-peft", action="store_true", help="train LoRA adapters (merged)")
    parser.add_argument(
        "--lora-r", type=positive_int, default=16, help="with --use-peft: LoRA rank (default: 16)"
    )
    parser.add_argument(
        "--lora-alpha",
        type=positive_int,
        default=32,
        help="with --use-peft: LoRA scaling alpha (default: 32)",
    )
    thinking_flag(parser)
    parser.add_argument(
        "--threads",
        type=positive_int,
        help="torch's CPU threads (default without a GPU: the idle cores, usable cores minus "
        "the load average, at least 1; OMP_NUM_THREADS is respected)",
    )


def common_settings(args: argparse.Namespace) -> dict[str, Any]:
    from dealroom.training.trainers import LoRA

    return {
        "model": args.model,
        "output_dir": args.output_dir,
        "max_steps": args.max_steps,
        "learning_rate": args.learning_rate,
        "per_device_train_batch_size": args.per_device_train_batch_size,
        "gradient_accumulation_steps": args.gradient_accumulation_steps,
        "gradient_checkpointing": args.gradient_checkpointing,
        "logging_steps": args.logging_steps,
        "report_to": args.report_to,
        "save_steps": args.save_steps,
        "resume_from_checkpoint": args.resume_from_checkpoint,
        "seed": args.seed,
        "chat_template": args.chat_template,
        "threads": args.threads,
        "enable_thinking": args.enable_thinking,
        "lora": LoRA(r=args.lora_r, alpha=args.lora_alpha) if args.use_peft else None,
    }

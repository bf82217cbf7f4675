"""How much memory an SFT run needs, estimated before the first step, and the batch it gets.

A whole negotiation is 15,000 to 25,000 tokens with the demo model's tokenizer. With
gradient checkpointing (on by default), PyTorch's ``sdpa`` attention (linear memory on a CPU
too) and ``dealroom.training.lean`` (the loss projects only the trained positions; freed
memory goes back to the system), what grows with the length is each layer's saved input and
one layer's recomputed activations. Without checkpointing every layer keeps its activations:
about 48 KB per token and layer for a 135M model by count (a forward and backward pass at
2,048 tokens peaked at 6.2 GB), tens of GB for a whole negotiation.

The estimate (float32, AdamW, no mixed precision) is deliberately simple and errs high: for
the demo model it says 3.4 GiB on 2,533-token rows and 5.0 GiB on a 17,704-token whole
transcript, where ``/usr/bin/time -v`` measured 2.8 GB and 3.4 GB (docs/training.md):

- fixed: the runtime (``RUNTIME_BYTES``) plus weights, gradients and two Adam moments
  (16 bytes a parameter; LoRA trains a few adapters, so 4 bytes a weight plus those);
- per token in a batch: the saved activations (one layer's worth plus a layer input per
  layer with checkpointing, every layer's without).

``check`` refuses a run whose estimate exceeds the memory the machine has free, in one line
that names the flag that would make it fit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dealroom.training.models import TrainingSetupError

RUNTIME_BYTES = 1_200_000_000
"""Allowance for Python, torch, transformers and TRL loaded and the datasets built."""
LAYER_FLOATS = 10
"""Floats a layer keeps per token per hidden unit without checkpointing (inputs of the norms,
projections, attention and residuals), plus ``MLP_FLOATS`` per intermediate unit."""
MLP_FLOATS = 4
BATCH_TOKENS = 4096
"""Tokens per batch the default batch size aims at (at least one row): short rows are batched,
whole negotiations go one at a time."""


@dataclass(frozen=True, slots=True)
class Shape:
    """What the estimate reads from a model's config."""

    parameters: int
    layers: int
    hidden: int
    intermediate: int

    @classmethod
    def of(cls, config: Any) -> Shape:
        """The shape of a transformers config (text models; the parameter count from it)."""
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        hidden, layers = int(text.hidden_size), int(text.num_hidden_layers)
        intermediate = int(getattr(text, "intermediate_size", 4 * hidden))
        heads = int(getattr(text, "num_attention_heads", 1))
        kv_heads = int(getattr(text, "num_key_value_heads", heads))
        kv = hidden * kv_heads // max(heads, 1)
        per_layer = 2 * hidden * hidden + 2 * hidden * kv + 3 * hidden * intermediate
        embeddings = int(text.vocab_size) * hidden
        tied = bool(getattr(text, "tie_word_embeddings", True))
        parameters = layers * per_layer + embeddings * (1 if tied else 2)
        return cls(parameters, layers, hidden, intermediate)


def estimate_bytes(shape: Shape, *, tokens: int, checkpointing: bool, lora: bool) -> int:
    """Peak resident bytes of an SFT step on ``tokens`` tokens (batch x length)."""
    state = 4 * shape.parameters if lora else 16 * shape.parameters
    layer = 4 * (LAYER_FLOATS * shape.hidden + MLP_FLOATS * shape.intermediate)
    per_token = layer + 4 * shape.hidden * shape.layers if checkpointing else layer * shape.layers
    return RUNTIME_BYTES + state + tokens * per_token


def batch_size(longest: int, rows: int) -> int:
    """Rows per batch: as many of the longest row as fit in ``BATCH_TOKENS``, at least one."""
    return max(1, min(rows, BATCH_TOKENS // max(longest, 1)))


def available() -> int:
    """Bytes this process can still use: the kernel's MemAvailable, capped by a cgroup limit."""
    free = _meminfo_available()
    limit = _cgroup_room()
    return min(free, limit) if limit is not None else free


def _meminfo_available() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _cgroup_room() -> int | None:
    try:
        raw = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
    except (OSError, ValueError):
        return None
    return None if raw == "max" else int(raw) - used


def gib(n: int) -> str:
    """Bytes as GiB with one decimal."""
    return f"{n / 2**30:.1f} GiB"


def check(
    shape: Shape,
    *,
    batch: int,
    length: int,
    checkpointing: bool,
    lora: bool,
    free: int,
) -> int:
    """The estimate; over ``free``, TrainingSetupError (one line naming a flag that fits)."""
    need = estimate_bytes(shape, tokens=batch * length, checkpointing=checkpointing, lora=lora)
    if need <= free:
        return need
    head = (
        f"this SFT run needs about {gib(need)} (batch {batch} x {length:,} tokens) and the "
        f"machine has {gib(free)} free"
    )
    options: list[tuple[str, bool, bool]] = []  # (flag, checkpointing, lora) with the flag
    if not checkpointing:
        options.append(("--gradient-checkpointing", True, lora))
    if not lora:
        options.append(("--use-peft", checkpointing, True))
    tokens = batch * length
    for flag, with_checkpointing, with_lora in options:
        if (
            estimate_bytes(shape, tokens=tokens, checkpointing=with_checkpointing, lora=with_lora)
            <= free
        ):
            raise TrainingSetupError(f"{head}: {flag} would make it fit")
    if (
        batch > 1
        and estimate_bytes(shape, tokens=length, checkpointing=checkpointing, lora=lora) <= free
    ):
        raise TrainingSetupError(f"{head}: --per-device-train-batch-size 1 would make it fit")
    raise TrainingSetupError(f"{head}: shorten the rows with --max-turns, or free memory")

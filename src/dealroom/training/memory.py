"""How much memory an SFT or GRPO run needs, estimated before the first step, and the batch.

A whole negotiation is 4,000 to 6,500 tokens with the demo model's tokenizer (it was 15,000
to 25,000 while scripted transcripts re-read the whole history at every wake). With
gradient checkpointing (on by default), PyTorch's ``sdpa`` attention (linear memory on a CPU
too) and ``dealroom.training.lean`` (the loss projects only the trained positions; freed
memory goes back to the system), what grows with the length is each layer's saved input and
one layer's recomputed activations. Without checkpointing every layer keeps its activations:
about 48 KB per token and layer for a 135M model by count (a forward and backward pass at
2,048 tokens peaked at 6.2 GB), tens of GB for a whole negotiation.

The estimate (AdamW, weights loaded in float32 as TRL loads them) is deliberately simple and
errs high: for the demo model on a CPU it says 3.4 GiB on 2,533-token rows and 5.0 GiB on a
17,704-token whole transcript, where ``/usr/bin/time -v`` measured 2.8 GB and 3.4 GB
(docs/training.md):

- fixed: the runtime (``RUNTIME_BYTES`` of host memory on a CPU, ``DEVICE_RUNTIME_BYTES`` on a
  GPU) plus weights, gradients and two Adam moments (16 bytes a parameter; LoRA trains a few
  adapters, so 4 bytes a weight plus those), divided among the GPUs of a sharded multi-GPU run
  (ZeRO-3 or FSDP under ``accelerate launch``: ``WORLD_SIZE`` processes); a GRPO reference
  model (``beta`` > 0, full fine-tuning) adds 4 bytes a parameter, sharded the same way;
- per token in a batch: the saved activations (one layer's worth plus a layer input per
  layer with checkpointing, every layer's without), 4 bytes a float, 2 under bf16 autocast
  (a GPU that supports it);
- per completion token in GRPO: its float32 log-probabilities over the vocabulary.

``device`` reads what there is: on a GPU the device's free memory (``torch.cuda.mem_get_info``)
less vLLM's share when it is colocated (``gpu_memory_utilization`` of the device's total); on a
CPU the host's. ``check`` refuses a run whose estimate exceeds it, in one line that names the
flag that would make it fit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dealroom.training.models import TrainingSetupError, lib

RUNTIME_BYTES = 1_200_000_000
"""Allowance for Python, torch, transformers and TRL loaded and the datasets built."""
DEVICE_RUNTIME_BYTES = 2**30
"""Allowance on a GPU for the CUDA context, cuBLAS workspaces and the allocator's slack."""
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
    vocab: int = 0

    @classmethod
    def of(cls, config: Any) -> Shape:
        """The shape of a transformers config (text models; the parameter count from it)."""
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        hidden, layers = int(text.hidden_size), int(text.num_hidden_layers)
        intermediate = int(getattr(text, "intermediate_size", 4 * hidden))
        heads = int(getattr(text, "num_attention_heads", 1))
        kv_heads = int(getattr(text, "num_key_value_heads", heads))
        head_dim = int(getattr(text, "head_dim", None) or hidden // max(heads, 1))
        q, kv = heads * head_dim, kv_heads * head_dim  # Qwen3: head_dim 128 at any width
        per_layer = 2 * hidden * q + 2 * hidden * kv + 3 * hidden * intermediate
        embeddings = int(text.vocab_size) * hidden
        tied = bool(getattr(text, "tie_word_embeddings", True))
        parameters = layers * per_layer + embeddings * (1 if tied else 2)
        return cls(parameters, layers, hidden, intermediate, int(text.vocab_size))


@dataclass(frozen=True, slots=True)
class Setup:
    """How a run trains: what the estimate reads besides the model's shape."""

    checkpointing: bool
    lora: bool
    bf16: bool = False
    """Activations under bf16 autocast (on a GPU that supports it)."""
    gpu: bool = False
    processes: int = 1
    """GPUs training together, the weights and optimizer state sharded among them."""
    reference: bool = False
    """GRPO with ``beta`` > 0 keeps a reference model (LoRA disables its adapters instead)."""


def estimate_bytes(shape: Shape, setup: Setup, *, tokens: int, completion: int = 0) -> int:
    """Peak bytes of a training step on ``tokens`` tokens (batch x length) on one device, of
    which ``completion`` are GRPO completion tokens (scored over the vocabulary)."""
    state = 4 * shape.parameters if setup.lora else 16 * shape.parameters
    if setup.reference and not setup.lora:
        state += 4 * shape.parameters
    width = 2 if setup.bf16 else 4
    layer = width * (LAYER_FLOATS * shape.hidden + MLP_FLOATS * shape.intermediate)
    per_token = (
        layer + width * shape.hidden * shape.layers if setup.checkpointing else layer * shape.layers
    )
    runtime = DEVICE_RUNTIME_BYTES if setup.gpu else RUNTIME_BYTES
    scores = 4 * shape.vocab * completion
    return runtime + state // max(setup.processes, 1) + tokens * per_token + scores


@dataclass(frozen=True, slots=True)
class Device:
    """Where a run trains and the memory it may use there."""

    free: int
    """Bytes free on the device (the host's for a CPU) before the run loads anything."""
    total: int
    gpu: bool = False
    bf16: bool = False
    processes: int = 1
    vllm: int = 0
    """Bytes colocated vLLM takes on the device (``gpu_memory_utilization`` x its total)."""
    utilization: float = 0.0

    @property
    def room(self) -> int:
        """Bytes left for training."""
        return self.free - self.vllm

    def describe(self) -> str:
        """The memory, as the refusal says it."""
        if not self.gpu:
            return f"the machine has {gib(self.free)} free"
        where = "the GPU" if self.processes == 1 else f"each of the {self.processes} GPUs"
        text = f"{where} has {gib(self.free)} free of {gib(self.total)}"
        if self.vllm:
            text += (
                f", {gib(self.vllm)} of it vLLM's (--vllm-gpu-memory-utilization "
                f"{self.utilization:g})"
            )
        return text


def device(vllm_utilization: float | None = None) -> Device:
    """The device the run trains on: the GPU's free memory (``torch.cuda.mem_get_info``)
    when there is one, less colocated vLLM's share; the host's free memory otherwise."""
    torch = lib("torch")
    if not torch.cuda.is_available():
        free = available()
        return Device(free=free, total=free)
    free, total = (int(n) for n in torch.cuda.mem_get_info())
    share = vllm_utilization or 0.0
    return Device(
        free=free,
        total=total,
        gpu=True,
        bf16=bool(torch.cuda.is_bf16_supported()),
        processes=max(int(os.environ.get("WORLD_SIZE") or 1), 1),
        vllm=int(share * total),
        utilization=share,
    )


def setup_on(dev: Device, *, checkpointing: bool, lora: bool, reference: bool = False) -> Setup:
    """The setup of a run with these options on ``dev``."""
    return Setup(
        checkpointing=checkpointing,
        lora=lora,
        bf16=dev.bf16,
        gpu=dev.gpu,
        processes=dev.processes,
        reference=reference,
    )


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
    setup: Setup,
    dev: Device,
    *,
    batch: int,
    length: int,
    completion: int = 0,
    stage: str = "SFT",
) -> int:
    """The estimate for ``batch`` rows of ``length`` tokens (``completion`` of them GRPO
    completion tokens); over the device's room, TrainingSetupError (one line naming a flag
    that fits)."""

    def need(s: Setup, rows: int = batch) -> int:
        return estimate_bytes(shape, s, tokens=rows * length, completion=rows * completion)

    needed = need(setup)
    if needed <= dev.room:
        return needed
    on = "" if setup.processes == 1 else f" on each of {setup.processes} GPUs"
    head = (
        f"this {stage} run needs about {gib(needed)} (batch {batch} x {length:,} tokens"
        f"{', bf16' if setup.bf16 else ''}{on}) and {dev.describe()}"
    )
    options: list[tuple[str, Setup]] = []
    if not setup.checkpointing:
        options.append(("--gradient-checkpointing", replace(setup, checkpointing=True)))
    if not setup.lora:
        options.append(("--use-peft", replace(setup, lora=True)))
    for flag, other in options:
        if need(other) <= dev.room:
            raise TrainingSetupError(f"{head}: {flag} would make it fit")
    if dev.vllm and needed <= dev.free:
        raise TrainingSetupError(
            f"{head}: a lower --vllm-gpu-memory-utilization, or --vllm-mode server (vLLM on "
            "other GPUs), would make it fit"
        )
    if batch > 1 and need(setup, 1) <= dev.room:
        raise TrainingSetupError(f"{head}: --per-device-train-batch-size 1 would make it fit")
    if setup.gpu and setup.processes == 1 and need(replace(setup, processes=8)) <= dev.room:
        raise TrainingSetupError(
            f"{head}: sharded over 8 GPUs (accelerate launch with ZeRO-3 or FSDP) it would fit"
        )
    hint = "--max-turns" if stage == "SFT" else "--max-tool-calling-iterations"
    raise TrainingSetupError(f"{head}: shorten the rows with {hint}, or free memory")

"""The memory estimate for Qwen3 0.6B / 8B / 14B on one 80 GB GPU and on eight, as a table.

    python benchmarks/gpu_memory.py

Computed, not measured: ``dealroom.training.memory.estimate_bytes`` (what ``train sft`` and
``train grpo`` check before the first step) on the models' hub configs, bf16 autocast,
gradient checkpointing on. The GPU has 79 GiB free of 80 GiB; eight GPUs shard the weights and
optimizer state (ZeRO-3 or FSDP under ``accelerate launch``), each with the same free memory.
GRPO generates with colocated vLLM, which takes 0.3 of each GPU (TRL's default). docs/training.md
shows this output; tests/training/test_memory.py holds the two equal.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from dealroom.training.memory import Setup, Shape, estimate_bytes

GIB = 2**30
FREE, TOTAL, VLLM = 79 * GIB, 80 * GIB, 0.3
SFT_TOKENS = 16_384
"""A whole negotiation with Qwen3's tokenizer: a median 12.1k tokens, up to about 15k."""
GRPO_BATCH, GRPO_PROMPT, GRPO_COMPLETION = 2, 1_536, 6_144
"""Rows per device (``--per-device-train-batch-size 2 --gradient-accumulation-steps 4`` keeps
eight generations a group on one GPU), each a prompt and a completion of up to this many
tokens."""
ROLLOUT_TOKENS = GRPO_BATCH * (GRPO_PROMPT + GRPO_COMPLETION)
SCORED_TOKENS = GRPO_BATCH * GRPO_COMPLETION

QWEN3 = {
    # name: (hidden, layers, intermediate, heads, kv heads, tied embeddings), hub config.json
    "Qwen3-0.6B": (1024, 28, 3072, 16, 8, True),
    "Qwen3-8B": (4096, 36, 12288, 32, 8, False),
    "Qwen3-14B": (5120, 40, 17408, 40, 8, False),
}


def shape(name: str) -> Shape:
    hidden, layers, intermediate, heads, kv_heads, tied = QWEN3[name]
    config = SimpleNamespace(
        hidden_size=hidden,
        num_hidden_layers=layers,
        intermediate_size=intermediate,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=128,
        vocab_size=151936,
        tie_word_embeddings=tied,
    )
    return Shape.of(config)


def cell(need: int, room: int) -> str:
    return f"{need / GIB:.1f}" + ("" if need <= room else " (no)")


def table() -> str:
    """The markdown table: GiB per GPU, '(no)' where it exceeds what the GPU leaves."""
    rows = [
        "| model | params | SFT full | SFT LoRA | GRPO full + vLLM | GRPO LoRA + vLLM | GPUs |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in QWEN3:
        s = shape(name)
        for gpus in (1, 8):
            full = Setup(checkpointing=True, lora=False, bf16=True, gpu=True, processes=gpus)
            lora = replace(full, lora=True)
            grpo_room = FREE - int(VLLM * TOTAL)
            rollout = GRPO_BATCH * (GRPO_PROMPT + GRPO_COMPLETION)
            completion = GRPO_BATCH * GRPO_COMPLETION

            def grpo(
                setup: Setup, s: Shape = s, rollout: int = rollout, scored: int = completion
            ) -> int:
                return estimate_bytes(s, setup, tokens=rollout, completion=scored)

            cells = [
                cell(estimate_bytes(s, full, tokens=SFT_TOKENS), FREE),
                cell(estimate_bytes(s, lora, tokens=SFT_TOKENS), FREE),
                cell(grpo(full), grpo_room),
                cell(grpo(lora), grpo_room),
            ]
            rows.append(f"| {name} | {s.parameters / 1e9:.2f} B | {' | '.join(cells)} | {gpus} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())

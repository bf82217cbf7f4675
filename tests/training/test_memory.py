"""The SFT memory estimate: what grows with what, and a refusal that names a flag that fits."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dealroom.training import memory
from dealroom.training.memory import Shape, batch_size, check, estimate_bytes
from dealroom.training.models import TrainingSetupError

# SmolLM2-135M's config (the demo model)
SMOL = Shape.of(
    SimpleNamespace(
        hidden_size=576,
        num_hidden_layers=30,
        intermediate_size=1536,
        num_attention_heads=9,
        num_key_value_heads=3,
        vocab_size=49152,
        tie_word_embeddings=True,
    )
)
GB = 10**9


def test_the_demo_models_shape_counts_its_135m_parameters() -> None:
    assert 130e6 < SMOL.parameters < 140e6


def test_checkpointing_and_lora_lower_the_estimate_and_length_raises_it() -> None:
    plain = estimate_bytes(SMOL, tokens=20_000, checkpointing=False, lora=False)
    checkpointed = estimate_bytes(SMOL, tokens=20_000, checkpointing=True, lora=False)
    assert checkpointed < plain / 5
    assert estimate_bytes(SMOL, tokens=20_000, checkpointing=True, lora=True) < checkpointed
    assert estimate_bytes(SMOL, tokens=25_000, checkpointing=True, lora=False) > checkpointed


def test_whole_negotiations_fit_in_8_gb_with_the_defaults() -> None:
    assert estimate_bytes(SMOL, tokens=25_000, checkpointing=True, lora=False) < 8 * GB


def test_a_run_over_the_free_memory_names_the_flag_that_fits() -> None:
    args = {"batch": 1, "length": 24_000, "lora": False}
    with pytest.raises(TrainingSetupError, match=r"--gradient-checkpointing would make it fit$"):
        check(SMOL, checkpointing=False, free=8 * GB, **args)
    full = estimate_bytes(SMOL, tokens=24_000, checkpointing=True, lora=False)
    lora = estimate_bytes(SMOL, tokens=24_000, checkpointing=True, lora=True)
    with pytest.raises(TrainingSetupError, match="--use-peft would make it fit") as caught:
        check(SMOL, checkpointing=True, free=(full + lora) // 2, **args)
    assert "\n" not in str(caught.value) and "24,000 tokens" in str(caught.value)
    with pytest.raises(TrainingSetupError, match="--max-turns"):
        check(SMOL, checkpointing=True, free=1 * GB, **args)
    assert check(SMOL, checkpointing=True, free=64 * GB, **args) > 0


def test_a_big_batch_is_told_to_shrink() -> None:
    with pytest.raises(TrainingSetupError, match="--per-device-train-batch-size 1"):
        check(SMOL, batch=8, length=12_000, checkpointing=True, lora=True, free=5 * GB)


def test_short_rows_are_batched_and_whole_negotiations_go_one_at_a_time() -> None:
    assert batch_size(longest=20_000, rows=12) == 1
    assert batch_size(longest=1_000, rows=12) == memory.BATCH_TOKENS // 1_000
    assert batch_size(longest=1_000, rows=2) == 2


def test_the_free_memory_is_read_from_the_machine() -> None:
    assert 0 < memory.available() < 2**50

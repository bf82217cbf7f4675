"""The memory estimate: what grows with what, the device it reads (the GPU's memory when there
is one, mocked here), and a refusal that names a flag that fits."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from dealroom.training import memory
from dealroom.training.memory import Device, Setup, Shape, batch_size, check, estimate_bytes
from dealroom.training.models import TrainingSetupError, lib

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
GIB = 2**30
FULL = Setup(checkpointing=True, lora=False)
PLAIN = Setup(checkpointing=False, lora=False)
LORA = Setup(checkpointing=True, lora=True)


def cpu(free: int) -> Device:
    return Device(free=free, total=free)


def test_the_demo_models_shape_counts_its_135m_parameters() -> None:
    assert 130e6 < SMOL.parameters < 140e6


def test_checkpointing_and_lora_lower_the_estimate_and_length_raises_it() -> None:
    plain = estimate_bytes(SMOL, PLAIN, tokens=20_000)
    checkpointed = estimate_bytes(SMOL, FULL, tokens=20_000)
    assert checkpointed < plain / 5
    assert estimate_bytes(SMOL, LORA, tokens=20_000) < checkpointed
    assert estimate_bytes(SMOL, FULL, tokens=25_000) > checkpointed


def test_bf16_gpus_sharding_a_reference_model_and_completions_move_the_estimate() -> None:
    gpu = Setup(checkpointing=True, lora=False, gpu=True)
    base = estimate_bytes(SMOL, gpu, tokens=20_000)
    assert estimate_bytes(SMOL, Setup(True, False, bf16=True, gpu=True), tokens=20_000) < base
    sharded = estimate_bytes(SMOL, Setup(True, False, gpu=True, processes=8), tokens=20_000)
    assert base - sharded == 16 * SMOL.parameters - 16 * SMOL.parameters // 8
    with_reference = Setup(True, False, gpu=True, reference=True)
    assert estimate_bytes(SMOL, with_reference, tokens=20_000) - base == 4 * SMOL.parameters
    scored = estimate_bytes(SMOL, gpu, tokens=20_000, completion=1_000)
    assert scored - base == 4 * SMOL.vocab * 1_000


def test_whole_negotiations_fit_in_8_gb_with_the_defaults() -> None:
    assert estimate_bytes(SMOL, FULL, tokens=25_000) < 8 * GB


def test_a_run_over_the_free_memory_names_the_flag_that_fits() -> None:
    with pytest.raises(TrainingSetupError, match=r"--gradient-checkpointing would make it fit$"):
        check(SMOL, PLAIN, cpu(8 * GB), batch=1, length=24_000)
    full = estimate_bytes(SMOL, FULL, tokens=24_000)
    lora = estimate_bytes(SMOL, LORA, tokens=24_000)
    with pytest.raises(TrainingSetupError, match="--use-peft would make it fit") as caught:
        check(SMOL, FULL, cpu((full + lora) // 2), batch=1, length=24_000)
    assert "\n" not in str(caught.value) and "24,000 tokens" in str(caught.value)
    assert "the machine has" in str(caught.value)
    with pytest.raises(TrainingSetupError, match="--max-turns"):
        check(SMOL, FULL, cpu(1 * GB), batch=1, length=24_000)
    with pytest.raises(TrainingSetupError, match=r"this GRPO run.*--max-tool-calling-iterations"):
        check(SMOL, FULL, cpu(1 * GB), batch=1, length=24_000, stage="GRPO")
    assert check(SMOL, FULL, cpu(64 * GB), batch=1, length=24_000) > 0


def test_a_big_batch_is_told_to_shrink() -> None:
    with pytest.raises(TrainingSetupError, match="--per-device-train-batch-size 1"):
        check(SMOL, LORA, cpu(5 * GB), batch=8, length=12_000)


def test_short_rows_are_batched_and_whole_negotiations_go_one_at_a_time() -> None:
    assert batch_size(longest=20_000, rows=12) == 1
    assert batch_size(longest=1_000, rows=12) == memory.BATCH_TOKENS // 1_000
    assert batch_size(longest=1_000, rows=2) == 2


def test_the_free_memory_is_read_from_the_machine() -> None:
    assert 0 < memory.available() < 2**50


# Qwen3-8B's config (hub: Qwen/Qwen3-8B)
QWEN3_8B = Shape.of(
    SimpleNamespace(
        hidden_size=4096,
        num_hidden_layers=36,
        intermediate_size=12288,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=151936,
        tie_word_embeddings=False,
    )
)


@pytest.fixture
def h100(monkeypatch: pytest.MonkeyPatch) -> None:
    """A mocked CUDA device: an 80 GB GPU with 79 GiB free, bf16, one process. torch itself is
    stood in for where the check reads it (``memory.lib``), so the test needs no train extra."""
    cuda = SimpleNamespace(
        is_available=lambda: True,
        is_bf16_supported=lambda *a, **k: True,  # pyright: ignore[reportUnknownLambdaType]
        mem_get_info=lambda *a: (79 * GIB, 80 * GIB),  # pyright: ignore[reportUnknownLambdaType]
        device_count=lambda: 1,
    )
    real = memory.lib
    monkeypatch.setattr(
        memory, "lib", lambda name: SimpleNamespace(cuda=cuda) if name == "torch" else real(name)
    )
    monkeypatch.delenv("WORLD_SIZE", raising=False)


def test_the_qwen3_8b_shape_counts_its_8b_parameters() -> None:
    assert 8.0e9 < QWEN3_8B.parameters < 8.4e9


@pytest.mark.usefixtures("h100")
def test_on_a_gpu_the_check_reads_the_devices_memory_not_the_hosts() -> None:
    dev = memory.device()
    assert (dev.gpu, dev.bf16, dev.processes) == (True, True, 1)
    assert (dev.free, dev.total) == (79 * GIB, 80 * GIB)
    full = memory.setup_on(dev, checkpointing=True, lora=False)
    with pytest.raises(TrainingSetupError) as caught:
        check(QWEN3_8B, full, dev, batch=1, length=4_096)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("this SFT run needs about 124.9 GiB (batch 1 x 4,096 tokens, bf16)")
    assert "the GPU has 79.0 GiB free of 80.0 GiB: --use-peft would make it fit" in message
    lora = memory.setup_on(dev, checkpointing=True, lora=True)
    assert check(QWEN3_8B, lora, dev, batch=1, length=4_096) < 79 * GIB


@pytest.mark.usefixtures("h100")
def test_colocated_vllm_takes_its_share_of_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    dev = memory.device(vllm_utilization=0.3)
    assert dev.vllm == int(0.3 * 80 * GIB) and dev.room == 79 * GIB - dev.vllm
    lora = memory.setup_on(dev, checkpointing=True, lora=True)
    need = estimate_bytes(QWEN3_8B, lora, tokens=8 * 6_000, completion=8 * 4_000)
    assert dev.room < need <= dev.free
    with pytest.raises(TrainingSetupError, match=r"24.0 GiB of it vLLM's .*--vllm-mode server"):
        check(QWEN3_8B, lora, dev, batch=8, length=6_000, completion=4_000, stage="GRPO")
    monkeypatch.setenv("WORLD_SIZE", "8")
    sharded = memory.device()
    assert sharded.processes == 8 and sharded.vllm == 0
    full = memory.setup_on(sharded, checkpointing=True, lora=False)
    assert check(QWEN3_8B, full, sharded, batch=1, length=4_096) < 79 * GIB


@pytest.mark.train
@pytest.mark.usefixtures("h100")
def test_sft_and_grpo_check_the_gpu_before_loading_the_model(tmp_path: Path) -> None:
    """The trainers' check, from a Qwen3-8B config alone (no weights): refused on the mocked
    GPU for full SFT, accepted with LoRA; GRPO with colocated vLLM is told about vLLM's share."""
    pytest.importorskip("transformers")  # the config: with the train extra (pytest -m train)
    from dealroom.training.trainers import GRPOSettings, LoRA, SFTSettings, _memory_check  # pyright: ignore[reportPrivateUsage]

    config = lib("transformers").Qwen3Config(
        hidden_size=4096,
        num_hidden_layers=36,
        intermediate_size=12288,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=151936,
        tie_word_embeddings=False,
    )
    config.save_pretrained(tmp_path)
    model = str(tmp_path)
    sft = SFTSettings(model=model, output_dir=tmp_path / "out")
    with pytest.raises(TrainingSetupError, match=r"the GPU has 79.0 GiB free of 80.0 GiB"):
        _memory_check(sft, batch=1, length=4_096)
    lora = SFTSettings(model=model, output_dir=tmp_path / "out", lora=LoRA())
    assert _memory_check(lora, batch=1, length=4_096) < 79 * GIB
    grpo = GRPOSettings(model=model, output_dir=tmp_path / "out", lora=LoRA(), use_vllm=True)
    with pytest.raises(TrainingSetupError, match=r"this GRPO run .* of it vLLM's"):
        _memory_check(grpo, batch=8, length=6_000, completion=4_000)


def test_the_docs_table_is_the_estimates_output() -> None:
    from benchmark_support import load_benchmark

    table = load_benchmark("gpu_memory").table()
    docs = (Path(__file__).resolve().parents[2] / "docs" / "training.md").read_text()
    assert table in docs
    assert "| Qwen3-8B | 8.19 B | 130.3 (no) | 38.8 |" in table  # full SFT needs more than 1 GPU

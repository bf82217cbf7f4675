"""The lean SFT loss is the model's own loss, computed on the trained positions only."""

from __future__ import annotations

from typing import Any

import pytest

from dealroom.training.lean import lean_loss, release_freed_memory, trained_positions

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def tiny_model() -> object:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=97,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    return transformers.LlamaForCausalLM(config)


def batch() -> dict[str, object]:
    ids = torch.randint(0, 97, (2, 40))
    labels = ids.clone()
    labels[0, :25] = -100  # a prompt, then the model's turn
    labels[1, :10] = -100
    labels[1, 20:30] = -100  # a tool result between two turns
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


def test_only_positions_whose_next_token_is_trained_are_projected() -> None:
    labels = torch.tensor([[-100, -100, 5, 6, -100, 7]])
    assert trained_positions(labels).tolist() == [1, 2, 4]


@pytest.mark.slow
def test_the_lean_loss_and_its_gradient_are_the_models_own() -> None:
    model: Any = tiny_model()
    inputs: Any = batch()
    own = model(**inputs).loss
    own.backward()
    expected = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    loss, correct, counted = lean_loss(model, dict(inputs))
    loss.backward()
    assert loss.item() == pytest.approx(own.item(), rel=1e-5)
    assert counted.item() == int((inputs["labels"][:, 1:] != -100).sum())
    assert 0 <= correct.item() <= counted.item()
    for name, parameter in model.named_parameters():
        assert torch.allclose(parameter.grad, expected[name], atol=1e-6), name


def test_the_trainer_s_token_count_normalises_the_loss() -> None:
    model = tiny_model()
    inputs = batch()
    per_token, _, counted = lean_loss(model, dict(inputs))
    halved, _, _ = lean_loss(model, dict(inputs), num_items_in_batch=2 * counted)
    assert halved.item() == pytest.approx(per_token.item() / 2, rel=1e-5)


def test_freed_memory_release_is_set_on_glibc() -> None:
    assert isinstance(release_freed_memory(), bool)

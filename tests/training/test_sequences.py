"""Training sequences: the served rendering, cut into what the model read and what it wrote.

A toy tokenizer (one token per character, a template in the shape of a chat template) pins the
logic without transformers; tests/training/test_trl_real.py checks it against TRL's own rollout.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dealroom.engine.match import play
from dealroom.play.registry import resolve
from dealroom.protocol.generator import scenario_at
from dealroom.training.lengths import measure
from dealroom.training.sequences import NotPrefixConsistent, pieces, tokenize
from dealroom.training.sft import sft_example


class ToyTokenizer:
    """``<role>content<e>`` per message; tool calls as JSON; ``<assistant>`` as the generation
    prompt. ``count_turns`` makes the first message depend on the whole conversation, the way
    a template that is not prefix-consistent does."""

    eos_token = "<e>"

    def __init__(self, *, count_turns: bool = False) -> None:
        self.count_turns = count_turns

    def apply_chat_template(
        self,
        messages: list[dict[str, Any]],
        tools: Any = None,
        tokenize: bool = False,
        add_generation_prompt: bool = False,
    ) -> str:
        assert not tokenize
        head = f"[{len(messages)} messages]" if self.count_turns else ""
        text = head + f"<tools>{len(tools or [])}<e>\n"
        for message in messages:
            body = message.get("content") or ""
            for call in message.get("tool_calls") or []:
                body += json.dumps(call["function"])
            text += f"<{message['role']}>{body}<e>\n"
        return text + ("<assistant>" if add_generation_prompt else "")

    def __call__(self, texts: list[str], add_special_tokens: bool) -> dict[str, Any]:
        assert not add_special_tokens
        return {"input_ids": [[ord(c) for c in text] for text in texts]}


def _row() -> dict[str, Any]:
    record = play(
        scenario_at(0, 3, "mid"),
        resolve("linear"),
        resolve("boulware"),
        names=("linear", "boulware"),
    )
    example = sft_example(record, "buyer")
    assert example is not None
    return example


def _text(ids: list[int]) -> str:
    return "".join(chr(i) for i in ids)


def test_pieces_rebuild_the_served_rendering_and_mark_each_assistant_turn() -> None:
    tokenizer, row = ToyTokenizer(), _row()
    cut = pieces(tokenizer, row)
    full = tokenizer.apply_chat_template(row["messages"], tools=row["tools"])
    assert "".join(p.text for p in cut) == full
    written = [p.text for p in cut if p.written]
    assistants = [m for m in row["messages"] if m["role"] == "assistant"]
    assert len(written) == len(assistants)
    for text, message in zip(written, assistants, strict=True):
        assert text == json.dumps(message["tool_calls"][0]["function"]) + "<e>"
    assert not cut[-1].written  # the last tool result is read, not written


def test_labels_cover_exactly_what_the_model_writes() -> None:
    tokenizer, row = ToyTokenizer(), _row()
    sequence = tokenize(tokenizer, row)
    assert len(sequence.labels) == len(sequence.input_ids)
    learned = _text([label for label in sequence.labels if label != -100])
    assert learned == "".join(p.text for p in pieces(tokenizer, row) if p.written)
    first_prompt = tokenizer.apply_chat_template(
        row["messages"][:1], tools=row["tools"], add_generation_prompt=True
    )
    assert _text(sequence.input_ids[: sequence.prompt_tokens]) == first_prompt
    assert sequence.written_tokens == len(learned)


def test_lengths_are_the_sequences_lengths() -> None:
    tokenizer, row = ToyTokenizer(), _row()
    sequence = tokenize(tokenizer, row)
    lengths = measure(tokenizer, [row])
    assert lengths.longest == len(sequence.input_ids)
    assert lengths.longest_prompt == sequence.prompt_tokens
    assert lengths.longest_completion == len(sequence.input_ids) - sequence.prompt_tokens


def test_a_template_that_is_not_prefix_consistent_is_refused() -> None:
    with pytest.raises(NotPrefixConsistent, match="renders turn 1 differently") as caught:
        pieces(ToyTokenizer(count_turns=True), _row())
    assert caught.value.code == "not_prefix_consistent"
    assert "\n" not in str(caught.value)

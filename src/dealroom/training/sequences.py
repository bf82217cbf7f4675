"""Token sequences to train on: a conversation exactly as the model reads and writes it when served.

A served model (and a GRPO rollout in TRL) sees the prompt rendered by its chat template with the
generation prompt, writes one assistant turn up to and including the end-of-turn token, then
reads the template's rendering of the tool results up to the next generation prompt, and so on.
TRL builds a rollout by concatenating exactly those pieces (prompt ids, generated ids, tool suffix
ids). A training sequence here is the same: the conversation rendered once in the served
template, cut at each turn's generation prompt and end of turn, each piece tokenized on its own,
and only the pieces the model wrote count toward the loss.

Rows are tokenized here, not by TRL's SFTTrainer, for two reasons:

- datasets' Arrow storage unifies the nested structs of different messages, tool calls and tool
  schemas, filling the keys one does not have with nulls: ``get_state`` would be trained with
  arguments ``{"price": null, "offer_id": null, ...}`` and every tool schema with the other
  tools' parameters. Only flat token lists cross into the dataset.
- TRL's training variant of a template (``{% generation %}`` markers) can render turns
  differently from the served one (Qwen3's adds an empty think block to every assistant turn),
  which would teach the model text it never reads back.

A template that renders an earlier turn differently once later turns exist (turn k's prompt is
not a prefix of the whole conversation) cannot be trained on faithfully: ``NotPrefixConsistent``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dealroom.training.models import TrainingSetupError, chat_template_kwargs

Row = dict[str, Any]
"""A conversation row: ``{"messages": [...], "tools": [...]}`` (the SFT export's format)."""


class NotPrefixConsistent(TrainingSetupError):
    """The chat template renders a conversation's earlier turns differently once later turns
    follow, so no single sequence is what the model read at every turn."""

    kind = "not_prefix_consistent"


@dataclass(frozen=True, slots=True)
class Piece:
    """A stretch of the rendered conversation: read by the model, or written by it."""

    text: str
    written: bool


@dataclass(frozen=True, slots=True)
class TrainingSequence:
    """One conversation's tokens and labels (-100 where the model only reads)."""

    input_ids: list[int]
    labels: list[int]
    prompt_tokens: int
    """Tokens before the model's first turn (TRL's GRPO prompt)."""

    @property
    def written_tokens(self) -> int:
        return sum(1 for label in self.labels if label != -100)


def _render(
    tokenizer: Any,
    messages: Sequence[Row],
    tools: Any,
    *,
    generation: bool,
    enable_thinking: bool | None = None,
) -> str:
    return tokenizer.apply_chat_template(
        list(messages),
        tools=tools,
        tokenize=False,
        add_generation_prompt=generation,
        **chat_template_kwargs(enable_thinking),
    )


def pieces(tokenizer: Any, row: Row, enable_thinking: bool | None = None) -> list[Piece]:
    """``row`` rendered in the tokenizer's (served) template and cut into what the model read
    and what it wrote: each assistant turn runs from its generation prompt to the end of turn
    (``tokenizer.eos_token``, where TRL's rollouts stop and cut tool suffixes)."""
    messages, tools = row["messages"], row.get("tools")
    full = _render(tokenizer, messages, tools, generation=False, enable_thinking=enable_thinking)
    end_of_turn = tokenizer.eos_token
    out: list[Piece] = []
    position = 0
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        prompt = _render(
            tokenizer, messages[:i], tools, generation=True, enable_thinking=enable_thinking
        )
        if not full.startswith(prompt) or len(prompt) < position:
            hint = (
                "--chat-template qwen3_training: with thinking off, Qwen3's own template drops "
                "the empty think block from earlier turns"
                if enable_thinking is False
                else "--chat-template qwen3"
            )
            raise NotPrefixConsistent(
                f"the chat template renders turn {i} differently once later turns follow; SFT "
                f"would train on a context the model never reads ({hint})"
            )
        stop = full.find(end_of_turn, len(prompt))
        if stop < 0:
            raise NotPrefixConsistent(f"turn {i} has no end-of-turn token {end_of_turn!r}")
        stop += len(end_of_turn)
        out.append(Piece(full[position : len(prompt)], written=False))
        out.append(Piece(full[len(prompt) : stop], written=True))
        position = stop
    if position < len(full):
        out.append(Piece(full[position:], written=False))
    return out


def tokenize(tokenizer: Any, row: Row, enable_thinking: bool | None = None) -> TrainingSequence:
    """``row``'s training sequence: each piece tokenized on its own, as TRL concatenates them."""
    cut = pieces(tokenizer, row, enable_thinking)
    encoded = tokenizer([piece.text for piece in cut], add_special_tokens=False)["input_ids"]
    input_ids: list[int] = []
    labels: list[int] = []
    prompt_tokens: int | None = None
    for piece, ids in zip(cut, encoded, strict=True):
        if piece.written and prompt_tokens is None:
            prompt_tokens = len(input_ids)
        input_ids.extend(ids)
        labels.extend(ids if piece.written else [-100] * len(ids))
    if prompt_tokens is None:
        prompt_tokens = len(input_ids)
    return TrainingSequence(input_ids, labels, prompt_tokens)

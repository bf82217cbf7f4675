"""Token lengths of negotiation conversations, so trainer lengths come from the data.

A whole negotiation is long: the briefing and the tool schemas alone are over a thousand tokens,
and with TRL's environment loop every tool result counts toward ``max_completion_length``. TRL's
defaults (SFT ``max_length`` 1024, GRPO ``max_completion_length`` 512) then drop every SFT
example or cut rollouts short, and a cut rollout loses an action that was already played. These
functions measure conversations in the model's own chat template; the trainers derive their
defaults from them and refuse settings that are too small.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dealroom.training.sequences import Row, TrainingSequence, tokenize


@dataclass(frozen=True, slots=True)
class Lengths:
    """Token counts over a set of conversations."""

    count: int
    longest: int
    """Longest whole conversation (SFT's ``max_length`` must reach it)."""
    longest_prompt: int
    """Longest prompt: system and first user message, with the tools and generation prompt."""
    longest_completion: int
    """Longest completion: everything after the prompt, tool results included (GRPO's budget)."""
    median_completion: int

    def describe(self) -> str:
        """One line for logs and errors."""
        return (
            f"{self.count} conversations: up to {self.longest:,} tokens, prompts up to "
            f"{self.longest_prompt:,}, completions up to {self.longest_completion:,} "
            f"(median {self.median_completion:,})"
        )


def first_turns(row: Row, turns: int) -> Row:
    """The row cut after its ``turns``-th assistant message and that message's tool results."""
    messages = row["messages"]
    seen, end = 0, len(messages)
    for i, message in enumerate(messages):
        if message["role"] == "assistant":
            seen += 1
            if seen > turns:
                end = i
                break
    return {**row, "messages": list(messages[:end])}


def measure(tokenizer: Any, rows: Sequence[Row], enable_thinking: bool | None = None) -> Lengths:
    """Token lengths of ``rows`` as the model reads them: the training sequences of
    ``dealroom.training.sequences`` (the served template; the prompt is what comes before the
    model's first turn)."""
    if not rows:
        raise ValueError("no conversations to measure")
    return lengths_of([tokenize(tokenizer, row, enable_thinking) for row in rows])


def lengths_of(sequences: Sequence[TrainingSequence]) -> Lengths:
    """Lengths of sequences already tokenized."""
    if not sequences:
        raise ValueError("no conversations to measure")
    totals = [len(s.input_ids) for s in sequences]
    prompts = [s.prompt_tokens for s in sequences]
    completions = [total - prompt for total, prompt in zip(totals, prompts, strict=True)]
    return Lengths(
        count=len(sequences),
        longest=max(totals),
        longest_prompt=max(prompts),
        longest_completion=max(completions),
        median_completion=int(statistics.median(completions)),
    )


def with_margin(tokens: int, margin: float = 0.25, multiple: int = 64) -> int:
    """``tokens`` plus ``margin``, rounded up to a multiple of ``multiple``."""
    padded = int(tokens * (1.0 + margin))
    return -(-padded // multiple) * multiple

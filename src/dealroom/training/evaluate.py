"""TRL's GRPO rollout loop as a function: one negotiation played exactly as a rollout plays it.

``rollout`` plays ``BargainToolEnv`` the way ``GRPOTrainer``'s tool loop does: the prompt is the
seat's briefing as the only user message, the tools are ``function_schemas(rules)``, each
completion's tool calls run on the environment's methods and their texts come back as ``tool``
messages, a failing call reads ``{'error': '...'}`` (TRL's form), and the rollout ends when the
model answers without a tool call. It is the reference the one model seat is held to
(``tests/test_model_seat_parity.py``: the tournament's ``llm:`` seat sends the same requests);
``dealroom train evaluate`` measures a served checkpoint with that seat, as a tournament with one
learner (``dealroom.cli.train_evaluate``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from dealroom.engine.market import market_record
from dealroom.engine.match import record_from
from dealroom.protocol.market_referee import MarketRecord
from dealroom.protocol.market_seat import market_tools
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.tools import function_schemas
from dealroom.training.market_trl import MarketSellerEnv
from dealroom.training.trl import BargainToolEnv

ChatMessage = dict[str, Any]
Complete = Callable[[Sequence[ChatMessage], Sequence[Mapping[str, Any]]], "Completion"]
"""One model call: the conversation so far and the tools, to the assistant's reply."""

MAX_ITERATIONS = 100
"""Tool-calling turns per negotiation when none is given: ``get_state`` costs no clock time, so
a model that keeps calling it would otherwise never end."""


@dataclass(frozen=True, slots=True)
class Completion:
    """An assistant reply: its text, its tool calls (arguments as objects, or the raw string
    when it is not a JSON object) and the tokens it cost."""

    content: str
    tool_calls: tuple[tuple[str, dict[str, Any] | str], ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0


Rec = TypeVar("Rec", NegotiationRecord, MarketRecord)
"""A game's record: a negotiation's, or a market's."""


@dataclass(slots=True)
class Rollout(Generic[Rec]):
    """One negotiation (or market) as the model played it."""

    messages: list[ChatMessage]
    tools: list[dict[str, Any]]
    record: Rec
    reward: float
    calls: int = 0
    tool_errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    iterations_hit: bool = False


def rollout(
    env: BargainToolEnv,
    complete: Complete,
    row: Mapping[str, Any],
    *,
    names: tuple[str, str],
    max_iterations: int | None = None,
) -> Rollout[NegotiationRecord]:
    """Play one negotiation as TRL's GRPO tool loop does: ``reset(**row)`` is appended to the
    row's prompt text as the user message, every tool call of a reply is run in order, and the
    loop ends on a reply without tool calls, after ``max_iterations`` tool-calling turns, or
    once the negotiation is over. The environment then plays it out and scores it."""
    opened = env.reset(**row)
    seat = env.seat
    assert seat is not None
    tools = function_schemas(env.rules)

    def score() -> tuple[NegotiationRecord, float]:
        reward = env.get_reward()
        return record_from(seat.referee, names), reward

    return tool_loop(
        env, complete, row, opened, tools, lambda: not seat.referee.is_open, score, max_iterations
    )


def market_rollout(
    env: MarketSellerEnv,
    complete: Complete,
    row: Mapping[str, Any],
    *,
    seller: str = "model",
    max_iterations: int | None = None,
) -> Rollout[MarketRecord]:
    """``rollout`` for the market seller (``MarketSellerEnv``): TRL's loop, the tools TRL reads
    from the environment's methods (``market_tools``), the seller's reward and the market's
    record (``seller`` names the seat's player)."""
    opened = env.reset(**row)
    seat = env.seat
    assert seat is not None
    tools = market_tools(env.rules)

    def score() -> tuple[MarketRecord, float]:
        reward = env.get_reward()
        return market_record(seat.room, (seller, env.pool)), reward

    return tool_loop(env, complete, row, opened, tools, lambda: seat.over, score, max_iterations)


def tool_loop(
    env: object,
    complete: Complete,
    row: Mapping[str, Any],
    opened: str,
    tools: list[dict[str, Any]],
    over: Callable[[], bool],
    score: Callable[[], tuple[Rec, float]],
    max_iterations: int | None = None,
) -> Rollout[Rec]:
    """TRL's tool loop on any tool environment ``env`` already reset (``opened``: what its
    ``reset`` returned), until a reply without tool calls, the iteration limit or ``over``;
    then ``score`` plays the game out and gives its record and reward."""
    prompt = row.get("prompt") or [{"role": "user", "content": ""}]
    messages: list[ChatMessage] = [{**prompt[-1], "content": prompt[-1]["content"] + opened}]
    table = {
        schema["function"]["name"]: getattr(env, schema["function"]["name"]) for schema in tools
    }
    limit = MAX_ITERATIONS if max_iterations is None else max_iterations
    calls = errors = input_tokens = output_tokens = iterations = 0
    hit = False
    while True:
        reply = complete(messages, tools)
        calls += 1
        input_tokens += reply.input_tokens
        output_tokens += reply.output_tokens
        messages.append(_assistant(reply, calls))
        if not reply.tool_calls:
            break
        if iterations >= limit:
            hit = True
            break
        iterations += 1
        for call, (name, arguments) in zip(
            messages[-1]["tool_calls"], reply.tool_calls, strict=True
        ):
            text, failed = _run(table, name, arguments)
            errors += failed
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "name": name, "content": text}
            )
        if over():
            break
    record, reward = score()
    return Rollout(
        messages=messages,
        tools=tools,
        record=record,
        reward=reward,
        calls=calls,
        tool_errors=errors,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        iterations_hit=hit,
    )


def _run(
    table: Mapping[str, Callable[..., str]], name: str, arguments: dict[str, Any] | str
) -> tuple[str, bool]:
    """One call as TRL runs it: a failure becomes the text ``{'error': '...'}``."""
    try:
        if name not in table:
            raise ValueError(f"Tool {name} not found.")
        if not isinstance(arguments, dict):
            raise ValueError(f"arguments are not a JSON object: {arguments!r}")
        return str(table[name](**arguments)), False
    except Exception as exc:  # TRL turns every failure of a tool into the model's text
        return str({"error": str(exc)}), True


def _assistant(reply: Completion, n: int) -> ChatMessage:
    message: ChatMessage = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            for i, (name, arguments) in enumerate(reply.tool_calls)
        ]
    return message

"""Evaluate a checkpoint on the conversation it was trained on: TRL's rollout loop, as a benchmark.

``dealroom train grpo`` trains in ``BargainToolEnv`` through TRL's tool loop: the prompt is the
seat's briefing as the only user message, the tools are ``function_schemas(rules)``, each
completion's tool calls run on the environment's methods and their texts come back as ``tool``
messages, a failing call reads ``{'error': '...'}`` (TRL's form), and the rollout ends when the
model answers without a tool call. ``evaluate`` plays exactly that loop against any opponent,
with the model behind an OpenAI-compatible endpoint (``dealroom train serve``, vLLM, an API), on
scenarios the model was not trained on, and stores every negotiation with the model's
conversation in a results store (``dealroom report`` ranks it, ``export-sft`` exports it).

The built-in ``llm:MODEL`` seat of ``dealroom tournament`` reads another conversation (a system
message on how its turns work, a user message at each wake, the MCP tools' schemas, thinking
charged per model call): right for benchmarking frontier models, not for measuring what training
changed. docs/training.md says when to use which.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from dealroom.engine.match import record_from
from dealroom.protocol import DEFAULT_RULES, Role, Rules, Tier
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.tools import function_schemas, with_arguments
from dealroom.store.results import ResultsStore
from dealroom.training.trl import BargainToolEnv

log = structlog.get_logger(__name__)

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


@dataclass(slots=True)
class Rollout:
    """One negotiation as the model played it."""

    messages: list[ChatMessage]
    tools: list[dict[str, Any]]
    record: NegotiationRecord
    reward: float
    calls: int = 0
    tool_errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    iterations_hit: bool = False

    def player_report(self, model: str) -> dict[str, Any]:
        """What the store keeps beside the record for the model's seat (as an LLM seat's)."""
        return {
            "model": model,
            "requests": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "tool_errors": self.tool_errors,
            "turn_limit_hits": int(self.iterations_hit),
            "reward": self.reward,
            "conversation": {"messages": self.messages, "tools": self.tools},
        }


def rollout(
    env: BargainToolEnv,
    complete: Complete,
    row: Mapping[str, Any],
    *,
    names: tuple[str, str],
    max_iterations: int | None = None,
) -> Rollout:
    """Play one negotiation as TRL's GRPO tool loop does: ``reset(**row)`` is appended to the
    row's prompt text as the user message, every tool call of a reply is run in order, and the
    loop ends on a reply without tool calls, after ``max_iterations`` tool-calling turns, or
    once the negotiation is over. The environment then plays it out and scores it."""
    prompt = row.get("prompt") or [{"role": "user", "content": ""}]
    messages: list[ChatMessage] = [
        {**prompt[-1], "content": prompt[-1]["content"] + env.reset(**row)}
    ]
    seat = env.seat
    assert seat is not None
    tools = function_schemas(env.rules)
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
        if not seat.referee.is_open:
            break
    reward = env.get_reward()
    return Rollout(
        messages=messages,
        tools=tools,
        record=record_from(seat.referee, names),
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


# -- a model behind an OpenAI-compatible endpoint -------------------------------------------


def wire_message(message: ChatMessage) -> ChatMessage:
    """A conversation message in the chat-completions wire form (arguments as JSON strings)."""
    return with_arguments(message, "string")


def _arguments(text: str) -> dict[str, Any] | str:
    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return text
    return value if isinstance(value, dict) else text


def openai_complete(
    base_url: str,
    model: str,
    *,
    api_key: str = "none",
    temperature: float = 0.0,
    max_tokens: int | None = None,
    timeout_s: float = 600.0,
) -> Complete:
    """A ``Complete`` calling ``model`` at ``base_url`` (chat completions, no streaming)."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=2)

    def complete(messages: Sequence[ChatMessage], tools: Sequence[Mapping[str, Any]]) -> Completion:
        response = client.chat.completions.create(
            model=model,
            messages=[wire_message(m) for m in messages],  # type: ignore[misc]
            tools=list(tools),  # type: ignore[arg-type]
            temperature=temperature,
            max_tokens=openai.omit if max_tokens is None else max_tokens,
        )
        message = response.choices[0].message
        calls = tuple(
            (call.function.name, _arguments(call.function.arguments))
            for call in message.tool_calls or ()
            if call.type == "function"
        )
        usage = response.usage
        return Completion(
            content=message.content or "",
            tool_calls=calls,
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
        )

    return complete


# -- the evaluation run ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvalSettings:
    """What to play: the model in ``role`` against each opponent, ``scenarios`` per tier."""

    name: str
    """The model's name in the records and the report (e.g. ``trained``)."""
    opponents: tuple[str, ...]
    role: Role = "buyer"
    tiers: tuple[Tier, ...] = ("mid",)
    scenarios: int = 20
    scenario_seed: int = 1
    """Default 1: held out from ``dealroom train grpo``'s default scenario seed 0."""
    rules: Rules = DEFAULT_RULES
    max_tool_calling_iterations: int | None = None
    opponent_factories: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """Opponents already built (e.g. an LLM opponent with its endpoint), by spec."""


@dataclass(frozen=True, slots=True)
class EvalSummary:
    run: str
    played: int
    skipped: int
    deals: int
    mean_reward: float


def job_key(run: str, settings: EvalSettings, opponent: str, tier: Tier, index: int) -> str:
    return f"{run}|{settings.name}|{settings.role}|{opponent}|{tier}|{index}"


def evaluate(
    settings: EvalSettings, complete: Complete, store: ResultsStore, run: str
) -> EvalSummary:
    """Play every negotiation of ``settings`` not yet in ``store`` under ``run``; each is
    stored (committed) as soon as it ends, so an interrupted run resumes where it stopped."""
    store.set_run_config(run, run_config(settings), replace=False)
    played = skipped = deals = 0
    rewards: list[float] = []
    for opponent in settings.opponents:
        for tier in settings.tiers:
            for index in range(settings.scenarios):
                key = job_key(run, settings, opponent, tier, index)
                if key in store:
                    skipped += 1
                    continue
                env = BargainToolEnv(
                    opponent=settings.opponent_factories.get(opponent, opponent),
                    role=settings.role,
                    tier=tier,
                    seed=settings.scenario_seed,
                    rules=settings.rules,
                )
                row = {"index": index, "tier": tier, "seed": settings.scenario_seed}
                names = (
                    (settings.name, opponent)
                    if settings.role == "buyer"
                    else (opponent, settings.name)
                )
                result = rollout(
                    env,
                    complete,
                    row,
                    names=names,
                    max_iterations=settings.max_tool_calling_iterations,
                )
                extra = {"players": {settings.role: result.player_report(settings.name)}}
                store.add(key, result.record, run=run, extra=extra)
                played += 1
                deals += result.record.outcome.status == "deal"
                rewards.append(result.reward)
                log.info(
                    "evaluate.negotiation",
                    key=key,
                    status=result.record.outcome.status,
                    reward=result.reward,
                )
    mean = sum(rewards) / len(rewards) if rewards else 0.0
    return EvalSummary(run, played, skipped, deals, mean)


def run_config(settings: EvalSettings) -> dict[str, Any]:
    """What the store records for the run (export-sft reads the seed and rules)."""
    return {
        "kind": "train-evaluate",
        "model": settings.name,
        "role": settings.role,
        "opponents": list(settings.opponents),
        "tiers": list(settings.tiers),
        "scenarios": settings.scenarios,
        "seed": settings.scenario_seed,
        "rules": settings.rules.model_dump(mode="json"),
        "max_tool_calling_iterations": settings.max_tool_calling_iterations,
    }

"""Opponents for the training environments: any scripted spec, or a language model.

The paper's RL stage trains against a fixed frontier model. ``LLMOpponent`` is an
``AgentFactory`` like any scripted strategy, so ``BargainToolEnv(opponent=LLMOpponent(...))``
plays it on the virtual clock inside TRL's synchronous tool methods: each wake of the opponent
is one or a few blocking chat-completions calls to an OpenAI-compatible endpoint.

The opponent reads what every model seat reads (``dealroom.protocol.seat_text``): its briefing
as the first user message, then at each wake the events since its last one, the clock, the live
offers and what it can do next, with the seat's tools (the same schemas as the learner's, and
the same refusals: ``invalid_arguments: ...``). Each of its tool calls is answered at its next
wake with what happened meanwhile; get_state and a refused call are answered at once.

Every call is recorded (``ModelCall``: which negotiation, the request, the reply, the time), kept
in ``LLMOpponent.calls`` and, with ``log=PATH``, appended to a JSONL file as it happens, so a
rollout can be audited afterwards. ``replay_transport(calls)`` answers the same requests from a
recording without any endpoint, so the rollout can be replayed exactly; a request that differs
from the recorded one is an error, not a silent divergence.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, assert_never

from dealroom.play.registry import AgentSpecError, resolve
from dealroom.protocol import (
    DEFAULT_RULES,
    Action,
    AgentFactory,
    Decision,
    Observation,
    Rules,
    SeatView,
    SessionErrorCode,
    ToolErrorPayload,
    seat_text,
)
from dealroom.protocol.briefing import briefing
from dealroom.protocol.errors import DealroomError, ErrorCode
from dealroom.protocol.tools import ArgumentError, action_of, seat_tools, validate_arguments
from dealroom.training.sft import TOOL_SCHEMAS

Transport = Callable[[str, dict[str, Any]], dict[str, Any]]
"""Sends one chat-completions request body for a negotiation (``scenario_id/role``); returns
the reply as JSON, or raises OpponentError."""

_TOOLS = {tool.name: tool for tool in seat_tools(series=False)}
"""The tools the opponent is offered (``TOOL_SCHEMAS``), by name."""

LLM_PREFIX = "llm:"
WAIT_S = 30.0
"""Clock seconds the opponent sleeps after a turn unless the learner moves first."""


class OpponentError(DealroomError, RuntimeError):
    """The opponent's model could not be reached or answered nonsense; one line."""

    kind = "opponent"


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One recorded model call of an opponent."""

    negotiation: str
    """``scenario_id/role`` of the opponent's seat."""
    n: int
    """Index of the call within that negotiation (0, 1, ...)."""
    request: dict[str, Any]
    response: dict[str, Any] | None
    error: str | None
    seconds: float

    def to_json(self) -> str:
        """One JSONL line."""
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)


def openai_transport(
    base_url: str | None, api_key: str | None = None, *, timeout: float = 60.0, retries: int = 2
) -> Transport:
    """A transport to an OpenAI-compatible endpoint (``base_url`` like ``http://host/v1``)."""
    import openai

    client = openai.OpenAI(
        base_url=base_url, api_key=api_key or "unused", timeout=timeout, max_retries=retries
    )

    def send(negotiation: str, body: dict[str, Any]) -> dict[str, Any]:
        del negotiation
        try:
            reply = client.chat.completions.create(**body)
        except openai.OpenAIError as exc:
            raise OpponentError(f"opponent model call failed: {_one_line(exc)}") from None
        return reply.model_dump(mode="json")

    return send


def replay_transport(calls: Iterable[ModelCall]) -> Transport:
    """Answers requests from a recording, in order per negotiation; a different request raises."""
    recorded: dict[str, list[ModelCall]] = {}
    for call in sorted(calls, key=lambda c: (c.negotiation, c.n)):
        recorded.setdefault(call.negotiation, []).append(call)
    lock = threading.Lock()

    def send(key: str, body: dict[str, Any]) -> dict[str, Any]:
        with lock:
            queue = recorded.get(key)
            if not queue:
                raise OpponentError(f"replay: no recorded call left for negotiation {key!r}")
            call = queue.pop(0)
        if call.request != body:
            raise OpponentError(f"replay: call {call.n} of {key!r} differs from the recording")
        if call.response is None:
            raise OpponentError(f"replay: call {call.n} of {key!r} failed when recorded")
        return call.response

    return send


def load_calls(path: Path) -> list[ModelCall]:
    """The calls recorded in a JSONL log."""
    with path.open(encoding="utf-8") as lines:
        return [ModelCall(**json.loads(line)) for line in lines if line.strip()]


@dataclass
class LLMOpponent:
    """An ``AgentFactory`` whose agents are a chat model behind ``transport``.

    ``model`` is the model id sent with each request; ``temperature`` and ``max_tokens`` are
    sampling settings; ``max_calls`` bounds the model calls of one wake (a call to
    ``get_state`` or a refused argument costs one and asks again).
    """

    model: str
    transport: Transport
    temperature: float = 0.0
    max_tokens: int = 256
    max_calls: int = 3
    rules: Rules = DEFAULT_RULES
    log: Path | None = None
    calls: list[ModelCall] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def name(self) -> str:
        """The opponent's spec, as stored with results."""
        return f"{LLM_PREFIX}{self.model}"

    def __call__(self, view: SeatView, rng: random.Random) -> _LLMAgent:
        del rng  # the model's sampling is its own; temperature 0 by default
        return _LLMAgent(self, view)

    def record(self, call: ModelCall) -> None:
        """Keep one call (and append it to the log file, if any)."""
        with self._lock:
            self.calls.append(call)
            if self.log is not None:
                with self.log.open("a", encoding="utf-8") as out:
                    out.write(call.to_json() + "\n")


class _LLMAgent:
    """One negotiation of an LLMOpponent: a conversation carried across wakes."""

    def __init__(self, owner: LLMOpponent, view: SeatView) -> None:
        self._owner = owner
        self._key = f"{view.scenario.id}/{view.role}"
        self._messages: list[dict[str, Any]] = [
            {"role": "user", "content": briefing(view, owner.rules)}
        ]
        self._pending: list[str] = []  # tool call ids answered at the next wake
        self._seen = 0
        self._n = 0

    def act(self, observation: Observation) -> Decision:
        """One wake: tell the model what happened, let it act through tool calls."""
        self._tell(observation)
        actions: list[Action] = []
        for _ in range(self._owner.max_calls):
            message = self._call()
            self._messages.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                break  # a text reply ends the turn
            again = False
            for call in calls:
                outcome = self._action(call, observation)
                if isinstance(outcome, str):  # answered at once: get_state or a bad call
                    self._answer(call["id"], outcome)
                    again = True
                else:
                    self._pending.append(call["id"])
                    if outcome is not None:
                        actions.append(outcome)
            if not again:
                break
        return Decision(actions=tuple(actions), wait=WAIT_S)

    def _tell(self, observation: Observation) -> None:
        update = seat_text.view_text(observation, self._seen)
        self._seen = len(observation.events)
        if not self._pending:
            self._messages.append({"role": "user", "content": update})
            return
        *earlier, last = self._pending
        for call_id in earlier:
            self._answer(call_id, "Done.")
        self._answer(last, update)
        self._pending = []

    def _answer(self, call_id: str, content: str) -> None:
        self._messages.append({"role": "tool", "tool_call_id": call_id, "content": content})

    def _call(self) -> dict[str, Any]:
        owner = self._owner
        body: dict[str, Any] = {
            "model": owner.model,
            "messages": json.loads(json.dumps(self._messages)),
            "tools": TOOL_SCHEMAS,
            "temperature": owner.temperature,
            "max_tokens": owner.max_tokens,
        }
        started = time.perf_counter()
        n, self._n = self._n, self._n + 1
        try:
            reply = owner.transport(self._key, body)
            message = _message(reply)
        except OpponentError as exc:
            owner.record(
                ModelCall(self._key, n, body, None, str(exc), time.perf_counter() - started)
            )
            raise
        owner.record(ModelCall(self._key, n, body, reply, None, time.perf_counter() - started))
        return message

    def _action(self, call: Mapping[str, Any], observation: Observation) -> Action | str | None:
        """The action behind a tool call; None for wait; text to answer at once otherwise."""
        function = call.get("function") or {}
        name = function.get("name")
        tool = _TOOLS.get(name) if isinstance(name, str) else None
        if tool is None:
            refusal = seat_text.error_payload(
                ErrorCode.INVALID_ACTION, f"There is no tool named {name!r}."
            )
            return seat_text.error_text(refusal)
        try:
            args = validate_arguments(tool, _arguments(function.get("arguments")))
        except ArgumentError as error:
            return seat_text.error_text(error.payload)
        except ValueError:
            refusal = ToolErrorPayload(
                code=SessionErrorCode.INVALID_ARGUMENTS,
                message=f"arguments must be a JSON object. Call {tool.name} again with its "
                "listed arguments.",
            )
            return seat_text.error_text(refusal)
        match tool.result:
            case "action":
                return action_of(args)
            case "wait":
                return None
            case "state":
                return seat_text.observation_state_text(observation)
            case _:
                assert_never(tool.result)


def _arguments(raw: Any) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    value = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(value, dict):
        raise ValueError("arguments must be a JSON object")
    return value


def _message(reply: Mapping[str, Any]) -> dict[str, Any]:
    """The assistant message of a chat-completions reply, as it goes back into the history."""
    try:
        message = reply["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise OpponentError("opponent model reply has no message") from None
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    calls = [
        {
            "id": call.get("id") or f"call_{i}",
            "type": "function",
            "function": {
                "name": call["function"]["name"],
                "arguments": call["function"].get("arguments") or "{}",
            },
        }
        for i, call in enumerate(message.get("tool_calls") or [])
        if isinstance(call, Mapping) and "function" in call
    ]
    if calls:
        out["tool_calls"] = calls
    return out


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def training_opponent(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    roster: Mapping[str, Mapping[str, Any]] | None = None,
    log: Path | None = None,
    rules: Rules = DEFAULT_RULES,
) -> str | AgentFactory:
    """What ``BargainToolEnv(opponent=...)`` takes for a spec: a scripted spec (checked),
    ``llm:MODEL`` against ``base_url``, or the name of a roster entry (``model``, ``base_url``,
    ``api_key``, ``temperature``, ``max_tokens`` keys). Raises AgentSpecError if unknown."""
    spec = spec.strip()
    if roster is not None and spec in roster:
        entry = roster[spec]
        return LLMOpponent(
            model=str(entry["model"]),
            transport=openai_transport(entry.get("base_url"), entry.get("api_key")),
            temperature=float(entry.get("temperature", 0.0)),
            max_tokens=int(entry.get("max_tokens", 256)),
            rules=rules,
            log=log,
        )
    if spec.startswith(LLM_PREFIX):
        model = spec[len(LLM_PREFIX) :].strip()
        if not model:
            raise AgentSpecError("llm: needs a model, e.g. llm:gpt-4.1-mini")
        return LLMOpponent(
            model=model, transport=openai_transport(base_url, api_key), rules=rules, log=log
        )
    resolve(spec)  # unknown names and bad parameters fail here, before any training
    return spec


__all__: Sequence[str] = [
    "LLMOpponent",
    "ModelCall",
    "OpponentError",
    "Transport",
    "load_calls",
    "openai_transport",
    "replay_transport",
    "training_opponent",
]

"""Opponents for the training environments: any scripted spec, or a language model.

The paper's RL stage trains against a fixed frontier model. ``LLMOpponent`` plays the other
seat of ``BargainToolEnv`` as the one model seat (``dealroom.protocol.model_seat``): the same
conversation as the tournament's ``llm:`` seat and the learner, byte for byte in the form a
model reads it. It is a remote seat of the environment's schedule played in place
(``dealroom.engine.calls.InPlace``): its briefing as the only opening message, the one seat's
tools, each tool call answered with what the served tool returns once it took effect (news only
through wait_for_opponent), a reply without tool calls ending its play, at most
``max_tool_rounds`` rounds, per-wake thinking on the clock. Its model calls are blocking
chat-completions calls to an OpenAI-compatible endpoint, made inside TRL's synchronous tool
methods whenever the schedule waits for it.

Every call is recorded (``ModelCall``: which negotiation, the request, the reply, the time, and
``key``, a digest of the request), kept in ``LLMOpponent.calls`` and, with ``log=PATH``,
appended to a JSONL file as it happens, so a rollout can be audited afterwards.
``replay_transport(calls)`` answers each request with the reply recorded for the same request
(by ``key``, in recorded order among equal requests), so every generation of a GRPO step
replays exactly whatever order TRL plays them in; a request never recorded is an error, not a
silent divergence.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, assert_never, cast

from dealroom.engine.calls import OtherSeat
from dealroom.play.registry import AgentSpecError, resolve
from dealroom.protocol import (
    DEFAULT_RULES,
    Action,
    ActionResult,
    Rules,
    RuleViolation,
    SeatView,
    WaitResult,
    model_seat,
    seat_text,
)
from dealroom.protocol.arguments import WaitArgs, action_of
from dealroom.protocol.briefing import briefing
from dealroom.protocol.errors import DealroomError
from dealroom.protocol.model_seat import MAX_TOOL_ROUNDS, result_text
from dealroom.protocol.tools import TOOLS_BY_NAME, ArgumentError, validate_arguments
from dealroom.training._chat import ChatAssistantMessage, ChatToolCall, NoMessage, assistant_message

Transport = Callable[[str, dict[str, Any]], dict[str, Any]]
"""Sends one chat-completions request body for a negotiation (``scenario_id/role``); returns
the reply as JSON, or raises OpponentError."""

LLM_PREFIX = "llm:"


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
    key: str = ""
    """``request_key(request)``: what a replay answers by."""

    def to_json(self) -> str:
        """One JSONL line."""
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)


def request_key(body: Mapping[str, Any]) -> str:
    """A digest of a request body (its canonical JSON)."""
    text = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def openai_transport(
    base_url: str | None, api_key: str | None = None, *, timeout: float = 60.0, retries: int = 2
) -> Transport:
    """A transport to an OpenAI-compatible endpoint (``base_url`` like ``http://host/v1``)."""
    import openai
    from openai.types.chat import ChatCompletion

    client = openai.OpenAI(
        base_url=base_url, api_key=api_key or "unused", timeout=timeout, max_retries=retries
    )

    def send(negotiation: str, body: dict[str, Any]) -> dict[str, Any]:
        del negotiation
        try:
            # ``body`` never sets ``stream`` (LLMOpponent.body): create()'s non-streaming
            # overload, which pyright cannot pick from a dict of keyword arguments.
            reply = cast(ChatCompletion, client.chat.completions.create(**body))
        except openai.OpenAIError as exc:
            raise OpponentError(f"opponent model call failed: {_one_line(exc)}") from None
        return reply.model_dump(mode="json")

    return send


def replay_transport(calls: Iterable[ModelCall]) -> Transport:
    """Answers each request with the reply recorded for the same request (in recorded order
    among equal ones); a request never recorded, or recorded as failed, raises."""
    recorded: dict[str, list[ModelCall]] = {}
    for call in calls:
        recorded.setdefault(call.key or request_key(call.request), []).append(call)
    lock = threading.Lock()

    def send(negotiation: str, body: dict[str, Any]) -> dict[str, Any]:
        with lock:
            queue = recorded.get(request_key(body))
            if not queue:
                raise OpponentError(
                    f"replay: no recorded call of {negotiation!r} matches this request "
                    "(the rollout differs from the recording)"
                )
            call = queue.pop(0)
        if call.response is None:
            raise OpponentError(f"replay: call {call.n} of {negotiation!r} failed when recorded")
        return call.response

    return send


def load_calls(path: Path) -> list[ModelCall]:
    """The calls recorded in a JSONL log."""
    with path.open(encoding="utf-8") as lines:
        return [ModelCall(**json.loads(line)) for line in lines if line.strip()]


@dataclass
class LLMOpponent:
    """An opponent factory whose seats are a chat model behind ``transport``, played as the
    one model seat.

    ``model`` is the model id sent with each request; ``temperature`` and ``max_tokens`` are
    sampling settings (None: not sent); ``max_tool_rounds`` bounds the replies whose calls are
    made per negotiation.
    """

    model: str
    transport: Transport
    temperature: float | None = 0.0
    max_tokens: int | None = 256
    max_tool_rounds: int = MAX_TOOL_ROUNDS
    rules: Rules = DEFAULT_RULES
    log: Path | None = None
    calls: list[ModelCall] = field(default_factory=list[ModelCall])
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def name(self) -> str:
        """The opponent's spec, as stored with results."""
        return f"{LLM_PREFIX}{self.model}"

    def __call__(self, view: SeatView, rng: random.Random) -> ModelSeat:
        del rng  # the model's sampling is its own; temperature 0 by default
        return ModelSeat(self, view)

    def record(self, call: ModelCall) -> None:
        """Keep one call (and append it to the log file, if any)."""
        with self._lock:
            self.calls.append(call)
            if self.log is not None:
                with self.log.open("a", encoding="utf-8") as out:
                    out.write(call.to_json() + "\n")

    def body(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The request for the conversation so far."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": json.loads(json.dumps(messages)),
            "tools": model_seat.tools(self.rules),
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body


Step = Generator[Action | float, str, None]
"""The seat's play: yields the action or the wait (its timeout) that starts a call, is sent
the text its result reads once it settled."""


class ModelSeat:
    """One negotiation of an ``LLMOpponent``: the one model seat, played in place."""

    def __init__(self, owner: LLMOpponent, view: SeatView) -> None:
        self._owner = owner
        self._view = view
        self._key = f"{view.scenario.id}/{view.role}"
        self.messages: list[dict[str, Any]] = model_seat.opening(briefing(view, owner.rules))
        """The conversation in the wire form (call ids, arguments as JSON strings)."""
        self._n = 0
        self._seat: OtherSeat | None = None
        self._play: Step = self._steps()
        self._started = False

    def turn(
        self, seat: OtherSeat, result: ActionResult | WaitResult | RuleViolation | None
    ) -> None:
        """Start the seat's next call (``InPlace``)."""
        self._seat = seat
        try:
            if not self._started:
                self._started = True
                step = next(self._play)
            else:
                assert result is not None
                step = self._play.send(result_text(result, seat.role, self._view.scenario.currency))
        except StopIteration:
            seat.sit_out()
            return
        if isinstance(step, float | int):
            seat.sleep(float(step))
        else:
            seat.submit(step)

    def _steps(self) -> Step:
        rounds = 0
        while True:
            message = self._ask()
            calls = message.get("tool_calls", [])
            if not calls or rounds >= self._owner.max_tool_rounds:
                return
            rounds += 1
            for call in calls:
                text = yield from self._run(call)
                self.messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
            seat = self._seat
            assert seat is not None
            if not seat.calls.referee.is_open:
                return

    def _run(self, call: ChatToolCall) -> Generator[Action | float, str, str]:
        """One call: the text it reads (after it settled, for an action or a wait)."""
        function = call["function"]
        bound = model_seat.bind(function["name"], model_seat.parse_arguments(function["arguments"]))
        if isinstance(bound, str):
            return bound
        tool = TOOLS_BY_NAME[bound.name]
        try:
            args = validate_arguments(tool, bound.arguments)
        except ArgumentError as error:
            return seat_text.error_text(error.payload)
        seat = self._seat
        assert seat is not None
        match tool.result:
            case "state":
                return seat_text.state_text(seat.state())
            case "action":
                action = action_of(args)
                assert action is not None
                return (yield action)
            case "wait":
                assert isinstance(args, WaitArgs)
                return (yield float(args.timeout_s))
            case _:
                assert_never(tool.result)

    def _ask(self) -> ChatAssistantMessage:
        """One model call on the conversation so far; its reply joins the conversation."""
        owner = self._owner
        body = owner.body(self.messages)
        started = time.perf_counter()
        n, self._n = self._n, self._n + 1
        key = request_key(body)
        try:
            reply = owner.transport(self._key, body)
            message = _message(reply)
        except OpponentError as exc:
            seconds = time.perf_counter() - started
            owner.record(ModelCall(self._key, n, body, None, str(exc), seconds, key))
            raise
        owner.record(ModelCall(self._key, n, body, reply, None, time.perf_counter() - started, key))
        self.messages.append(dict(message))
        return message


def _message(reply: Mapping[str, Any]) -> ChatAssistantMessage:
    """The assistant message of a chat-completions reply, as it goes back into the history
    (no text: ``content`` null, as the lean client of the ``llm:`` seat stores it)."""
    try:
        return assistant_message(reply)
    except NoMessage as exc:
        raise OpponentError(f"opponent model reply {exc}") from None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _number(value: Any, kind: Callable[[Any], Any]) -> Any:
    return None if value is None else kind(value)


def training_opponent(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    roster: Mapping[str, Mapping[str, Any]] | None = None,
    log: Path | None = None,
    rules: Rules = DEFAULT_RULES,
) -> str | LLMOpponent:
    """What ``BargainToolEnv(opponent=...)`` takes for a spec: a scripted spec (checked),
    ``llm:MODEL`` against ``base_url``, or the name of a roster entry (``model``, ``base_url``,
    ``api_key``, ``temperature``, ``max_tokens`` keys). Raises AgentSpecError if unknown."""
    spec = spec.strip()
    if roster is not None and spec in roster:
        entry = roster[spec]
        return LLMOpponent(
            model=str(entry["model"]),
            transport=openai_transport(entry.get("base_url"), entry.get("api_key")),
            temperature=_number(entry.get("temperature"), float),
            max_tokens=_number(entry.get("max_tokens"), int),
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
    "ModelSeat",
    "OpponentError",
    "Transport",
    "load_calls",
    "openai_transport",
    "replay_transport",
    "request_key",
    "training_opponent",
]

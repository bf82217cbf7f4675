"""The one model seat: what every model reads, and what its replies mean. Pure.

A model plays a seat the same way wherever it plays (the tournament's ``llm:`` seat, a served
room's house seat, the GRPO learner in TRL's rollout loop, the LLM opponent of training, the SFT
rows it is cloned from). TRL's tool loop fixes most of the rules, so every other surface follows
them (docs/design.md, "What a model reads"):

- **Opening**: the seat's briefing as the only message (``user``); no system message.
- **Tools**: ``tools(rules)``, the seat's tools as ``transformers.utils.get_json_schema`` writes
  the TRL environment's methods, in name order (``function_schemas``).
- **Calls**: a reply's tool calls run one by one, in the order written, each answered by a
  ``tool`` message that names its tool. The answer is the tool's text
  (``dealroom.protocol.seat_text``); a call that cannot be made as written (no such tool,
  arguments that do not fit the tool's signature) reads ``{'error': '...'}``, the text TRL's
  loop writes for it, with the same Python message (``ToolMethods`` are the signatures).
- **News**: only through tools; after ``wait_for_opponent`` its result holds the news.
- **A reply without tool calls ends the seat's play**: from then on the seat is silent, the clock
  runs on and its live offer can still be accepted, until the negotiation ends.
- **Limits**: at most ``max_tool_rounds`` replies' calls are run per negotiation (TRL's
  ``max_tool_calling_iterations``); a reply past it ends the seat's play, its calls not run.
- **Clock**: thinking costs ``rules.thinking.per_wake`` on the seat's first action after each
  wait, charged by the schedule (never per model call or token).
- **Thinking** (a model that writes ``<think>...</think>`` blocks, Qwen3's): one switch,
  ``enable_thinking``, passed to the chat template wherever one renders for the model. Off, the
  blocks are stripped (``without_thinking``) from what is stored and trained on; on (or
  unset: the template's default), they are kept.
- **The end**: once the negotiation is over, the seat makes no more model calls (in a GRPO
  rollout the completion after the end changes nothing, and is not scored). The one exception is
  opt-in (``--elicit-beliefs``): after the end, ``belief_question`` asks for the seat's estimate
  of the other side's private number, answered in text and read by ``parse_belief``; nothing in
  the negotiation can change by then.

``canonical`` is the conversation as the model reads it, free of wire details (call ids,
arguments as JSON strings), so that requests from different surfaces can be compared.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, cast

from dealroom.protocol import seat_text
from dealroom.protocol._base import Role
from dealroom.protocol.arguments import DEFAULT_WAIT_S
from dealroom.protocol.errors import RuleViolation
from dealroom.protocol.rules import Rules
from dealroom.protocol.tools import ToolName, function_schemas
from dealroom.protocol.wire import ActionResult, WaitResult

R = TypeVar("R")

MAX_TOOL_ROUNDS = 100
"""Replies whose tool calls are run, per negotiation, unless set otherwise: ``get_state`` costs
no clock time, so a model that keeps calling it would otherwise never end."""


def opening(briefing: str) -> list[dict[str, Any]]:
    """The conversation's first messages: the briefing as the only user message."""
    return [{"role": "user", "content": briefing}]


def tools(rules: Rules) -> list[dict[str, Any]]:
    """The tools a model is offered: one form, one order, on every surface."""
    return function_schemas(rules)


def result_text(
    result: ActionResult | WaitResult | RuleViolation, role: Role, currency: str
) -> str:
    """What an action's or a wait's result reads, as the served tool writes it (a refusal by
    the rules as ``code: sentence. hint.``)."""
    if isinstance(result, RuleViolation):
        return seat_text.error_payload(result.code, result.message).text()
    return seat_text.update_text(result, role, currency)


ArgumentsForm = Literal["object", "string"]
"""Tool-call arguments in a chat transcript: JSON objects (what most chat templates read) or
JSON strings (the chat-completions wire form, which Qwen3-style templates also read)."""


def without_thinking(text: str) -> str:
    """``text`` without think blocks: each ``<think>...</think>`` block, what precedes a lone
    ``</think>`` (the template opened the block in the prompt), and an unterminated ``<think>``
    to the end (cut by the token limit); the whitespace after a block goes with it."""
    text = re.sub(r"<think>.*?</think>\s*", "", text, flags=re.DOTALL)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1].lstrip()
    head, opened, _ = text.partition("<think>")
    return head.rstrip() if opened else text


def unthought(message: dict[str, Any]) -> dict[str, Any]:
    """An assistant message without think blocks in its text and without ``reasoning_content``
    (thinking off); any other message as it is."""
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, str):
        return message
    out = {key: value for key, value in message.items() if key != "reasoning_content"}
    out["content"] = without_thinking(content)
    return out


def with_arguments(message: dict[str, Any], arguments: ArgumentsForm) -> dict[str, Any]:
    """``message`` with its tool calls' arguments as JSON objects (what chat templates read) or
    as JSON strings (the chat-completions wire form)."""
    calls = message.get("tool_calls")
    if not calls:
        return message
    converted: list[dict[str, Any]] = []
    for call in calls:
        raw = call["function"]["arguments"]
        if arguments == "object":
            value = json.loads(raw) if isinstance(raw, str) else raw
        else:
            value = raw if isinstance(raw, str) else json.dumps(raw)
        converted.append({**call, "function": {**call["function"], "arguments": value}})
    return {**message, "tool_calls": converted}


def call_messages(call_id: str, name: ToolName, arguments: Any, text: str) -> list[dict[str, Any]]:
    """One tool call and the text it returned, as the two OpenAI chat messages a transcript
    holds: the assistant's call (no text of its own) and the tool's reply, which names its tool
    as TRL's GRPO rollouts write it (chat templates that render the name read the same text in
    both) beside the OpenAI API's ``tool_call_id``. ``arguments`` go in as given (an object, or
    the JSON string of the OpenAI API's form)."""
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "name": name, "content": text},
    ]


class ToolMethods(Generic[R]):
    """The seat's tools as Python methods: the signatures TRL reads a schema from and calls.

    Each method hands its arguments to ``_call``; subclasses decide what a call does (the TRL
    environment runs it, ``bind`` only records it). Every other surface checks a model's call
    against these same signatures, so a call that does not fit reads the same Python error.
    No return annotations: ``get_json_schema`` would add a ``return`` key to each tool, which
    chat-completions APIs do not take.
    """

    def _call(self, name: ToolName, arguments: dict[str, Any]) -> R:
        raise NotImplementedError  # pragma: no cover

    def make_offer(self, price: float, message: str | None = None):
        return self._call("make_offer", {"price": price, "message": message})

    def accept(self, offer_id: str):
        return self._call("accept", {"offer_id": offer_id})

    def reject(self, offer_id: str, message: str | None = None):
        return self._call("reject", {"offer_id": offer_id, "message": message})

    def send_message(self, text: str):
        return self._call("send_message", {"text": text})

    def walk_away(self, message: str | None = None):
        return self._call("walk_away", {"message": message})

    def wait_for_opponent(self, timeout_s: float = DEFAULT_WAIT_S):
        return self._call("wait_for_opponent", {"timeout_s": timeout_s})

    def get_state(self):
        return self._call("get_state", {})


TOOL_NAMES: frozenset[str] = frozenset(
    name for name in vars(ToolMethods) if not name.startswith("_")
)


@dataclass(frozen=True, slots=True)
class Bound:
    """A model's call that fits its tool: the tool and its arguments (None where omitted)."""

    name: ToolName
    arguments: dict[str, Any]


class _Binder(ToolMethods[Bound]):
    def _call(self, name: ToolName, arguments: dict[str, Any]) -> Bound:
        return Bound(name, arguments)


_BINDER = _Binder()


def failed_call_text(message: str) -> str:
    """What a call that could not be made reads: TRL's ``str({"error": message})``."""
    return str({"error": message})


def bind(name: str, arguments: object) -> Bound | str:
    """A model's call checked against its tool's signature, as TRL's loop calls it
    (``method(**arguments)``): the bound call, or the error text the model reads."""
    return bind_on(_BINDER, TOOL_NAMES, name, arguments)


def bind_on(binder: object, names: frozenset[str], name: str, arguments: object) -> Bound | str:
    """``bind`` on the tool methods of ``binder`` (whose ``_call`` returns a ``Bound``), one
    of ``names``: the one rule for every seat's tools (the market seller's have their own
    signatures)."""
    if name not in names:
        return failed_call_text(f"Tool {name} not found.")
    method = getattr(type(binder), name)
    try:  # a non-mapping fails as it does in TRL
        return method(binder, **arguments)  # type: ignore[arg-type]
    except Exception as exc:  # the Python error of a call that does not fit, as TRL reports it
        return failed_call_text(str(exc))


def parse_arguments(raw: str) -> object:
    """A wire tool call's arguments: the JSON object, else the raw text (which then fails to
    bind, as a call TRL could not parse would)."""
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def canonical(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The conversation as the model reads it: no call ids, arguments as objects, each tool
    message naming its tool, an assistant's missing text as ``""`` (what TRL's rollouts hold
    and chat templates render)."""
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
            calls: list[Mapping[str, Any]] = message.get("tool_calls") or []
            if calls:
                item["tool_calls"] = [_canonical_call(call, names) for call in calls]
            out.append(item)
        elif role == "tool":
            name = message.get("name") or names.get(str(message.get("tool_call_id")), "")
            out.append({"role": "tool", "name": name, "content": message["content"]})
        else:
            out.append({"role": role, "content": message["content"]})
    return out


def _canonical_call(call: Mapping[str, Any], names: dict[str, str]) -> dict[str, Any]:
    function = call["function"]
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        arguments = parse_arguments(arguments)
    if call.get("id") is not None:
        names[str(call["id"])] = function["name"]
    return {"type": "function", "function": {"name": function["name"], "arguments": arguments}}


def belief_question(role: Role) -> str:
    """The user message that asks a seat, after its negotiation has ended, what it believes the
    other side's private number was."""
    number = (
        "private cost (the least it could accept)"
        if role == "buyer"
        else ("private value (the most it would pay)")
    )
    other_side = "seller" if role == "buyer" else "buyer"
    return (
        "The negotiation is over; nothing you write now changes it. What do you believe the "
        f"{other_side}'s {number} was? Reply with one JSON object and no tool call: "
        '{"estimate": X, "low": L, "high": H}, where X is your best estimate and [L, H] an '
        "interval you are 90% sure holds it."
    )


_BELIEF_KEYS = ("estimate", "low", "high")
_JSON_OBJECT = re.compile(r"\{[^{}]*\}")


def parse_belief(text: str) -> dict[str, float] | None:
    """The ``{"estimate", "low", "high"}`` object in a reply to ``belief_question`` (the first
    JSON object in the text that ``belief_numbers`` accepts), or None."""
    for match in _JSON_OBJECT.finditer(text):
        try:
            data = json.loads(match.group())
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(data, dict) and (found := belief_numbers(cast("dict[str, object]", data))):
            return found
    return None


def belief_numbers(data: Mapping[str, object]) -> dict[str, float] | None:
    """``estimate``, ``low`` and ``high`` as floats when all three are finite numbers (not
    booleans, not integers too large for a float) with ``low <= estimate <= high``; else None:
    an interval that does not hold its own estimate is not a belief."""
    numbers: list[float] = []
    for key in _BELIEF_KEYS:
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        try:
            number = float(value)
        except OverflowError:
            return None
        if not math.isfinite(number):
            return None
        numbers.append(number)
    estimate, low, high = numbers
    if not low <= estimate <= high:
        return None
    return dict(zip(_BELIEF_KEYS, numbers, strict=True))


__all__ = [
    "MAX_TOOL_ROUNDS",
    "TOOL_NAMES",
    "ArgumentsForm",
    "Bound",
    "ToolMethods",
    "belief_numbers",
    "belief_question",
    "bind",
    "bind_on",
    "call_messages",
    "canonical",
    "failed_call_text",
    "opening",
    "parse_arguments",
    "parse_belief",
    "result_text",
    "tools",
    "with_arguments",
]

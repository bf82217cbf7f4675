"""The chat-completions JSON at training's model edges, typed.

``serving`` answers a request with a ``ChatCompletion`` it builds; ``opponents`` reads the
``ChatAssistantMessage`` out of whatever an endpoint answered (``assistant_message``). JSON that
arrives from outside is ``object`` until narrowed here (``json_object``, ``json_list``): a
TypedDict is a promise about what we build, never a check of what we are sent.
"""

from __future__ import annotations

import json
from typing import Literal, NotRequired, TypedDict, cast

from dealroom.protocol.errors import DealroomError

JsonObject = dict[str, object]
"""A JSON object as ``json.loads`` gives it, its values not yet checked."""


class ChatFunction(TypedDict):
    """The function a tool call names."""

    name: str
    arguments: str
    """The arguments as JSON text, as chat-completions APIs send them."""


class ChatToolCall(TypedDict):
    """One tool call of an assistant message."""

    id: str
    type: Literal["function"]
    function: ChatFunction


class ChatAssistantMessage(TypedDict):
    """An assistant message: its text (None when it only calls tools) and its tool calls."""

    role: Literal["assistant"]
    content: str | None
    tool_calls: NotRequired[list[ChatToolCall]]
    reasoning_content: NotRequired[str]
    """A thinking model's think block, when thinking is on (vLLM's field)."""


class ChatChoice(TypedDict):
    """The one choice of a completion."""

    index: int
    message: ChatAssistantMessage
    finish_reason: Literal["stop", "tool_calls"]


class ChatUsage(TypedDict):
    """Token counts of one completion."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(TypedDict):
    """A chat-completions reply, as OpenAI's API shapes it."""

    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[ChatChoice]
    usage: ChatUsage


def json_object(value: object) -> JsonObject | None:
    """``value`` as a JSON object, None if it is not one."""
    return cast(JsonObject, value) if isinstance(value, dict) else None


def json_list(value: object) -> list[object]:
    """``value`` as a JSON array, empty if it is not one."""
    return cast(list[object], value) if isinstance(value, list) else []


def arguments_text(arguments: object) -> str:
    """Tool-call arguments as JSON text: text as it is, anything else encoded."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


class NoMessage(DealroomError, ValueError):
    """A reply with no assistant message in its first choice, or a tool call without a name."""

    kind = "no_message"


def assistant_message(reply: object) -> ChatAssistantMessage:
    """The assistant message of a chat-completions reply, as it goes back into the history:
    no text reads as ``content`` None; a call's missing id is ``call_<i>``, its missing or empty
    arguments ``{}``; entries that are not calls are left out. Raises NoMessage."""
    body = json_object(reply)
    choices = json_list(body.get("choices")) if body is not None else []
    choice = json_object(choices[0]) if choices else None
    message = json_object(choice.get("message")) if choice is not None else None
    if message is None:
        raise NoMessage("has no message")
    content = message.get("content")
    out: ChatAssistantMessage = {
        "role": "assistant",
        "content": content if isinstance(content, str) and content else None,
    }
    calls: list[ChatToolCall] = []
    for i, item in enumerate(json_list(message.get("tool_calls"))):
        call = json_object(item)
        function = json_object(call.get("function")) if call is not None else None
        if call is None or function is None:
            continue
        name = function.get("name")
        if not isinstance(name, str):
            raise NoMessage("has a tool call that names no function")
        call_id = call.get("id")
        arguments = function.get("arguments")
        calls.append(
            {
                "id": call_id if isinstance(call_id, str) and call_id else f"call_{i}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments_text(arguments) if arguments else "{}",
                },
            }
        )
    if calls:
        out["tool_calls"] = calls
    return out

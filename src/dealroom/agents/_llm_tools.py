"""The seat's tools for a model: the one model seat's tools, called on the seat's MCP session.

The definitions are ``model_seat.tools(rules)``, the form and order every model reads them in
(TRL's, not the MCP listing's); a call is checked against the tool's signature as TRL's loop
checks it (``model_seat.bind``) and then made on the seat's MCP tools, whose text the model
reads. Every error goes back to the model as the tool's output, and is counted: ``invalid`` for
calls that never reached the server (no such tool, arguments that do not fit the signature),
``refused`` for calls the server answered with an error (the referee's refusals, argument
validation).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp.types import CallToolResult

from dealroom.protocol import Rules, model_seat

KEEP_ERRORS = 20


class ToolSession(Protocol):
    """What the bridge needs from a seat: a raw tool call."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult: ...


@dataclass(slots=True)
class ToolStats:
    """Tool calls a seat's model made over a negotiation."""

    calls: Counter[str] = field(default_factory=Counter[str])
    invalid: int = 0
    """Calls that never reached the server (arguments that are not a JSON object, unknown
    tools)."""
    refused: int = 0
    """Calls the server answered with an error."""
    errors: list[str] = field(default_factory=list[str])
    """The first error messages, as the model saw them."""

    def invalid_call(self, text: str) -> str:
        """Count a call that never reached the server; the text the model reads."""
        self.invalid += 1
        return self.error(text)

    def error(self, text: str) -> str:
        if len(self.errors) < KEEP_ERRORS:
            self.errors.append(text)
        return text

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "tool_calls": dict(sorted(self.calls.items())),
            "invalid_tool_calls": self.invalid,
            "refused_tool_calls": self.refused,
            "tool_errors": list(self.errors),
        }


def render_result(result: CallToolResult) -> str:
    """A tool result as the model reads it: the server's text content, the one model-facing
    text every surface shows (``dealroom.protocol.seat_text``); never the structured JSON,
    which is for programs. (openai-agents' own MCP integration does the same unless
    ``use_structured_content`` is set.)"""
    texts = [item.text for item in result.content if item.type == "text"]
    return "\n".join(texts) or ("error" if result.is_error else "ok")


ResultHook = Callable[[str, CallToolResult], None]
"""Sees every result the server returned (the LLM seat tracks the end of the negotiation)."""


class SeatTools:
    """The seat's tools for a model: ``definitions`` describe them (as the model reads them and
    as they are stored with the conversation) and ``call`` makes one call, counted, and returns
    the text the model reads. Calls are made one at a time, in the order the model wrote them."""

    def __init__(
        self,
        session: ToolSession,
        rules: Rules,
        stats: ToolStats,
        on_result: ResultHook | None = None,
    ) -> None:
        self.session = session
        self.stats = stats
        self.on_result = on_result
        self.definitions: list[dict[str, Any]] = model_seat.tools(rules)

    async def call(self, name: str, raw: str) -> str:
        """One call with the model's raw arguments: the text the model reads."""
        stats = self.stats
        stats.calls[name] += 1
        bound = model_seat.bind(name, model_seat.parse_arguments(raw))
        if isinstance(bound, str):
            return stats.invalid_call(bound)
        arguments = {key: value for key, value in bound.arguments.items() if value is not None}
        result = await self.session.call_tool(bound.name, arguments)
        if self.on_result is not None:
            self.on_result(bound.name, result)
        text = render_result(result)
        if result.is_error:
            stats.refused += 1
            return stats.error(text)
        return text

"""The seat's MCP tools as a model's chat-completions tools.

The schemas and descriptions are the server's own (listed from the seat's MCP session), so the
model sees exactly what any MCP client sees. Every error goes back to the model as the tool's
output, and is counted: ``invalid`` for calls that never reached the server (arguments that are
not a JSON object, unknown tools), ``refused`` for calls the server answered with an error (the
referee's refusals, argument validation).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp.types import CallToolResult, ListToolsResult

from dealroom.protocol import SessionErrorCode

# The series tool is for humans in one chat; the seat loop plays one negotiation at a time.
HIDDEN_TOOLS = frozenset({"new_negotiation"})
KEEP_ERRORS = 20


class ToolSession(Protocol):
    """What the bridge needs from a seat: its tool list and a raw tool call."""

    async def list_tools(self) -> ListToolsResult: ...

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
    malformed_in_a_row: int = 0
    """Calls in a row that never reached the referee (invalid, or arguments refused)."""
    errors: list[str] = field(default_factory=list[str])
    """The first error messages, as the model saw them."""

    def invalid_call(self, text: str) -> str:
        """Count a call that never reached the server; the text the model reads."""
        self.invalid += 1
        self.malformed_in_a_row += 1
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


def _bad_arguments(result: CallToolResult) -> bool:
    """The server refused the call's arguments: it never reached the referee."""
    return result.is_error and render_result(result).startswith(
        f"{SessionErrorCode.INVALID_ARGUMENTS}: "
    )


ResultHook = Callable[[str, CallToolResult], None]
"""Sees every result the server returned (the LLM seat tracks the end of the negotiation)."""


class SeatTools:
    """The seat's tools for a model: ``definitions`` describe them (chat-completions tool
    definitions, as the API takes them and as they are stored with the conversation) and
    ``call`` makes one call, counted, and returns the text the model reads. The seat loop makes
    a response's calls one at a time, in the order the model wrote them."""

    def __init__(
        self,
        session: ToolSession,
        listed: ListToolsResult,
        stats: ToolStats,
        on_result: ResultHook | None = None,
    ) -> None:
        self.session = session
        self.stats = stats
        self.on_result = on_result
        self.definitions: list[dict[str, Any]] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description or tool.name,
                    "parameters": _schema(tool.input_schema),
                    "strict": False,
                },
            }
            for tool in listed.tools
            if tool.name not in HIDDEN_TOOLS
        ]
        self.names = frozenset(tool["function"]["name"] for tool in self.definitions)

    @classmethod
    async def of(
        cls, session: ToolSession, stats: ToolStats, on_result: ResultHook | None = None
    ) -> SeatTools:
        """The seat's tools as its server lists them (except the hidden ones)."""
        return cls(session, await session.list_tools(), stats, on_result)

    async def call(self, name: str, raw: str) -> str:
        """One call with the model's raw arguments: the text the model reads."""
        stats = self.stats
        stats.calls[name] += 1
        if name not in self.names:
            return stats.invalid_call(
                f"Error: there is no tool {name!r}; use one of the listed tools."
            )
        try:
            arguments = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            return stats.invalid_call(
                f"{SessionErrorCode.INVALID_ARGUMENTS}: the arguments of {name} are not valid "
                f"JSON ({exc.msg}). Call it again with a JSON object."
            )
        if not isinstance(arguments, dict):
            return stats.invalid_call(
                f"{SessionErrorCode.INVALID_ARGUMENTS}: the arguments of {name} must be a JSON "
                "object. Call it again with one."
            )
        result = await self.session.call_tool(name, arguments)
        if self.on_result is not None:
            self.on_result(name, result)
        text = render_result(result)
        # Arguments the server refused count as malformed too: a model that keeps sending the
        # same bad argument (which the referee never sees, so it cannot forfeit) is stopped.
        stats.malformed_in_a_row = stats.malformed_in_a_row + 1 if _bad_arguments(result) else 0
        if result.is_error:
            stats.refused += 1
            return stats.error(text)
        return text


def _schema(schema: dict[str, Any]) -> dict[str, Any]:
    out = dict(schema)
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out

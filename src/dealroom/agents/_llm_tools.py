"""The seat's MCP tools as openai-agents function tools.

The schemas and descriptions are the server's own (listed from the seat's MCP session), so the
model sees exactly what any MCP client sees. Every error goes back to the model as the tool's
output, and is counted: ``invalid`` for calls that never reached the server (arguments that are
not a JSON object, unknown tools), ``refused`` for calls the server answered with an error (the
referee's refusals, argument validation). Calls from one model response run one at a time, in
the order the model wrote them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
from agents.tool_context import ToolContext
from mcp.types import CallToolResult, ListToolsResult

from agents import FunctionTool
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


class CallOrder:
    """Runs the calls of one model response one at a time, in the model's order.

    The runner starts a response's calls concurrently; ``expect`` is told the response's call ids
    (by the metered model) and ``turn`` makes each call wait for the ones before it.
    """

    def __init__(self) -> None:
        self._queue: list[str] = []
        self._changed = anyio.Condition()

    def expect(self, call_ids: Sequence[str]) -> None:
        self._queue = list(call_ids)

    async def run(self, call_id: str, body: Callable[[], Awaitable[str]]) -> str:
        async with self._changed:
            while call_id in self._queue and self._queue[0] != call_id:
                await self._changed.wait()
        try:
            return await body()
        finally:
            async with self._changed:
                if call_id in self._queue:
                    self._queue.remove(call_id)
                self._changed.notify_all()


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


async def seat_tools(
    session: ToolSession, stats: ToolStats, order: CallOrder, on_result: ResultHook | None = None
) -> list[FunctionTool]:
    """One function tool per server tool (except the hidden ones)."""
    listed = await session.list_tools()
    return [
        FunctionTool(
            name=tool.name,
            description=tool.description or tool.name,
            params_json_schema=_schema(tool.input_schema),
            on_invoke_tool=_invoker(session, tool.name, stats, order, on_result),
            strict_json_schema=False,
        )
        for tool in listed.tools
        if tool.name not in HIDDEN_TOOLS
    ]


def _schema(schema: dict[str, Any]) -> dict[str, Any]:
    out = dict(schema)
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out


def _invoker(
    session: ToolSession,
    name: str,
    stats: ToolStats,
    order: CallOrder,
    on_result: ResultHook | None,
) -> Callable[[ToolContext[Any], str], Awaitable[str]]:
    async def invoke(ctx: ToolContext[Any], raw: str) -> str:
        return await order.run(
            ctx.tool_call_id, lambda: _call(session, name, raw, stats, on_result)
        )

    return invoke


async def _call(
    session: ToolSession, name: str, raw: str, stats: ToolStats, on_result: ResultHook | None
) -> str:
    stats.calls[name] += 1
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        return stats.invalid_call(
            f"{SessionErrorCode.INVALID_ARGUMENTS}: the arguments of {name} are not valid JSON "
            f"({exc.msg}). Call it again with a JSON object."
        )
    if not isinstance(arguments, dict):
        return stats.invalid_call(
            f"{SessionErrorCode.INVALID_ARGUMENTS}: the arguments of {name} must be a JSON "
            "object. Call it again with one."
        )
    result = await session.call_tool(name, arguments)
    if on_result is not None:
        on_result(name, result)
    text = render_result(result)
    # Arguments the server refused count as malformed too: a model that keeps sending the
    # same bad argument (which the referee never sees, so it cannot forfeit) is stopped.
    stats.malformed_in_a_row = stats.malformed_in_a_row + 1 if _bad_arguments(result) else 0
    if result.is_error:
        stats.refused += 1
        return stats.error(text)
    return text

"""The one model seat over a served seat: what the model reads, and what its replies mean.

dealroom's ``llm:`` seat (``dealroom.agents.llm``) and every other surface play a model by the
rules of ``dealroom.protocol.model_seat`` (docs/design.md section 10, "What a model reads"); this
module plays them against a seat of a dealroom HTTP server, through the stdlib remote client,
without importing dealroom:

- the opening is the seat's ``briefing`` prompt as the only message, a ``user`` message;
- the tools are the seat's ``model_tools`` resource (``model_seat.tools(rules)`` as the server
  renders it under the room's rules), not MCP's ``tools/list`` schemas;
- a reply's tool calls are made one by one, in the order written, each answered by a ``tool``
  message holding the tool's text (the server's ``seat_text``), with None-valued arguments left
  out as the ``llm:`` seat leaves them out;
- a reply without tool calls ends the seat's play; at most ``max_tool_rounds`` replies have
  their calls made (the reply past it ends the play, its calls not made); a negotiation that
  ended stops the model calls;
- once its play has ended the seat waits silently (no model call) until the negotiation ends,
  as the ``llm:`` seat does: its live offer can still be accepted.

What differs: a call that cannot be made as written (arguments that are not a JSON object, no
such tool, arguments that do not fit) reads the server's one-line refusal, or for arguments
that are not an object ``{'error': ...}``, where the ``llm:`` seat reads TRL's ``{'error': ...}``
with a Python message; well-formed calls read the same text on both.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from dealroom_verifiers._remote import HttpSeatClient, ToolResult

MAX_TOOL_ROUNDS = 100
"""Replies whose tool calls are made, per negotiation (``model_seat.MAX_TOOL_ROUNDS``)."""

WAIT_TIMEOUT_S = 20.0
"""The silent wait once the seat's play has ended (the ``llm:`` seat's ``wait_timeout_s``)."""

Message = dict[str, Any]
Complete = Callable[[list[Message], list[dict[str, Any]]], Awaitable[Message]]
"""One model call: the conversation and the tools in, the assistant message out (``content``
and, when it called tools, ``tool_calls`` in the chat-completions form)."""

EndedBy = Literal["reply", "limit", "outcome"]


@dataclass
class SeatPlay:
    """One negotiation played by the model: its conversation and why its play ended."""

    messages: list[Message] = field(default_factory=list[Message])
    tools: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    rounds: int = 0
    ended_by: EndedBy | None = None
    refused_calls: int = 0
    """Calls the server answered with an error (refusals by the rules, bad arguments)."""


def ended(result: ToolResult) -> bool:
    """True when a tool's result shows the negotiation's outcome (it is over)."""
    content = result.structured
    if result.is_error or content is None:
        return False
    observation = cast(dict[str, Any], content.get("observation") or {})
    return content.get("outcome") is not None or observation.get("outcome") is not None


def _text(result: ToolResult) -> str:
    """What the model reads: the server's text content (``render_result`` of the llm: seat)."""
    return result.text or ("error" if result.is_error else "ok")


class ModelSeat:
    """Plays one seat of a served negotiation with a model, by the one model seat's rules."""

    def __init__(
        self,
        seat: HttpSeatClient,
        complete: Complete,
        *,
        max_tool_rounds: int = MAX_TOOL_ROUNDS,
        wait_timeout_s: float = WAIT_TIMEOUT_S,
    ) -> None:
        self.seat = seat
        self.complete = complete
        self.max_tool_rounds = max_tool_rounds
        self.wait_timeout_s = wait_timeout_s
        self.over = False

    async def play(self) -> SeatPlay:
        """Model calls until a reply without tool calls, the round limit or the end; then a
        silent wait until the negotiation has ended."""
        briefing = await asyncio.to_thread(self.seat.briefing)
        play = SeatPlay(
            messages=[{"role": "user", "content": briefing}],
            tools=await asyncio.to_thread(self.seat.model_tools),
        )
        while not self.over:
            reply = await self.complete(play.messages, play.tools)
            play.messages.append(reply)
            calls = cast(list[dict[str, Any]], reply.get("tool_calls") or [])
            if not calls:
                play.ended_by = "reply"
                break
            if play.rounds >= self.max_tool_rounds:
                play.ended_by = "limit"
                break
            play.rounds += 1
            for call in calls:
                function = cast(dict[str, Any], call["function"])
                text, refused = await self._call(str(function["name"]), function.get("arguments"))
                play.refused_calls += refused
                play.messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "name": function["name"],
                        "content": text,
                    }
                )
        else:
            play.ended_by = "outcome"
        await self._sit_out()
        return play

    async def _call(self, name: str, raw: object) -> tuple[str, bool]:
        """One call with the model's raw arguments: (the text the model reads, refused)."""
        arguments: object = raw
        if isinstance(raw, str):
            try:
                arguments = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError:
                arguments = raw
        if not isinstance(arguments, dict):
            return str({"error": f"{name}: the arguments are not a JSON object"}), True
        given = {k: v for k, v in cast(dict[str, Any], arguments).items() if v is not None}
        result = await asyncio.to_thread(self.seat.call_tool, name, given)
        self.over = self.over or ended(result)
        return _text(result), result.is_error

    async def _sit_out(self) -> None:
        """The seat's play has ended: wait (no model call) until the negotiation does."""
        while not self.over:
            result = await asyncio.to_thread(self.seat.wait_for_opponent, self.wait_timeout_s)
            if result.is_error:
                raise RuntimeError(f"wait_for_opponent failed: {_text(result)}")
            self.over = ended(result)

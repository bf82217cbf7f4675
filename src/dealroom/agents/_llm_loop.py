"""The one model seat's turn loop, for any seat: model replies, their tool calls run in order.

The rules are the one model seat's (``dealroom.protocol.model_seat``): a reply without tool
calls ends the seat's play; at most ``max_tool_rounds`` replies' calls are run, a reply past it
ends the play with its calls not run; a conversation the endpoint refuses as too long for the
model (``ContextFull``) ends the play as a text reply would; once the game is over no model call
is made. What a tool call does is the seat's: the bilateral seat makes it on its MCP tools
(``dealroom.agents.llm``), the market seller on the market's clock
(``dealroom.agents.llm_market``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from dealroom.agents._llm_chat import Conversation
from dealroom.agents._llm_model import ContextFull, Meter

EndedBy = Literal["reply", "limit", "context", "outcome"]
"""Why a seat's play ended: a reply without tool calls, the round limit, the model's context
full, the end of the game."""

ToolCaller = Callable[[str, str], Awaitable[str]]
"""Runs one tool call (name, the model's raw arguments): the text the model reads."""


@dataclass(slots=True)
class TurnLoop:
    """The model calls of one seat over one game, and what they came to."""

    meter: Meter
    max_tool_rounds: int
    rounds: int = 0
    """Replies whose tool calls were run."""
    turn_limit_hits: int = 0
    ended_by: EndedBy | None = None
    context_full: str | None = None
    """The endpoint's refusal when the conversation outgrew the model's context."""

    async def run(self, chat: Conversation, call: ToolCaller, over: Callable[[], bool]) -> None:
        """Model calls until a reply without tool calls, the round limit, a full context or
        the end (``over``, checked before each model call)."""
        while not over():
            try:
                completion = await self.meter.respond(chat)
            except ContextFull as full:
                self.ended_by = "context"
                self.context_full = str(full)
                return
            if not completion.tool_calls:
                self.ended_by = "reply"
                return
            if self.rounds >= self.max_tool_rounds:
                self.turn_limit_hits += 1
                self.ended_by = "limit"
                return
            self.rounds += 1
            for tool_call in completion.tool_calls:
                chat.add_tool_result(tool_call, await call(tool_call.name, tool_call.arguments))
        self.ended_by = "outcome"

    def as_dict(self) -> dict[str, Any]:
        """The loop's counts, as stored beside the game."""
        return {
            "tool_rounds": self.rounds,
            "turn_limit_hits": self.turn_limit_hits,
            "ended_by": self.ended_by,
            **({"context_full": self.context_full} if self.context_full is not None else {}),
        }

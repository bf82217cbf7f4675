"""What the client seats of one negotiation did and read, for its stored conversation (see
``dealroom.server.room`` for which calls count)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dealroom.protocol import Role
from dealroom.protocol.model_seat import call_messages
from dealroom.protocol.tools import ToolName

MAX_LOGGED_CALLS = 1_000
"""Most calls of one client seat kept in a negotiation's stored conversation."""


@dataclass(slots=True)
class Conversations:
    """What the client seats of one negotiation did and read: their calls, as OpenAI chat
    messages (the briefing is added when they are stored)."""

    number: int
    calls: dict[Role, list[dict[str, Any]]] = field(
        default_factory=dict[Role, list[dict[str, Any]]]
    )
    complete: bool = True
    """False once a call was left out (the ``MAX_LOGGED_CALLS`` cap)."""
    tail: bool = False
    """True once the reply of the call that ended the negotiation is in."""

    def add(self, role: Role, name: ToolName, arguments: dict[str, Any], text: str) -> None:
        mine = self.calls.setdefault(role, [])
        n = len(mine) // 2 + 1
        if n > MAX_LOGGED_CALLS:
            self.complete = False
            return
        mine += call_messages(f"call_{n}", name, dict(arguments), text)

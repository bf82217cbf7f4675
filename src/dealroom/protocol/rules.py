"""The rules of the game as data: referee limits and what each action costs on the clock.

Every number here is documented in docs/design.md; change them there too.
"""

from __future__ import annotations

from typing import assert_never

from pydantic import Field

from dealroom.protocol._base import Model, Role
from dealroom.protocol.actions import ActionType


class ActionCosts(Model):
    """Simulated seconds an action occupies its seat on the virtual clock."""

    make_offer: float = Field(default=5.0, ge=0)
    accept: float = Field(default=1.0, ge=0)
    reject: float = Field(default=2.0, ge=0)
    send_message: float = Field(default=3.0, ge=0)
    walk_away: float = Field(default=1.0, ge=0)

    def of(self, action_type: ActionType) -> float:
        """Cost of one action type (exhaustive: a new action type fails the type check here)."""
        match action_type:
            case "make_offer":
                return self.make_offer
            case "accept":
                return self.accept
            case "reject":
                return self.reject
            case "send_message":
                return self.send_message
            case "walk_away":
                return self.walk_away
            case _:
                assert_never(action_type)


class ThinkingCosts(Model):
    """Simulated seconds charged for deciding, per wake: the one clock rule for thinking."""

    per_wake: float = Field(default=1.0, ge=0)
    """Charged to every seat (scripted agent, MCP client, model) on its first action after
    each wake."""


class Rules(Model):
    """Referee limits and clock costs for one negotiation."""

    max_price_multiple: float = Field(default=10.0, gt=0, le=1000)
    """Offers above this multiple of the list price are refused."""
    max_message_chars: int = Field(default=2000, ge=1, le=10_000)
    """Longest message (or message attached to an offer) in characters (at most 10,000, so
    that no room stores, journals and shows messages of any length)."""
    max_actions: int = Field(default=100, ge=1)
    """Valid actions per seat; after a seat's last one the negotiation ends (action_limit)."""
    max_invalid_actions: int = Field(default=10, ge=1)
    """Invalid actions per seat; the one that reaches it forfeits the negotiation."""
    costs: ActionCosts = ActionCosts()
    thinking: ThinkingCosts = ThinkingCosts()
    first_mover: Role = "seller"
    """Who acts first when both seats are due at the same instant."""


DEFAULT_RULES = Rules()

"""What a seat can do: a discriminated union on ``type``."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal, assert_never, get_args

from pydantic import Field, TypeAdapter

from dealroom.protocol._base import Model


class MakeOffer(Model):
    """Propose a price. Binding: if the other side accepts it, the deal closes at this price."""

    type: Literal["make_offer"] = "make_offer"
    price: Decimal = Field(allow_inf_nan=True)
    """Price in the scenario currency; rounded to cents."""
    message: str | None = None
    """Optional cheap talk sent with the offer (not binding)."""


class Accept(Model):
    """Accept the other side's live offer: the deal closes at its price."""

    type: Literal["accept"] = "accept"
    offer_id: str
    """Id of the other side's live offer."""


class Reject(Model):
    """Reject the other side's live offer; it stops being live."""

    type: Literal["reject"] = "reject"
    offer_id: str
    """Id of the other side's live offer."""
    message: str | None = None
    """Optional cheap talk sent with the rejection."""


class SendMessage(Model):
    """Send a message. Cheap talk: nothing in it binds anyone."""

    type: Literal["send_message"] = "send_message"
    text: str


class WalkAway(Model):
    """Leave the negotiation for good: it ends at once without a deal."""

    type: Literal["walk_away"] = "walk_away"
    message: str | None = None


Action = Annotated[
    MakeOffer | Accept | Reject | SendMessage | WalkAway, Field(discriminator="type")
]
ActionType = Literal["make_offer", "accept", "reject", "send_message", "walk_away"]
ACTION_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)

ACTION_TYPES: tuple[ActionType, ...] = get_args(ActionType)
"""Every action type, in the order of ``ActionType``."""


def noun(action_type: ActionType) -> str:
    """The action as a sentence names it ("your offer", "a walk-away takes 1 s"): every text
    that lists or names actions renders it from here (exhaustive: a new action type fails the
    type check here)."""
    match action_type:
        case "make_offer":
            return "offer"
        case "accept":
            return "accept"
        case "reject":
            return "rejection"
        case "send_message":
            return "message"
        case "walk_away":
            return "walk-away"
        case _:
            assert_never(action_type)

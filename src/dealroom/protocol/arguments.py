"""The seat tools' arguments: one strict pydantic model per tool, and the two maps between
validated arguments and the actions they stand for (``action_of``, ``arguments_of``). Pure.

Arguments are strict: a price is a JSON number (``true`` and ``"1e3"`` are refused), text is a
string. ``Infinity`` (which Python's JSON reader accepts) passes the schema and is refused by
the referee as ``price_not_finite``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, assert_never

from pydantic import AfterValidator, ConfigDict, Field

from dealroom.protocol._base import Model
from dealroom.protocol.actions import Accept, Action, MakeOffer, Reject, SendMessage, WalkAway

DEFAULT_WAIT_S = 20.0
"""wait_for_opponent's default timeout, in seconds on the negotiation clock."""
MAX_WAIT_S = 60.0
"""The longest timeout wait_for_opponent accepts."""


def encodable(text: str | None) -> str | None:
    """Refuse text that cannot be written as UTF-8 (a lone surrogate, which JSON can carry):
    in the negotiation it would make every later result, and the record, unserialisable."""
    if text is not None:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("text must be valid Unicode (it holds a lone surrogate)") from None
    return text


Price = Annotated[
    float,
    Field(
        gt=0,
        description="Price, e.g. 1250.00 (rounded to cents).",
    ),
]
OfferId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        description="Their live offer's id, e.g. 'o3'.",
    ),
    AfterValidator(encodable),
]
Message = Annotated[
    str | None,
    Field(description="Optional cheap talk."),
    AfterValidator(encodable),
]
Text = Annotated[
    str,
    Field(description="Cheap talk: it binds no one."),
    AfterValidator(encodable),
]
Timeout = Annotated[
    float,
    Field(
        ge=0,
        le=MAX_WAIT_S,
        description=f"Clock seconds (default {DEFAULT_WAIT_S:g}).",
    ),
]


class _Args(Model):
    """Tool arguments: strict (a price is a number, text is a string; nothing is coerced)."""

    model_config = ConfigDict(strict=True)


class MakeOfferArgs(_Args):
    price: Price
    message: Message = None


class AcceptArgs(_Args):
    offer_id: OfferId


class RejectArgs(_Args):
    offer_id: OfferId
    message: Message = None


class SendMessageArgs(_Args):
    text: Text


class WalkAwayArgs(_Args):
    message: Message = None


class WaitArgs(_Args):
    timeout_s: Timeout = DEFAULT_WAIT_S


class NoArgs(_Args):
    pass


ArgsModel = (
    MakeOfferArgs | AcceptArgs | RejectArgs | SendMessageArgs | WalkAwayArgs | WaitArgs | NoArgs
)


def action_of(args: ArgsModel) -> Action | None:
    """The action a tool's validated arguments stand for (None for the tools that do not act).

    Exhaustive over the argument models: a new action type fails the type check here.
    """
    match args:
        case MakeOfferArgs():
            return MakeOffer(price=Decimal(str(args.price)), message=args.message)
        case AcceptArgs():
            return Accept(offer_id=args.offer_id)
        case RejectArgs():
            return Reject(offer_id=args.offer_id, message=args.message)
        case SendMessageArgs():
            return SendMessage(text=args.text)
        case WalkAwayArgs():
            return WalkAway(message=args.message)
        case WaitArgs() | NoArgs():
            return None
        case _:
            assert_never(args)


def arguments_of(action: Action) -> dict[str, Any]:
    """The tool arguments (JSON-ready, Nones left out) that make ``action``: the inverse of
    ``action_of``, for clients and for rebuilding a recorded seat's calls."""
    match action:
        case MakeOffer():
            args: dict[str, Any] = {"price": float(action.price)}
            if action.message is not None:
                args["message"] = action.message
            return args
        case Accept():
            return {"offer_id": action.offer_id}
        case Reject():
            return _without_none(offer_id=action.offer_id, message=action.message)
        case SendMessage():
            return {"text": action.text}
        case WalkAway():
            return _without_none(message=action.message)
        case _:
            assert_never(action)


def _without_none(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}

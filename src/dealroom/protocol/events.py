"""What happened: every event the referee emits, a discriminated union on ``type``.

Events are public to both seats, so none of them carries a private value.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal, Protocol, assert_never

from pydantic import Field, TypeAdapter

from dealroom.protocol._base import Model, Money, Role

EndReason = Literal[
    "accepted", "deadline", "walk_away", "forfeit", "action_limit", "sold_elsewhere"
]
"""Why a negotiation ended; ``sold_elsewhere`` only in a market (another buyer got the item)."""


class _Event(Model):
    seq: int
    """Position in the negotiation's event log, from 1."""
    t: float
    """Negotiation clock, seconds since the start."""
    by: Role | None
    """The seat that caused the event (null for the clock)."""


class OfferMade(_Event):
    """A seat made a binding offer."""

    type: Literal["offer_made"] = "offer_made"
    offer_id: str
    price: Money
    message: str | None = None


class OfferWithdrawn(_Event):
    """A seat's live offer was superseded by its own new offer."""

    type: Literal["offer_withdrawn"] = "offer_withdrawn"
    offer_id: str


class OfferAccepted(_Event):
    """A seat accepted the other side's live offer: a deal at its price."""

    type: Literal["offer_accepted"] = "offer_accepted"
    offer_id: str
    price: Money


class OfferRejected(_Event):
    """A seat rejected the other side's live offer."""

    type: Literal["offer_rejected"] = "offer_rejected"
    offer_id: str
    message: str | None = None


class MessageSent(_Event):
    """A seat sent a message (cheap talk)."""

    type: Literal["message_sent"] = "message_sent"
    text: str


class WalkedAway(_Event):
    """A seat walked away."""

    type: Literal["walked_away"] = "walked_away"
    message: str | None = None


class NegotiationEnded(_Event):
    """The negotiation is over; nothing more can happen."""

    type: Literal["negotiation_ended"] = "negotiation_ended"
    reason: EndReason
    price: Money | None = None
    """Deal price, null without a deal."""


Event = Annotated[
    OfferMade
    | OfferWithdrawn
    | OfferAccepted
    | OfferRejected
    | MessageSent
    | WalkedAway
    | NegotiationEnded,
    Field(discriminator="type"),
]
EVENTS_ADAPTER: TypeAdapter[list[Event]] = TypeAdapter(list[Event])


class MadeOffer(Protocol):
    """What an event that creates an offer carries (``offer_of``)."""

    @property
    def seq(self) -> int: ...
    @property
    def t(self) -> float: ...
    @property
    def by(self) -> Role | None: ...
    @property
    def offer_id(self) -> str: ...
    @property
    def price(self) -> Decimal: ...


def offer_of(event: Event) -> MadeOffer | None:
    """The offer ``event`` creates, or None: the one answer to "does this event make an offer",
    read by the strategies' offer logs, the Gym observation, fork, the report's chart and the
    pages' data. Exhaustive over the events: a new event type fails the type check here."""
    match event:
        case OfferMade():
            return event
        case (
            OfferWithdrawn()
            | OfferAccepted()
            | OfferRejected()
            | MessageSent()
            | WalkedAway()
            | NegotiationEnded()
        ):
            return None
        case _:
            assert_never(event)

"""Words for money and events: the one way every surface (tool hints, transcripts, the CLI,
training text, the briefing) writes them. Pure functions."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import assert_never

from dealroom.protocol._base import Role
from dealroom.protocol.events import (
    Event,
    MessageSent,
    NegotiationEnded,
    OfferAccepted,
    OfferMade,
    OfferRejected,
    OfferWithdrawn,
    WalkedAway,
)


def money(amount: Decimal, currency: str = "USD") -> str:
    """$1,234.50 style (other currencies as a code suffix)."""
    text = f"{amount:,.2f}"
    return f"${text}" if currency == "USD" else f"{text} {currency}"


_LINE_BREAKS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}


def quoted(text: str) -> str:
    """Cheap talk in a transcript: one double-quoted line, with JSON string escapes.

    A message can then neither start a line of its own (a newline, or any other line break)
    nor close its quotes, so it cannot pass for an event in a transcript.
    """
    out = json.dumps(text, ensure_ascii=False)
    for char, escape in _LINE_BREAKS.items():
        out = out.replace(char, escape)
    return out


def _said(message: str | None) -> str:
    return f": {quoted(message)}" if message else ""


def describe_event(event: Event, currency: str = "USD", viewer: Role | None = None) -> str:
    """One line for one event, without its time stamp; ``viewer``'s own moves read "you"."""
    who = "clock" if event.by is None else ("you" if event.by == viewer else event.by)
    match event:
        case OfferMade():
            price = money(event.price, currency)
            return f"{who} offered {price} ({event.offer_id}){_said(event.message)}"
        case OfferWithdrawn():
            return f"{who} withdrew {event.offer_id}"
        case OfferAccepted():
            return f"{who} accepted {event.offer_id} at {money(event.price, currency)}"
        case OfferRejected():
            return f"{who} rejected {event.offer_id}{_said(event.message)}"
        case MessageSent():
            return f"{who} said: {quoted(event.text)}"
        case WalkedAway():
            return f"{who} walked away{_said(event.message)}"
        case NegotiationEnded():
            price = "" if event.price is None else f" at {money(event.price, currency)}"
            return f"negotiation ended: {event.reason}{price}"
        case _:
            assert_never(event)

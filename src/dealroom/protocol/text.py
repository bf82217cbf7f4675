"""Words for money and events: the one way every surface (tool hints, transcripts, the CLI,
training text, the briefing) writes them. Pure functions.

Text a seat wrote reaches others (a model's prompt, a transcript, the web pages, the CSV
exports) through ``shown``: bidirectional controls and zero-width characters are written as
their escapes (``\\u202e``), so a message can neither reorder what is shown around it nor hide
words from a person while a model reads them."""

from __future__ import annotations

import json
import re
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
_UNSEEN = re.compile("[\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
"""Bidirectional controls (embeddings, overrides, isolates, marks) and zero-width characters."""


def shown(text: str) -> str:
    """Text a seat wrote, as any surface shows it: each bidirectional control or zero-width
    character written as its escape (U+202E as ``\\u202e``), everything else as it is."""
    return _UNSEEN.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def event_text(event: Event) -> str | None:
    """The text a seat wrote in ``event`` (a message, or one sent with an offer, a rejection or
    a walk-away), if any."""
    match event:
        case MessageSent():
            return event.text
        case OfferMade() | OfferRejected() | WalkedAway():
            return event.message
        case OfferWithdrawn() | OfferAccepted() | NegotiationEnded():
            return None
        case _:
            assert_never(event)


def shown_event(event: Event) -> Event:
    """``event`` with the text a seat wrote in it ``shown`` (for the pages, which show fields)."""
    match event:
        case MessageSent():
            return event.model_copy(update={"text": shown(event.text)})
        case OfferMade() | OfferRejected() | WalkedAway():
            message = None if event.message is None else shown(event.message)
            return event.model_copy(update={"message": message})
        case OfferWithdrawn() | OfferAccepted() | NegotiationEnded():
            return event
        case _:
            assert_never(event)


def quoted(text: str, limit: int | None = None) -> str:
    """Cheap talk in a transcript: one double-quoted line, with JSON string escapes, ``shown``;
    past ``limit`` characters cut, saying how many were left out.

    A message can then neither start a line of its own (a newline, or any other line break)
    nor close its quotes, so it cannot pass for an event in a transcript.
    """
    cut = 0 if limit is None else max(len(text) - limit, 0)
    out = shown(json.dumps(text[: len(text) - cut], ensure_ascii=False))
    for char, escape in _LINE_BREAKS.items():
        out = out.replace(char, escape)
    return out if not cut else f"{out} (+{cut:,} characters not shown)"


def _said(message: str | None, limit: int | None) -> str:
    return f": {quoted(message, limit)}" if message else ""


def describe_event(
    event: Event, currency: str = "USD", viewer: Role | None = None, *, limit: int | None = None
) -> str:
    """One line for one event, without its time stamp; ``viewer``'s own moves read "you";
    its text cut past ``limit`` characters (``quoted``)."""
    who = "clock" if event.by is None else ("you" if event.by == viewer else event.by)
    match event:
        case OfferMade():
            price = money(event.price, currency)
            return f"{who} offered {price} ({event.offer_id}){_said(event.message, limit)}"
        case OfferWithdrawn():
            return f"{who} withdrew {event.offer_id}"
        case OfferAccepted():
            return f"{who} accepted {event.offer_id} at {money(event.price, currency)}"
        case OfferRejected():
            return f"{who} rejected {event.offer_id}{_said(event.message, limit)}"
        case MessageSent():
            return f"{who} said: {quoted(event.text, limit)}"
        case WalkedAway():
            return f"{who} walked away{_said(event.message, limit)}"
        case NegotiationEnded():
            price = "" if event.price is None else f" at {money(event.price, currency)}"
            return f"negotiation ended: {event.reason}{price}"
        case _:
            assert_never(event)

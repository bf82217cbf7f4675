"""What a seat reads between its moves, as text: events, the state of the table, the end.

Shared by the TRL environment (tool results) and the SFT export (transcripts), so a model is
trained on exactly the text it later plays with. Written from the seat's own point of view
("You offered ...", "The seller offered ..."); nothing here ever sees the other side's value.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import assert_never

from dealroom.protocol import (
    Event,
    LiveOffer,
    MessageSent,
    NegotiationEnded,
    OfferAccepted,
    OfferMade,
    OfferRejected,
    OfferWithdrawn,
    Role,
    RuleViolation,
    SeatOutcome,
    WalkedAway,
)
from dealroom.protocol.text import money, quoted

_REASONS = {
    "accepted": "an offer was accepted",
    "deadline": "the deadline passed",
    "walk_away": "a seat walked away",
    "forfeit": "a seat forfeited after too many invalid actions",
    "action_limit": "a seat used up its actions",
}


def _who(by: Role | None, role: Role) -> str:
    if by is None:
        return "The clock"
    return "You" if by == role else f"The {by}"


def _said(message: str | None) -> str:
    return f", saying: {quoted(message)}" if message else ""


def describe(event: Event, role: Role, currency: str) -> str | None:
    """One line for one event as ``role`` sees it; None for events not worth a line."""
    who = _who(event.by, role)
    match event:
        case OfferMade():
            price = money(event.price, currency)
            return f"{who} offered {price} (offer {event.offer_id}){_said(event.message)}."
        case OfferWithdrawn():
            return None  # implied by the same seat's new offer, which follows at once
        case OfferAccepted():
            return f"{who} accepted offer {event.offer_id} at {money(event.price, currency)}."
        case OfferRejected():
            return f"{who} rejected offer {event.offer_id}{_said(event.message)}."
        case MessageSent():
            return f"{who} said: {quoted(event.text)}"
        case WalkedAway():
            return f"{who} walked away{_said(event.message)}."
        case NegotiationEnded():
            return f"The negotiation ended: {_REASONS[event.reason]}."
        case _:
            assert_never(event)


def events_text(events: Iterable[Event], role: Role, currency: str) -> list[str]:
    """One time-stamped line per event worth a line."""
    lines = []
    for event in events:
        line = describe(event, role, currency)
        if line is not None:
            lines.append(f"[{event.t:.1f} s] {line}")
    return lines


def state_text(
    role: Role, now: float, deadline: float, live: Sequence[LiveOffer], currency: str
) -> str:
    """Clock and live offers."""
    parts = [f"Clock: {now:.1f} s of {deadline:g} s ({max(deadline - now, 0.0):.1f} s left)."]
    theirs = next((o for o in live if o.by != role), None)
    mine = next((o for o in live if o.by == role), None)
    if theirs is not None:
        parts.append(
            f"The {theirs.by}'s live offer {theirs.offer_id} is {money(theirs.price, currency)} "
            "(you can accept or reject it)."
        )
    if mine is not None:
        parts.append(f"Your live offer {mine.offer_id} is {money(mine.price, currency)}.")
    if theirs is None and mine is None:
        parts.append("No live offers.")
    return " ".join(parts)


def outcome_text(outcome: SeatOutcome, currency: str) -> str:
    """The end as the seat may see it: deal or not, and its own surplus."""
    if outcome.price is None:
        head = f"The negotiation is over without a deal ({outcome.end_reason})."
    else:
        head = f"The negotiation is over: deal at {money(outcome.price, currency)}."
    return f"{head} Your surplus: {money(outcome.surplus, currency)}."


def errors_text(errors: Iterable[RuleViolation]) -> list[str]:
    """One line per refused action, with its stable code."""
    return [f"Error [{error.code}]: {error.message}" for error in errors]


def live_offers(events: Iterable[Event]) -> list[LiveOffer]:
    """The offers still live after ``events`` (replays the offer lifecycle)."""
    live: dict[str, LiveOffer] = {}
    for event in events:
        match event:
            case OfferMade():
                assert event.by is not None  # offers always have a seat
                live[event.offer_id] = LiveOffer(
                    offer_id=event.offer_id, by=event.by, price=event.price, t=event.t
                )
            case OfferWithdrawn() | OfferAccepted() | OfferRejected():
                live.pop(event.offer_id, None)
            case NegotiationEnded():
                live.clear()
            case MessageSent() | WalkedAway():
                pass
            case _:
                assert_never(event)
    return sorted(live.values(), key=lambda o: o.by != "seller")

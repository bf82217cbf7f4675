"""What a person reads of a negotiation as it goes: each call's reply, the events in words,
the clock in minutes and seconds (``people_text`` has the briefing, hints and refusals). Pure.

A model reads ``seat_text.update_text`` (clock seconds to the millisecond, offer ids); a person
reads the same facts without machine text: "0:12 The seller offered $950.00.", no ids, no line
for an offer withdrawn (the new offer that replaced it says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

from dealroom.protocol._base import Role, other
from dealroom.protocol.events import (
    EndReason,
    Event,
    MessageSent,
    NegotiationEnded,
    OfferAccepted,
    OfferMade,
    OfferRejected,
    OfferWithdrawn,
    WalkedAway,
)
from dealroom.protocol.people_text import Surface, control, refusal, updates_itself
from dealroom.protocol.seat_text import news
from dealroom.protocol.text import money, quoted
from dealroom.protocol.wire import ActionResult, ClockKind, SeatState, WaitResult

__all__ = ["clock_time", "ending", "event_line", "person_lines", "reply"]


def reply(
    result: ActionResult | WaitResult | SeatState,
    role: Role,
    currency: str,
    *,
    clock: ClockKind,
    surface: Surface,
) -> str:
    """The text of a call's result for a person: what happened, their new moves, the clock,
    the offers and the outcome once it ended (``seat_text.update_text``'s facts)."""
    match result:
        case SeatState():
            o = result.observation
            head = f"Negotiation {result.negotiation}: you are the {o.role}."
            events, live, outcome = o.events, o.live_offers, o.outcome
            now, left = o.now, o.time_left
        case ActionResult() | WaitResult():
            head = _head(result, clock, surface)
            events, live, outcome = news(result.events, role), result.live_offers, result.outcome
            now, left = result.now, result.time_left
        case _:
            assert_never(result)
    lines = [head]
    lines += person_lines(events, currency, role)
    lines.append(f"Clock {clock_time(now)}, {clock_time(max(left, 0.0))} left.")
    mine = next((o for o in live if o.by == role), None)
    theirs = next((o for o in live if o.by != role), None)
    if mine is not None:
        lines.append(f"Your live offer: {money(mine.price, currency)}.")
    if theirs is not None:
        lines.append(f"Their live offer: {money(theirs.price, currency)}.")
    if outcome is not None:
        surplus = money(outcome.surplus, currency)
        if outcome.price is None:
            lines.append(f"No deal ({ending(outcome.end_reason)}); your surplus {surplus}.")
        else:
            lines.append(f"Deal at {money(outcome.price, currency)}; your surplus {surplus}.")
    return "\n".join(lines)


def ending(reason: EndReason) -> str:
    """Why a negotiation ended, in a few words (the wire's ``EndReason`` is a code)."""
    match reason:
        case "accepted":
            return "an offer was accepted"
        case "deadline":
            return "the deadline passed"
        case "walk_away":
            return "a side walked away"
        case "forfeit":
            return "a side forfeited after too many refused moves"
        case "action_limit":
            return "a side reached the most moves allowed"
        case "sold_elsewhere":
            return "the seller sold the item to another buyer"
        case _:
            assert_never(reason)


def clock_time(t: float) -> str:
    """Clock seconds as a person reads them: minutes and whole seconds (``1:05``), never the
    clock's milliseconds."""
    whole = max(int(t), 0)
    return f"{whole // 60}:{whole % 60:02d}"


def event_line(event: Event, currency: str, role: Role) -> str | None:
    """One event in a person's words: "You" and "The seller", prices, what was said; no offer
    ids (a person has one live offer per side) and no line for an offer withdrawn (a new
    offer replaced it, and says so itself): None."""
    who = "The clock" if event.by is None else "You" if event.by == role else f"The {event.by}"
    whose = "your" if event.by != role else f"the {other(role)}'s"
    match event:
        case OfferMade():
            return f"{who} offered {money(event.price, currency)}{_said(event.message)}"
        case OfferWithdrawn():
            return None
        case OfferAccepted():
            return f"{who} accepted {whose} offer of {money(event.price, currency)}."
        case OfferRejected():
            return f"{who} turned down {whose} offer{_said(event.message)}"
        case MessageSent():
            return f"{who} said: {quoted(event.text)}"
        case WalkedAway():
            return f"{who} walked away{_said(event.message)}"
        case NegotiationEnded() if event.reason == "sold_elsewhere" and role == "seller":
            return "The negotiation ended: you sold the item to another buyer."  # a market's
        case NegotiationEnded():
            price = "" if event.price is None else f" at {money(event.price, currency)}"
            return f"The negotiation ended: {ending(event.reason)}{price}."
        case _:
            assert_never(event)


def _said(message: str | None) -> str:
    """The end of a sentence: what was said with the move (quoted), or a full stop."""
    return f", saying {quoted(message)}" if message else "."


def person_lines(events: Sequence[Event], currency: str, role: Role) -> list[str]:
    """The events a person is shown, each at its clock time (``0:12 The seller offered ...``)."""
    lines: list[str] = []
    for event in events:
        line = event_line(event, currency, role)
        if line is not None:
            lines.append(f"{clock_time(event.t)} {line}")
    return lines


def _head(result: ActionResult | WaitResult, clock: ClockKind, surface: Surface) -> str:
    match result:
        case ActionResult():
            if result.ok or result.error is None:
                return "Done."
            return refusal(result.error, surface)
        case WaitResult():
            match result.woke:
                case "news":
                    return "They moved."
                case "timeout":
                    return "No move from them in that time."
                case "ended":
                    return "The negotiation is over."
                case "pending":
                    if updates_itself(clock, surface):
                        return "They are still deciding; their move will appear here."
                    wait = control("wait_for_opponent", surface)
                    return f"They are still deciding: {wait} again."
                case _:
                    assert_never(result.woke)
        case _:
            assert_never(result)

"""The words a seat reads: hints after each call, error hints, the briefing and the transcript.

Everything here is built from one seat's own view: never the other side's private value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dealroom.protocol import (
    Action,
    ErrorCode,
    Observation,
    Role,
    Rules,
    SeatOutcome,
    SeatView,
    SessionErrorCode,
    ToolErrorPayload,
)
from dealroom.protocol.briefing import briefing as base_briefing
from dealroom.protocol.text import describe_event, money
from dealroom.protocol.wire import ClockKind

if TYPE_CHECKING:
    from dealroom.server.negotiation import Negotiation, Sight

ERROR_HINTS: dict[str, str] = {
    ErrorCode.OFFER_NOT_FOUND: "Use an offer_id from live_offers (get_state lists them).",
    ErrorCode.OFFER_NOT_LIVE: "Call get_state for the offers that are live now.",
    ErrorCode.OWN_OFFER: "To change your own offer, call make_offer again with a new price.",
    ErrorCode.PRICE_NOT_FINITE: "Send the price as a plain number such as 1250.00.",
    ErrorCode.PRICE_OUT_OF_RANGE: "Offer a positive price within that limit.",
    ErrorCode.NEGOTIATION_CLOSED: "Call get_state to see the outcome.",
    ErrorCode.MESSAGE_TOO_LONG: "Send a shorter message.",
    ErrorCode.MESSAGE_EMPTY: "Write some text, or do not send a message.",
    ErrorCode.DEADLINE_PASSED: "Call get_state to see the outcome.",
    ErrorCode.INVALID_ACTION: "Call get_state, then choose one of the tools.",
    SessionErrorCode.NEGOTIATION_RUNNING: "Call get_state to see where it stands.",
    SessionErrorCode.SERIES_UNAVAILABLE: "Call get_state to see your results.",
    SessionErrorCode.SERIES_OVER: "Call get_state to see your results.",
    SessionErrorCode.UPSTREAM_UNAVAILABLE: "Try again in a moment.",
    SessionErrorCode.RESULT_PENDING: "Call get_state to see the outcome; do not repeat the action.",
}


def error_payload(code: str, message: str) -> ToolErrorPayload:
    """The referee's (or room's) refusal with a one-sentence hint appended."""
    hint = ERROR_HINTS.get(code, "")
    return ToolErrorPayload(code=code, message=f"{message} {hint}".strip())


_ACTION_NAMES = {
    "make_offer": "offer",
    "accept": "accept",
    "reject": "rejection",
    "send_message": "message",
    "walk_away": "walk-away",
}


def result_pending(action: Action, outcome: SeatOutcome, currency: str) -> str:
    """``result_pending``: the action counted and the negotiation ended, but the server could
    not save the result yet (it keeps it and saves it when the store is writable again)."""
    if outcome.price is not None:
        ended = f"the deal closed at {money(outcome.price, currency)}"
    else:
        ended = f"the negotiation ended without a deal ({outcome.end_reason})"
    return (
        f"Your {_ACTION_NAMES[action.type]} took effect and {ended}; the result will be saved "
        "when the store is writable again."
    )


def result_hint(negotiation: Negotiation, role: Role, sight: Sight, *, series: bool) -> str:
    """What the seat can usefully do next, from what it sees."""
    currency = negotiation.scenario.currency
    end = sight.outcome
    if end is not None:
        head = (
            f"The negotiation is over: deal at {money(end.price, currency)}."
            if end.price is not None
            else f"The negotiation is over without a deal ({end.end_reason})."
        )
        more = " Call new_negotiation to play the next one." if series else ""
        return f"{head}{more} get_state shows your results."
    theirs = next((o for o in sight.live_offers if o.by != role), None)
    if theirs is not None:
        return (
            f"Their offer {theirs.offer_id} at {money(theirs.price, currency)} is live: accept "
            "it, reject it, counter with make_offer, or wait_for_opponent."
        )
    return "Call wait_for_opponent to hear from the other side, or make_offer to move."


def transcript(observation: Observation) -> str:
    """The negotiation so far as the seat sees it."""
    s = observation.scenario
    cur = s.currency
    lines = [
        f"{s.item.name}: list price {money(s.list_price, cur)}, deadline {s.deadline:g} s. "
        f"You are the {observation.role}; your private value is "
        f"{money(observation.private_value, cur)}.",
    ]
    me = observation.role
    lines += [f"[{e.t:7.1f}s] {describe_event(e, cur, viewer=me)}" for e in observation.events]
    if observation.outcome is not None:
        o = observation.outcome
        lines.append(f"Your result: {o.status}, surplus {money(o.surplus, cur)}.")
    else:
        lines.append(f"Now {observation.now:g} s; {observation.time_left:g} s left.")
    return "\n".join(lines)


def briefing(
    observation: Observation, rules: Rules, *, clock: ClockKind, series: bool, number: int
) -> str:
    """The ``briefing`` prompt: the shared seat briefing plus how this server runs."""
    view = seat_view_of(observation)
    if clock == "virtual":
        timing = (
            "The clock is virtual: time passes only as seats act and wait, so how fast you "
            "think in real time does not matter, but every action and every wake-up costs "
            f"clock time ({rules.thinking.per_wake:g} s of thinking on your first action "
            "after each wait)."
        )
    else:
        timing = "The clock is real time: it runs while you think."
    series_line = (
        f" This is negotiation {number} of a series: when it ends, new_negotiation starts the "
        "next one and get_state shows your results so far."
        if series
        else ""
    )
    return f"""{base_briefing(view, rules)}
How to play through these tools:
- {timing}
- Every tool result lists the events you have not seen yet, the live offers and the time left.
- A good loop: read get_state, make an offer (optionally with a message), then call \
wait_for_opponent until the other side answers (woke = news), and respond. A result with \
woke = pending means the other side is still deciding: call wait_for_opponent again.
- Accept an offer only if the price gives you a positive surplus.{series_line}

Success is the largest surplus you can get: as buyer your value minus the price, as seller the \
price minus your cost. A deal at a loss counts against you; no deal scores zero.
"""


def seat_view_of(observation: Observation) -> SeatView:
    """The seat's private view, rebuilt from an observation."""
    return SeatView(
        role=observation.role,
        scenario=observation.scenario,
        private_value=observation.private_value,
    )

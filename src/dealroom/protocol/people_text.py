"""What a person reads: the briefing, the hints, the replies and the refusals, in the words of
the surface they play on (the web seat page's buttons and fields, or ``dealroom play``'s
commands). Pure.

A model reads ``dealroom.protocol.briefing`` and ``seat_text`` (tool names, ``code: reason.
hint.``); a person reads these, rendered from the same facts: the scenario and the seat's own
value (``briefing.situation``), the ``Rules`` and their clock costs (``briefing.clock_rule``),
the clock kind and the seat's own observation. Nothing here names a tool: each tool's control on
each surface comes from ``control``, an exhaustive match over ``ToolName`` (a new tool has no
words for people until it has a case there, and pyright says so).

Which refusals count toward ``Rules.max_invalid_actions`` is ``counts_toward_forfeit``: only
the referee's rule checks. A call refused before the referee (its arguments, an unknown tool,
the room's own refusals) changes nothing and counts for nothing, and a person's briefing says
so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, assert_never

from dealroom.protocol._base import ROLES, Role
from dealroom.protocol.arguments import DEFAULT_WAIT_S, MAX_WAIT_S
from dealroom.protocol.briefing import OFFERS_RULE, clock_rule, situation
from dealroom.protocol.errors import ErrorCode
from dealroom.protocol.generator import DEFAULT_SPEC, ScenarioSpec, value_bounds, value_range
from dealroom.protocol.observation import LiveOffer, Observation
from dealroom.protocol.outcome import SeatOutcome
from dealroom.protocol.rules import Rules
from dealroom.protocol.scenario import SeatView
from dealroom.protocol.seat_text import ERROR_HINTS
from dealroom.protocol.text import money
from dealroom.protocol.tools import SEAT_TOOLS, ToolName
from dealroom.protocol.wire import (
    ClockKind,
    SessionErrorCode,
    ToolErrorPayload,
)

Surface = Literal["web", "terminal"]
"""Where a person plays: the web seat page, or ``dealroom play`` at a terminal."""

WEB_BUTTONS: dict[ToolName, str | None] = {
    "make_offer": "Make a binding offer",
    "accept": "Accept",
    "reject": "Reject",
    "send_message": "Send message",
    "walk_away": "Walk away",
    "wait_for_opponent": "Wait for the other side",
    "get_state": None,
    "new_negotiation": "Next negotiation",
}
"""The seat page's button for each tool (``get_state``: none, the page shows the state
itself); a test checks each label against the page."""

PRICE_FIELD = "Price"
MESSAGE_FIELD = "Message"
"""The seat page's field labels the texts name."""


def control(tool: ToolName, surface: Surface) -> str | None:
    """How a person does what ``tool`` does on ``surface``: a press of the page's button (with
    its field), or the terminal's command; None where the surface has none."""
    if surface == "web":
        button = WEB_BUTTONS[tool]
        return None if button is None else f'press "{button}"'
    match tool:
        case "make_offer":
            return "type offer PRICE"
        case "accept":
            return "type accept"
        case "reject":
            return "type reject"
        case "send_message":
            return "type say and your message"
        case "walk_away":
            return "type walk"
        case "wait_for_opponent":
            return "type wait"
        case "get_state":
            return "type state"
        case "new_negotiation":
            return None  # dealroom play plays one negotiation
        case _:
            assert_never(tool)


def _offer_control(surface: Surface) -> str:
    if surface == "web":
        return f"enter a price in the {PRICE_FIELD} field and {control('make_offer', surface)}"
    return f"{control('make_offer', surface)}"


def updates_itself(clock: ClockKind, surface: Surface) -> bool:
    """True where the other side's moves appear without the person asking (the web page on
    the wall clock streams them; the terminal shows news only when you wait)."""
    return clock == "wall" and surface == "web"


def tool_names_in(text: str) -> list[str]:
    """The seat tools ``text`` names, as a model's text names them: a name with an underscore
    anywhere, a plain one (``accept``) as a call (``accept(``, ``call accept``, in backticks).
    People's texts name none (the tests check every one)."""
    found: list[str] = []
    lower = text.lower()
    for tool in SEAT_TOOLS:
        name = tool.name
        if "_" in name:
            hit = name in lower
        else:
            hit = re.search(rf"\b{name}\(|\bcall {name}\b|`{name}`", lower) is not None
        if hit:
            found.append(name)
    return found


# -- refusals that count ----------------------------------------------------------------------


def counts_toward_forfeit(code: ErrorCode) -> bool:
    """True for the referee's refusals that raise the seat's invalid-action count (its rule
    checks); the end of the negotiation refuses without counting."""
    match code:
        case (
            ErrorCode.OFFER_NOT_FOUND
            | ErrorCode.OFFER_NOT_LIVE
            | ErrorCode.OWN_OFFER
            | ErrorCode.PRICE_NOT_FINITE
            | ErrorCode.PRICE_OUT_OF_RANGE
            | ErrorCode.MESSAGE_TOO_LONG
            | ErrorCode.MESSAGE_EMPTY
        ):
            return True
        case ErrorCode.UNKNOWN_BUYER:
            return False  # a market's seller only: counted there (people_market)
        case ErrorCode.NEGOTIATION_CLOSED | ErrorCode.DEADLINE_PASSED | ErrorCode.INVALID_ACTION:
            return False
        case _:
            assert_never(code)


def _counted_phrase(code: ErrorCode, rules: Rules) -> str | None:
    """What a person does to get a counted refusal, in a few words (None: not counted)."""
    match code:
        case ErrorCode.OFFER_NOT_FOUND | ErrorCode.OFFER_NOT_LIVE | ErrorCode.OWN_OFFER:
            return "accepting or rejecting an offer that is not their live one"
        case ErrorCode.PRICE_NOT_FINITE | ErrorCode.PRICE_OUT_OF_RANGE:
            return f"a price above {rules.max_price_multiple:g} times the list price"
        case ErrorCode.MESSAGE_TOO_LONG:
            return f"a message over {rules.max_message_chars} characters"
        case ErrorCode.MESSAGE_EMPTY:
            return "an empty message"
        case ErrorCode.UNKNOWN_BUYER:
            return None
        case ErrorCode.NEGOTIATION_CLOSED | ErrorCode.DEADLINE_PASSED | ErrorCode.INVALID_ACTION:
            return None
        case _:
            assert_never(code)


def forfeit_rule(
    rules: Rules,
    *,
    ends: str = "the negotiation ends without a deal",
    also: Sequence[str] = (),
) -> str:
    """The forfeit rule as it is enforced: which refusals count, and how many forfeit (a
    market's seller: ``also`` the market's own counted refusals, and ``ends`` that the market
    ends without a sale: ``people_market``)."""
    phrases = [_counted_phrase(c, rules) for c in ErrorCode if counts_toward_forfeit(c)]
    kinds = ", ".join(dict.fromkeys([*(p for p in phrases if p is not None), *also]))
    return (
        f"A move the rules refuse ({kinds}) changes nothing but the clock; after "
        f"{rules.max_invalid_actions} of them you forfeit and {ends}. A price left empty, at 0 "
        "or below is refused without counting."
    )


# -- the briefing -----------------------------------------------------------------------------


def person_briefing(
    view: SeatView,
    rules: Rules,
    clock: ClockKind,
    surface: Surface,
    payment: str | None = None,
    information: str | None = None,
) -> str:
    """A person's briefing: the model's facts (``briefing.situation``, its rules) and how to act
    on ``surface``. Only the seat's own value. ``payment``: how a study turns the score into
    money (``PayoffRule.text``), stated where the score is; ``information``: what a study's
    information condition tells them of the other side's number (``value_range_rule``)."""
    moves = [
        f"- To make an offer, {_offer_control(surface)}.",
        f"- To take or turn down their live offer, {control('accept', surface)} or "
        f"{control('reject', surface)}.",
        f"- To send a message, {_message_control(surface)}.",
        f"- To end the negotiation for good without a deal, {control('walk_away', surface)}.",
        f"- {_waiting(clock, surface)}",
    ]
    state = control("get_state", surface)
    if state is not None:
        moves.append(f"- To see everything so far, {state}.")
    if surface == "terminal":
        moves.append(
            f"- offer, reject and walk take a message after them (offer 950 my last price); wait "
            f"takes the seconds to wait, at most {MAX_WAIT_S:g} (default {DEFAULT_WAIT_S:g}); "
            "help lists the commands."
        )
    paid = "" if payment is None else f"\nPayment: {payment}"
    known = "" if information is None else f"\n{information}"
    return f"""You are the {view.role} in a one-item negotiation.

{situation(view)}{known}{paid}

Rules:
- {OFFERS_RULE}
- {clock_rule(view, rules, clock, "you and the other side")}
- {forfeit_rule(rules)}

How to play:
{chr(10).join(moves)}
"""


def value_range_rule(view: SeatView, spec: ScenarioSpec = DEFAULT_SPEC) -> str:
    """What a study's ``value_range`` condition tells a person of the other side's private
    number: the range the scenario generator draws it from (``generator.value_range``),
    rendered from the generator's spec and the public list price alone, never the number."""
    other = ROLES[1 - ROLES.index(view.role)]
    low, high = value_range(view.scenario.list_price, other, spec)
    share = [f"{round(bound * 100, 1):g}%" for bound in value_bounds(other, spec)]
    what = "private value" if other == "buyer" else "private cost"
    cur = view.scenario.currency
    return (
        f"The {other}'s {what} was drawn at random for this negotiation: it lies between "
        f"{share[0]} and {share[1]} of the list price, that is between {money(low, cur)} and "
        f"{money(high, cur)}. You are not told where in that range it is."
    )


def _message_control(surface: Surface) -> str:
    if surface == "web":
        return f"write it in the {MESSAGE_FIELD} field and {control('send_message', surface)}"
    return f"{control('send_message', surface)}"


def _waiting(clock: ClockKind, surface: Surface) -> str:
    if updates_itself(clock, surface):
        return "Their moves appear here as they make them; you need not wait for them."
    return f"To hear from the other side, {control('wait_for_opponent', surface)}."


# -- hints ------------------------------------------------------------------------------------


def person_hint(
    role: Role,
    live_offers: Sequence[LiveOffer],
    outcome: SeatOutcome | None,
    *,
    currency: str,
    clock: ClockKind,
    surface: Surface,
    can_start_next: bool = False,
) -> str:
    """What the person can usefully do next, in the surface's controls (``seat_text.hint``'s
    facts: the outcome, their live offer)."""
    if outcome is not None:
        following = control("new_negotiation", surface) if can_start_next else None
        if following is not None:
            return f"This negotiation is over: {following} for the next one."
        return "This negotiation is over."
    theirs = next((o for o in live_offers if o.by != role), None)
    wait = control("wait_for_opponent", surface)
    if theirs is not None:
        head = (
            f"They offer {money(theirs.price, currency)}: {control('accept', surface)} or "
            f"{control('reject', surface)}, or make an offer of your own"
        )
        if updates_itself(clock, surface):
            return f"{head}."
        return f"{head}; or {wait}."
    if updates_itself(clock, surface):
        return f"Make an offer: {_offer_control(surface)}. Their moves appear here."
    return f"Make an offer ({_offer_control(surface)}), or {wait} to hear from them."


def observation_hint(
    observation: Observation, *, clock: ClockKind, surface: Surface, can_start_next: bool = False
) -> str:
    """``hint`` for what a seat sees now."""
    return person_hint(
        observation.role,
        observation.live_offers,
        observation.outcome,
        currency=observation.scenario.currency,
        clock=clock,
        surface=surface,
        can_start_next=can_start_next,
    )


# -- refusals ---------------------------------------------------------------------------------

_FIELDS = {"price": "The price", "message": "The message", "text": "The message"}
"""Argument fields a person fills in, as a refusal names them."""


def refusal(error: ToolErrorPayload, surface: Surface) -> str:
    """A refusal in a person's words: what went wrong and what to do on ``surface``; no code
    and no tool name (the code stays in the payload for programs)."""
    reason = _reason(error)
    advice = _advice(error.code, surface)
    return f"{reason} {advice}".strip()


def _reason(error: ToolErrorPayload) -> str:
    code, message = error.code, error.message
    if code == SessionErrorCode.INVALID_ARGUMENTS:
        field, _, rest = message.partition(" ")
        label = _FIELDS.get(field)
        what, sep, _ = rest.rpartition(". Call ")
        if label is None or not sep:
            return "That request was not understood."
        return f"{label} {what}."
    match code:
        case SessionErrorCode.UNKNOWN_TOOL:
            return "That is not something you can do here."
        case SessionErrorCode.NEGOTIATION_RUNNING:
            return "This negotiation is still running: finish it first."
        case SessionErrorCode.TOO_MANY_CALLS:
            return "Your last moves are still being answered."
        case SessionErrorCode.TOO_MANY_NEGOTIATIONS:
            return "Too many negotiations were started in the last minute."
        case SessionErrorCode.TOO_MANY_MESSAGE_CHARS:
            return "You have sent as much message text as this room allows for now."
        case _:
            hint = ERROR_HINTS.get(code, "")
            return message.removesuffix(hint).strip() if hint else message


def _advice(code: str, surface: Surface) -> str:
    """What to do after a refusal of ``code`` on ``surface`` (``seat_text.ERROR_HINTS`` for
    people)."""
    web = surface == "web"
    state = control("get_state", surface)
    see = "the page shows it" if state is None else f"{state} to see it"
    match code:
        case ErrorCode.OFFER_NOT_FOUND | ErrorCode.OFFER_NOT_LIVE:
            return f"Only their live offer can be accepted or rejected: {see}."
        case ErrorCode.OWN_OFFER:
            return f"To change your own offer, make a new one: {_offer_control(surface)}."
        case ErrorCode.PRICE_NOT_FINITE | SessionErrorCode.INVALID_ARGUMENTS if web:
            return f"Enter a price such as 1250.00 in the {PRICE_FIELD} field."
        case ErrorCode.PRICE_NOT_FINITE:
            return "Type the price as a plain number, such as offer 1250."
        case ErrorCode.PRICE_OUT_OF_RANGE:
            return "Offer a positive price within that limit."
        case ErrorCode.MESSAGE_TOO_LONG:
            return "Send a shorter message."
        case ErrorCode.MESSAGE_EMPTY:
            return f"Write something first, then {_message_control(surface)}."
        case ErrorCode.NEGOTIATION_CLOSED | ErrorCode.DEADLINE_PASSED:
            return f"The outcome is in: {see}."
        case ErrorCode.INVALID_ACTION | SessionErrorCode.UNKNOWN_TOOL:
            return "Use the page's buttons." if web else "Type help for the commands."
        case SessionErrorCode.RESULT_PENDING:
            return "Do not repeat it."
        case SessionErrorCode.TOO_MANY_CALLS:
            return "Wait for their answers before you press again." if web else "Wait a moment."
        case SessionErrorCode.UPSTREAM_UNAVAILABLE | SessionErrorCode.TOO_MANY_NEGOTIATIONS:
            return "Try again in a moment."
        case SessionErrorCode.TOO_MANY_MESSAGE_CHARS:
            return "Act without a message, or wait a minute."
        case SessionErrorCode.SEAT_TOKEN_REFUSED:
            return "Open your seat's link again, or ask the organiser for a new one."
        case _:
            return ""


__all__ = [
    "MESSAGE_FIELD",
    "PRICE_FIELD",
    "WEB_BUTTONS",
    "Surface",
    "control",
    "counts_toward_forfeit",
    "forfeit_rule",
    "observation_hint",
    "person_briefing",
    "person_hint",
    "refusal",
    "tool_names_in",
    "updates_itself",
    "value_range_rule",
]

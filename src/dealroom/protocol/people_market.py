"""What a person reads in a market room on the web seat page: the seller's briefing, hint and
replies, each buyer's thread in words, and whose turn the market waits for. Pure.

A model seller reads ``dealroom.protocol.market_text``; a person reads the same facts
(``market_text.market_facts``: the market's rules, its own cost) with the page's controls in
place of tool names (``people_text.control``), the events in a person's words
(``people_log.person_lines``) and the clock in minutes and seconds. A market's buyer reads the
bilateral person's texts (``people_text``) followed by ``market_text.buyer_market_text``, as its
model reads the bilateral briefing followed by it. Nothing here is given a buyer's value.
"""

from __future__ import annotations

from typing import Literal, assert_never, get_args

from dealroom.protocol.errors import ErrorCode
from dealroom.protocol.market import (
    MarketEndReason,
    MarketObservation,
    MarketSeatOutcome,
    MarketView,
)
from dealroom.protocol.market_text import WakeHead, market_facts, wake_head
from dealroom.protocol.people_text import (
    MESSAGE_FIELD,
    PRICE_FIELD,
    control,
    counts_toward_forfeit,
    forfeit_rule,
    refusal,
)
from dealroom.protocol.text import money
from dealroom.protocol.wire import ToolErrorPayload

LEAVE_MARKET = "Leave the market"
"""The seller's page's button that walks away from the whole market (``walk_away`` with no
buyer); each buyer's column has its own walk-away button (``people_text.WEB_BUTTONS``)."""


MARKET_COUNTED: dict[ErrorCode, str] = {
    ErrorCode.UNKNOWN_BUYER: "an action for a buyer who is not in the market",
    ErrorCode.NEGOTIATION_CLOSED: "an action in a buyer's thread that has ended",
}
"""The seller's refusals that ``MarketReferee`` counts besides the bilateral referee's
(``people_text.counts_toward_forfeit``), each in a few words: it counts every refused action
of the seller's while the market is open (a call that names no buyer is refused before it acts,
``invalid_arguments``, and counts for nothing)."""


def seller_counts_toward_forfeit(code: ErrorCode) -> bool:
    """True for the refusals of a market's seller that raise its invalid-action count (while
    the market is open; its end refuses without counting)."""
    return code in MARKET_COUNTED or counts_toward_forfeit(code)


def seller_briefing(view: MarketView, clock: Literal["virtual", "wall"] = "virtual") -> str:
    """A person seller's briefing on the web seat page: the model's facts (on the room's
    ``clock``), the page's controls (one column per buyer). Only the seller's own cost."""
    facts = market_facts(view, clock)
    rules = view.rules.rules
    offer = f"enter a price in the {PRICE_FIELD} field of that buyer's column and "
    moves = [
        "- Each buyer has a column of its own: its moves, its live offer and your controls for "
        "that buyer.",
        f"- To make an offer to a buyer, {offer}{control('make_offer', 'web')}.",
        f"- To take or turn down a buyer's live offer, {control('accept', 'web')} or "
        f"{control('reject', 'web')} in its column.",
        f"- To send a buyer a message, write it in the {MESSAGE_FIELD} field of its column and "
        f"{control('send_message', 'web')}.",
        f"- To leave one buyer's thread for good, {control('walk_away', 'web')} in its column; to "
        f'end the whole market without a sale, press "{LEAVE_MARKET}".',
        f"- To hear from the buyers, {control('wait_for_opponent', 'web')}.",
    ]
    forfeit = forfeit_rule(
        rules, ends="the market ends without a sale", also=list(MARKET_COUNTED.values())
    )
    return f"""{facts.opening}

Rules:
- {facts.threads}
- {facts.offers}
- {facts.clock}
- {facts.budget}
- {forfeit} Refused moves count across the market.

How to play:
{chr(10).join(moves)}
"""


def market_ending(reason: MarketEndReason) -> str:
    """Why a market ended, in a few words (the wire's ``MarketEndReason`` is a code)."""
    match reason:
        case "sold":
            return "an offer was accepted"
        case "deadline":
            return "the deadline passed"
        case "walk_away":
            return "you left the market"
        case "forfeit":
            return "you forfeited after too many refused moves"
        case "action_limit":
            return "you used your last action"
        case "buyers_left":
            return "every buyer left"
        case _:
            assert_never(reason)


def seller_outcome(outcome: MarketSeatOutcome, currency: str) -> str:
    """The market's end as the person seller reads it."""
    surplus = money(outcome.surplus, currency)
    if outcome.price is None or outcome.buyer is None:
        return f"No sale ({market_ending(outcome.end_reason)}); your surplus {surplus}."
    price = money(outcome.price, currency)
    return f"Sold to {outcome.buyer} at {price}; your surplus {surplus}."


def seller_hint(observation: MarketObservation) -> str:
    """What the person seller can usefully do next: the highest live bid, if any."""
    o = observation
    cur = o.market.scenario.currency
    if o.outcome is not None:
        return "The market is over."
    best = o.best_bid()
    wait = control("wait_for_opponent", "web")
    if best is not None:
        buyer, bid = best
        return (
            f"The highest bid is {buyer}'s {money(bid.price, cur)}: {control('accept', 'web')} "
            f"in {buyer}'s column, make an offer of your own to any buyer, or {wait}."
        )
    return f"Make an offer to a buyer in its column, or {wait} to hear from the buyers."


_WOKE: dict[str, WakeHead] = {wake_head(head): head for head in get_args(WakeHead)}


def seller_reply(text: str, clock: Literal["virtual", "wall"] = "virtual") -> str:
    """A call's reply in a person's words, from the head line of what the model seller reads
    (``ok``, ``woke: ...``, or a refusal's ``code: sentence``); the page shows the rest. On the
    room's ``clock``: on the wall clock the market waits for no seat (a wait still asleep when
    the server stops waiting is the buyers still deciding)."""
    head = text.partition("\n")[0]
    if head == "ok":
        return "Done."
    woke = _WOKE.get(head)
    match woke:
        case None:
            return refusal(ToolErrorPayload.parse(head), "web")
        case "news":
            return "A buyer moved."
        case "timeout":
            return "No buyer moved in that time."
        case "ended":
            return "The market is over."
        case "pending" if clock == "wall":
            return "The buyers are still deciding; their moves will appear here."
        case "pending":
            return "The market is waiting for other seats to decide; their moves will appear here."
        case _:
            assert_never(woke)


def turn_line(
    *,
    your_turn: bool,
    absent: bool,
    over: bool,
    clock: Literal["virtual", "wall"] = "virtual",
    waiting_for: str | None = None,
) -> str:
    """Whose turn the market's clock waits for, as a seat's page says it: on the virtual clock
    the clock stops at each seat played from outside until it decides, one at a time, and a
    seat that stalled the others is counted absent until its next move; on the wall clock
    there are no turns (every move takes effect as it is made). ``waiting_for``: the buyer the
    clock waits for, named on the seller's page only (the seller knows every buyer; a buyer's
    page passes None, so it never learns which other seat it waits for)."""
    if over:
        return "The market is over."
    if absent:
        return (
            "You were away too long, so the market went on without you: your next move brings "
            "you back."
        )
    if clock == "wall":
        return "The clock runs in real time: every move you make takes effect at once."
    if your_turn:
        return "Your turn: the market's clock waits for your move."
    who, them = (
        ("other seats are deciding", "them")
        if waiting_for is None
        else (f"{waiting_for} is deciding", "that buyer")
    )
    return (
        f"Waiting for the market: {who}, and the clock waits for {them}. This page updates by "
        "itself; a move you make now is sent at your turn."
    )


__all__ = [
    "LEAVE_MARKET",
    "MARKET_COUNTED",
    "market_ending",
    "seller_briefing",
    "seller_counts_toward_forfeit",
    "seller_hint",
    "seller_outcome",
    "seller_reply",
    "turn_line",
]

"""The briefing a seat reads before negotiating: role, item, own private value, rules, tools.

One text for every kind of player (the MCP ``briefing`` prompt, LLM agents' instructions, SFT
exports), so that an LLM sees exactly what a scripted agent knows and nothing more.
"""

from __future__ import annotations

from typing import Literal

from dealroom.protocol.rules import DEFAULT_RULES, Rules
from dealroom.protocol.scenario import SeatView
from dealroom.protocol.text import money


def briefing(
    view: SeatView, rules: Rules = DEFAULT_RULES, clock: Literal["virtual", "wall"] = "virtual"
) -> str:
    """The briefing for one seat: the first user message of every conversation.

    Mentions only that seat's own private value. ``clock`` says how time passes (the MCP server
    of a wall-clock room; every other surface plays on the virtual clock).
    """
    s = view.scenario
    cur = s.currency
    value = money(view.private_value, cur)
    if view.role == "buyer":
        stake = (
            f"Your private value is {value}: the most the item is worth to you. Paying less is "
            f"your gain (your surplus is {value} minus the price); paying more loses you money."
        )
        goal = "buy the item for as little as possible"
    else:
        stake = (
            f"Your private cost is {value}: the least you can accept. Selling for more is your "
            f"gain (your surplus is the price minus {value}); selling for less loses you money."
        )
        goal = "sell the item for as much as possible"
    costs = rules.costs
    return f"""You are the {view.role} in a one-item negotiation.

Item: {s.item.name} ({s.item.category}). {s.item.description}
List price: {money(s.list_price, cur)} (public; both sides see it).
{stake}
The other side has its own private number, which you do not know; they do not know yours. \
Never reveal yours.

Goal: {goal}, without ever agreeing to a deal that loses you money. No deal is better than a \
losing deal, and a good deal is better than no deal.

Rules:
- Offers are binding: make_offer(price) proposes a price in {cur}; if the other side accepts it, \
the deal closes at that price at once. You have at most one live offer; a new one replaces it.
- accept(offer_id) closes the deal at the other side's live offer; reject(offer_id) turns it \
down. send_message(text) is cheap talk: nothing said binds anyone. walk_away() ends the \
negotiation for good without a deal.
- The negotiation clock runs for {s.deadline:g} seconds; at the deadline it ends without a deal. \
Actions take clock time (offer {costs.make_offer:g} s, message {costs.send_message:g} s, \
reject {costs.reject:g} s, accept {costs.accept:g} s), and so does thinking.
- wait_for_opponent() waits for the other side's next move; get_state() shows the current \
offers, events and time left.
- Invalid actions are refused with an error and change nothing but the clock (their time \
passes), but after {rules.max_invalid_actions} of them you forfeit.

How to play through the tools:
- {_timing(rules, clock)}
- Every tool result starts with ok (or woke: ... after a wait, or an error as code: reason), \
then lists the events you have not seen yet as [time] lines, the clock, the live offers and what \
you can do next.
- A good loop: make an offer (optionally with a message), then call wait_for_opponent until the \
other side answers (woke: news), and respond. woke: pending means the other side is still \
deciding: call wait_for_opponent again.
- Accept an offer only if the price gives you a positive surplus.
- Every reply of yours must call a tool: a reply without a tool call ends your part in the \
negotiation (you stay silent until it ends; your live offer can still be accepted).

Success is the largest surplus you can get: as buyer your value minus the price, as seller the \
price minus your cost. A deal at a loss counts against you; no deal scores zero.
"""


def _timing(rules: Rules, clock: Literal["virtual", "wall"]) -> str:
    if clock == "wall":
        return "The clock is real time: it runs while you think."
    return (
        "The clock is virtual: time passes only as seats act and wait, so how fast you think in "
        "real time does not matter, but every action and every wake-up costs clock time "
        f"({rules.thinking.per_wake:g} s of thinking on your first action after each wait)."
    )

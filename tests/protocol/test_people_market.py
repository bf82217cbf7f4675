"""A market's words for people (``people_market``): the seller's briefing states the model's
facts (``market_text.market_facts``) with the page's controls and only its own cost; every
button and field it names is the seller's page's own; a call's reply and refusal read without
tool names; the turn line never names another seat."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import get_args

import pytest

from dealroom.engine.market import market_view
from dealroom.protocol import (
    Accept,
    ErrorCode,
    MakeOffer,
    Reject,
    RuleViolation,
    SendMessage,
    WalkAway,
    people_text,
)
from dealroom.protocol.market import Addressed, MarketEndReason, MarketRules, MarketSeatOutcome
from dealroom.protocol.market_referee import MarketReferee
from dealroom.protocol.market_scenarios import DEFAULT_MARKET_SPEC, market_at
from dealroom.protocol.market_text import WakeHead, market_briefing, market_facts, wake_head
from dealroom.protocol.people_market import (
    LEAVE_MARKET,
    MARKET_COUNTED,
    market_ending,
    seller_briefing,
    seller_counts_toward_forfeit,
    seller_outcome,
    seller_reply,
    turn_line,
)
from dealroom.protocol.rules import Rules
from dealroom.protocol.seat_text import error_payload

STATIC = Path(__file__).resolve().parents[2] / "src/dealroom/server/web/static"
MARKET = market_at(7, 0, "mid", 3, DEFAULT_MARKET_SPEC)
VIEW = market_view(MARKET, MarketRules(rules=Rules(max_invalid_actions=4), seller_actions=40))


def test_a_person_sellers_briefing_states_the_models_facts_with_the_pages_controls() -> None:
    text = seller_briefing(VIEW)
    facts = market_facts(VIEW)
    for fact in facts:
        assert fact in text and fact in market_briefing(VIEW)  # one home for both
    assert people_text.tool_names_in(text) == [] and "invalid_arguments" not in text
    assert f"${MARKET.seller_cost:,.2f}" in text
    assert not [v for v in MARKET.buyer_values if f"{v:,.2f}" in text]
    assert "40 actions" in text and "after 4 of them you forfeit and the market ends" in text


def test_every_control_the_sellers_briefing_names_is_on_the_sellers_page() -> None:
    page = (STATIC / "seat.html").read_text() + (STATIC / "seat-market.js").read_text()
    text = seller_briefing(VIEW)
    labels = [
        label
        for tool, label in people_text.WEB_BUTTONS.items()
        if label is not None and tool != "new_negotiation"
    ]
    for label in [*labels, LEAVE_MARKET, people_text.PRICE_FIELD, people_text.MESSAGE_FIELD]:
        assert label in text, label
        assert f">{label}<" in page or f'"{label}"' in page, label


@pytest.mark.parametrize("head", get_args(WakeHead))
def test_a_wait_reads_in_a_persons_words(head: WakeHead) -> None:
    reply = seller_reply(f"{wake_head(head)}\nclock: 12 s, 168 s left; 39 actions left.")
    assert reply and people_text.tool_names_in(reply) == [] and "woke" not in reply


def test_a_wall_clock_wait_still_asleep_says_no_market_waits_for_a_seat() -> None:
    """On the wall clock there are no turns: the seller's pending wait does not say the market
    waits for other seats to decide (as it did, the virtual clock's line)."""
    pending = f"{wake_head('pending')}\nclock: 12 s, 168 s left; 39 actions left."
    assert "market is waiting" in seller_reply(pending)
    wall = seller_reply(pending, "wall")
    assert "waiting" not in wall and wall.startswith("The buyers are still deciding")


def test_a_refusal_reads_in_a_persons_words_and_an_action_as_done() -> None:
    assert seller_reply("ok\n[3 s] b1: offered 900") == "Done."
    payload = error_payload(ErrorCode.OFFER_NOT_LIVE, "Offer o9 is not live.")
    reply = seller_reply(payload.text())
    assert reply.startswith("Offer o9 is not live.") and "offer_not_live" not in reply
    assert people_text.tool_names_in(reply) == []


@pytest.mark.parametrize("reason", get_args(MarketEndReason))
def test_every_end_of_a_market_reads_in_words(reason: MarketEndReason) -> None:
    sold = reason == "sold"
    outcome = MarketSeatOutcome(
        status="deal" if sold else "no_deal",
        end_reason=reason,
        buyer="b2" if sold else None,
        price=Decimal("1500.00") if sold else None,
        time=12.0,
        surplus=Decimal("300.00") if sold else Decimal("0.00"),
    )
    text = seller_outcome(outcome, "USD")
    assert market_ending(reason) in text or sold
    assert text.endswith("your surplus $300.00." if sold else "your surplus $0.00.")


def test_the_turn_line_names_no_other_seat() -> None:
    lines = [
        turn_line(your_turn=yours, absent=absent, over=over)
        for yours in (True, False)
        for absent in (True, False)
        for over in (True, False)
    ]
    assert len(set(lines)) == 4  # over; absent; yours; waiting
    assert not [line for line in lines if any(b in line for b in MARKET.buyers)]


def test_the_sellers_turn_line_names_the_buyer_the_clock_waits_for() -> None:
    named = turn_line(your_turn=False, absent=False, over=False, waiting_for="b2")
    assert named.startswith("Waiting for the market: b2 is deciding, and the clock waits for")
    unnamed = turn_line(your_turn=False, absent=False, over=False)
    assert "other seats are deciding" in unnamed and "other seats" not in named


SELLER_ACTIONS: dict[ErrorCode, Addressed] = {
    ErrorCode.OFFER_NOT_FOUND: Addressed("b1", Accept(offer_id="o99")),
    ErrorCode.OFFER_NOT_LIVE: Addressed("b1", Reject(offer_id="o2")),
    ErrorCode.OWN_OFFER: Addressed("b1", Accept(offer_id="o1")),
    ErrorCode.PRICE_NOT_FINITE: Addressed("b1", MakeOffer(price=Decimal("NaN"))),
    ErrorCode.PRICE_OUT_OF_RANGE: Addressed("b1", MakeOffer(price=Decimal("1e9"))),
    ErrorCode.MESSAGE_TOO_LONG: Addressed("b1", SendMessage(text="x" * 3000)),
    ErrorCode.MESSAGE_EMPTY: Addressed("b1", SendMessage(text=" ")),
    ErrorCode.UNKNOWN_BUYER: Addressed("b9", MakeOffer(price=Decimal(2000))),
    ErrorCode.NEGOTIATION_CLOSED: Addressed("b2", MakeOffer(price=Decimal(2000))),
}


@pytest.mark.parametrize("code", list(ErrorCode))
def test_the_refusals_a_person_seller_is_told_count_are_those_the_market_counts(
    code: ErrorCode,
) -> None:
    """With one invalid action allowed, a counted refusal forfeits the market at once."""
    referee = MarketReferee(MARKET, MarketRules(rules=Rules(max_invalid_actions=1)))
    referee.apply_seller(Addressed("b1", MakeOffer(price=Decimal(2000))), 1.0)  # o1
    referee.apply_buyer("b1", MakeOffer(price=Decimal(800)), 2.0)  # o2, replaced by o3
    referee.apply_buyer("b1", MakeOffer(price=Decimal(850)), 3.0)
    referee.apply_buyer("b2", WalkAway(), 4.0)  # b2's thread has ended
    item = SELLER_ACTIONS.get(code)
    if item is None:  # the market's end refuses: nothing left to count
        assert not seller_counts_toward_forfeit(code)
        return
    with pytest.raises(RuleViolation) as refused:
        referee.apply_seller(item, 5.0)
    assert refused.value.code == code
    forfeited = referee.outcome is not None and referee.outcome.end_reason == "forfeit"
    assert forfeited == seller_counts_toward_forfeit(code)
    assert (MARKET_COUNTED.get(code, "") in seller_briefing(VIEW)) or code not in MARKET_COUNTED

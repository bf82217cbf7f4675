"""A model in a market's seller seat (``dealroom.agents.llm_market``), against the loopback
scripted endpoint of ``tests/fake_openai.py``: no network."""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import anyio
import pytest

from dealroom.agents.llm import LLMPlayer, LLMSettings
from dealroom.agents.llm_market import play_llm_market
from dealroom.analysis.market import format_market
from dealroom.play.registry import resolve
from dealroom.protocol import OfferMade
from dealroom.protocol.market import MarketScenario
from dealroom.protocol.market_referee import MarketRecord
from dealroom.protocol.market_scenarios import market_at
from dealroom.protocol.market_seat import market_tools
from dealroom.protocol.rules import DEFAULT_RULES
from fake_openai import (
    Brain,
    FakeOpenAI,
    Reply,
    Text,
    ToolCalls,
    market_bids,
    market_seller,
    scripted,
    serve,
)
from leaks import leaked
from scripted_llm import FAST_RETRY

PRIVATE_FIELDS = ("buyer_value", "buyer_values", "best_value", "gains", "buyer_surplus")


def play(
    fake: FakeOpenAI, market: MarketScenario, buyers: Sequence[str], seed: int = 0
) -> tuple[MarketRecord, dict[str, Any]]:
    player = LLMPlayer.from_spec(
        "llm:fake", base_url=fake.base_url, api_key="k", settings=LLMSettings(retry=FAST_RETRY)
    )

    async def main() -> tuple[MarketRecord, dict[str, Any]]:
        async with player:
            factories = [resolve(spec) for spec in buyers]
            return await play_llm_market(market, player, factories, buyer_names=buyers, seed=seed)

    return anyio.run(main)


def play_brain(
    brain: Brain, market: MarketScenario, buyers: Sequence[str], seed: int = 0
) -> tuple[MarketRecord, dict[str, Any], list[dict[str, Any]]]:
    with serve(brain) as fake:
        record, extra = play(fake, market, buyers, seed)
        return record, extra, fake.requests


def tool_texts(extra: dict[str, Any]) -> list[str]:
    return [m["content"] for m in extra["conversation"]["messages"] if m["role"] == "tool"]


def test_a_model_seller_probes_every_buyer_and_sells_to_the_highest_bid() -> None:
    market = market_at(7, 0, "mid", 3)
    record, extra, requests = play_brain(market_seller(), market, ["linear"] * 3)
    outcome = record.outcome
    assert (outcome.status, outcome.end_reason) == ("deal", "sold")
    # The model read every thread with get_state, then accepted the highest live bid it saw.
    state = tool_texts(extra)[-2]
    assert state.startswith("you: the seller; buyers: b1, b2, b3, each in its own thread;")
    bids = market_bids(state)
    assert len(bids) == 3
    best, (offer_id, price) = max(bids.items(), key=lambda item: item[1][1])
    assert (outcome.buyer, outcome.price) == (best, Decimal(f"{price:.2f}"))
    sale = [e for e in record.thread_events(best) if e.type == "offer_accepted"]
    assert [(e.by, e.offer_id) for e in sale] == [("seller", offer_id)]  # type: ignore[union-attr]
    # It asked every buyer first: each thread opens with the seller's offer at 1.3 x list.
    ask = round(Decimal("1.3") * market.base.list_price, 2)
    for buyer in market.buyers:
        first = next(e for e in record.thread_events(buyer) if e.by == "seller")
        assert isinstance(first, OfferMade) and first.price == ask
    others = [b for b in market.buyers if b != best]
    assert all(record.thread_events(b)[-1].reason == "sold_elsewhere" for b in others)  # type: ignore[union-attr]
    # What the model read after the sale, and what the transcript prints.
    assert tool_texts(extra)[-1].splitlines()[0] == "ok"
    surplus = outcome.price - market.seller_cost if outcome.price else None
    assert tool_texts(extra)[-1].endswith(
        f"outcome: sold to {best} at ${outcome.price:,.2f}; your surplus ${surplus:,.2f}."
    )
    text = format_market(record)
    assert f"Outcome: sold to {best} at ${outcome.price:,.2f}" in text
    assert f" {best} | seller accepted {offer_id}" in text
    assert record.seller == "llm:fake" and record.buyers == ("linear",) * 3
    # The sale ended the market: no model call after it.
    assert extra["ended_by"] == "outcome" and extra["refused_tool_calls"] == 0
    assert extra["tool_calls"] == {
        "accept": 1,
        "get_state": 1,
        "make_offer": 3,
        "wait_for_opponent": 4,
    }
    # Every request offers the market seller's tools, and only them.
    assert all(r["tools"] == market_tools(DEFAULT_RULES) for r in requests)
    assert len(requests) == extra["model_calls"] == 7


def test_the_same_model_replies_play_the_same_market_record() -> None:
    market = market_at(11, 2, "high", 4)
    first, _, _ = play_brain(market_seller(), market, ["boulware", "linear", "zic", "micro"], 3)
    again, _, _ = play_brain(market_seller(), market, ["boulware", "linear", "zic", "micro"], 3)
    assert first.model_dump_json() == again.model_dump_json()


def test_an_unknown_buyer_is_refused_in_one_line_and_counted_by_the_referee() -> None:
    market = market_at(3, 1, "low", 2)
    replies: list[Reply] = [
        ToolCalls((("make_offer", {"buyer": "b9", "price": 50.0}),)),
        ToolCalls((("make_offer", {"buyer": 3, "price": 50.0}),)),
        ToolCalls((("make_offer", {"price": 50.0}),)),
        ToolCalls((("haggle", {}),)),
        *[ToolCalls((("accept", {"buyer": f"x{i}", "offer_id": "o1"}),)) for i in range(9)],
    ]
    record, extra, _ = play_brain(scripted(replies), market, ["hardliner"] * 2)
    texts = tool_texts(extra)
    assert texts[0] == "unknown_buyer: There is no buyer 'b9' (the buyers: b1, b2)."
    # Refused before it acts (arguments, signature, tool): not counted by the referee.
    assert texts[1].startswith("invalid_arguments: buyer must be a JSON string (got 3).")
    assert texts[2] == (
        "{'error': \"MarketToolMethods.make_offer() missing 1 required positional argument: "
        "'buyer'\"}"
    )
    assert texts[3] == "{'error': 'Tool haggle not found.'}"
    # The referee's count: the tenth refused action (b9 and nine more) forfeits the market.
    assert all(t.startswith("unknown_buyer: There is no buyer 'x") for t in texts[4:])
    assert all("\n" not in t for t in texts)
    assert "you forfeited and the market ended without a sale" in texts[-1]
    assert "forfeited" not in texts[-2]
    assert (record.outcome.end_reason, record.outcome.seller_actions) == ("forfeit", 0)
    assert (extra["refused_tool_calls"], extra["invalid_tool_calls"]) == (11, 2)
    assert extra["ended_by"] == "outcome"


def test_a_seller_whose_play_ends_sits_out_and_its_offer_can_still_be_accepted() -> None:
    market = market_at(5, 0, "mid", 2)
    cheap = float(market.seller_cost + 1)
    keen = max(market.buyers, key=market.value)  # the one whose value is above the offer
    replies: list[Reply] = [
        ToolCalls((("make_offer", {"buyer": keen, "price": cheap}),)),
        Text("Done."),
    ]
    record, extra, requests = play_brain(scripted(replies), market, ["linear"] * 2)
    outcome = record.outcome
    assert (outcome.buyer, outcome.price) == (keen, Decimal(f"{cheap:.2f}"))
    assert outcome.time > 30  # long after the model's last call
    assert extra["ended_by"] == "reply" and len(requests) == 2


@pytest.mark.parametrize("seed", range(4))
def test_no_text_the_model_seller_reads_shows_a_buyers_value(seed: int) -> None:
    buyers = ["linear", "boulware", "zic", "micro", "conceder"][: 2 + seed % 3]
    market = market_at(seed, seed, ("low", "mid", "high")[seed % 3], len(buyers))
    record, _, requests = play_brain(market_seller(waits=2 + seed), market, buyers, seed)
    assert requests
    for buyer, value in zip(market.buyers, market.buyer_values, strict=True):
        offered = {
            e.price for e in record.thread_events(buyer) if isinstance(e, OfferMade)
        }  # a buyer that bid exactly its value made it public
        for request in requests:
            text = json.dumps(request)
            assert leaked(text, value, offered, PRIVATE_FIELDS) is None, (buyer, value)


def test_the_leak_check_sees_a_value_in_a_request() -> None:
    value = Decimal("1306.55")
    assert leaked(json.dumps({"content": "b1 values it at $1,306.55"}), value, set()) is not None
    assert leaked('{"best_value": 1}', Decimal("2.5"), set(), PRIVATE_FIELDS) == "best_value"


def test_actions_take_effect_one_after_another_on_the_sellers_clock() -> None:
    market = market_at(2, 0, "mid", 2)
    replies: list[Reply] = [
        ToolCalls(
            (
                ("make_offer", {"buyer": "b1", "price": 5000.0}),
                ("make_offer", {"buyer": "b2", "price": 5000.0}),
                ("get_state", {}),
                ("send_message", {"buyer": "b1", "text": "Firm."}),
            )
        ),
    ]
    _, extra, _ = play_brain(scripted(replies), market, ["hardliner"] * 2)
    clocks = [t.splitlines()[1] if t.startswith("you:") else t for t in tool_texts(extra)]
    # 1 s of thinking and 5 s for the first offer; the next actions follow on the same clock,
    # each its own cost (plus the clock's least step); get_state costs nothing.
    assert [next(x for x in c.splitlines() if x.startswith("clock: ")) for c in clocks] == [
        "clock: 6 s, 174 s left; 99 actions left.",
        "clock: 11.001 s, 168.999 s left; 98 actions left.",
        "clock: 11.001 s, 168.999 s left; 98 actions left.",
        "clock: 14.002 s, 165.998 s left; 97 actions left.",
    ]

"""A market's buyer driven from outside, one decision per wake (a served room's client)."""

from __future__ import annotations

import pytest

from dealroom.agents import builtin  # noqa: F401  # pyright: ignore[reportUnusedImport]
from dealroom.agents.market import market_seller
from dealroom.engine.market import BuyerWake, MarketRoom, market_agents, market_record
from dealroom.engine.market_calls import MarketBuyerCalls
from dealroom.play.registry import resolve
from dealroom.protocol import Accept, ErrorCode, MakeOffer, RuleViolation
from dealroom.protocol.market_scenarios import market_at


def _room(driven: str) -> tuple[MarketRoom, object]:
    market = market_at(7, 0, "mid", 3)
    seller, buyers = market_agents(market, market_seller("auctioneer"), [resolve("linear")] * 3, 7)
    agent = buyers[driven]
    return MarketRoom(market, seller=seller, buyers={**buyers, driven: None}), agent


def test_a_driven_buyer_deciding_as_its_agent_would_plays_the_same_market() -> None:
    market = market_at(7, 0, "mid", 3)
    seller, buyers = market_agents(market, market_seller("auctioneer"), [resolve("linear")] * 3, 7)
    in_place = MarketRoom(market, seller=seller, buyers=buyers)
    in_place.run()
    room, agent = _room("b2")
    with pytest.raises(RuntimeError, match="driven buyer"):
        room.next_wake()  # the seller's API refuses to pass a buyer's wake by
    room, agent = _room("b2")
    wakes = 0
    while (wake := room.next_any_wake()) is not None:
        assert isinstance(wake, BuyerWake) and wake.buyer == "b2"
        room.decide_buyer("b2", agent.act(wake.observation))  # type: ignore[attr-defined]
        wakes += 1
    assert wakes > 1
    assert market_record(room) == market_record(in_place)


def test_a_driven_buyers_calls_take_effect_and_refusals_raise_the_referees_code() -> None:
    room, _ = _room("b1")
    calls = MarketBuyerCalls(room, "b1")
    first = calls.act(MakeOffer(price=calls.observation().private_value / 2))
    assert first.ok and [e.type for e in first.events][-1] == "offer_made"
    with pytest.raises(RuleViolation) as refused:
        calls.act(Accept(offer_id="o99"))
    assert refused.value.code == ErrorCode.OFFER_NOT_FOUND
    waited = calls.wait(30.0)
    assert waited.woke in ("news", "timeout", "ended")
    assert all(e.by != "buyer" for e in waited.events)  # its own offer was shown already
    calls.sit_out()
    assert not room.referee.is_open
    assert calls.observation().outcome is not None

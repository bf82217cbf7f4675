"""A market's buyer driven from outside, one decision per wake (a served room's client)."""

from __future__ import annotations

import pytest

from dealroom.agents import builtin  # noqa: F401  # pyright: ignore[reportUnusedImport]
from dealroom.agents.market import market_seller
from dealroom.engine.market import BuyerWake, MarketRoom, market_agents, market_record
from dealroom.engine.market_calls import MarketBuyerCalls
from dealroom.engine.market_turns import SELLER, MarketTurns
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


def test_several_driven_seats_taking_turns_play_the_market_their_agents_play_in_place() -> None:
    market = market_at(7, 0, "mid", 3)
    factories = (
        market_seller("auctioneer"),
        [resolve("linear"), resolve("zic"), resolve("linear")],
    )
    seller, buyers = market_agents(market, *factories, 7)
    in_place = MarketRoom(market, seller=seller, buyers=buyers)
    in_place.run()
    seller, buyers = market_agents(market, *factories, 7)
    room = MarketRoom(market, buyers={**buyers, "b1": None, "b3": None})
    turns = MarketTurns(room)
    assert turns.seats == (SELLER, "b1", "b3")
    taken: list[str] = []
    while (seat := turns.turn) is not None:
        taken.append(seat)
        wake = turns.wakes[seat]
        if isinstance(wake, BuyerWake):
            turns.decide_buyer(seat, buyers[seat].act(wake.observation))
        else:
            turns.decide_seller(seller.act(wake.observation))
    assert set(taken) == {SELLER, "b1", "b3"} and turns.over
    assert market_record(room) == market_record(in_place)


def test_an_absent_seat_sits_out_its_turns_and_wakes_at_the_clocks_present_when_back() -> None:
    market = market_at(7, 0, "mid", 3)
    seller, buyers = market_agents(market, market_seller("auctioneer"), [resolve("linear")] * 3, 7)
    room = MarketRoom(market, seller=seller, buyers={**buyers, "b1": None, "b2": None})
    turns = MarketTurns(room)
    assert turns.turn == "b1"
    turns.set_absent("b1")
    assert turns.turn == "b2" and turns.absent == {"b1"}
    b2 = MarketBuyerCalls(turns, "b2")
    b2.begin_wait(5.0)  # b2 sleeps 5 s on the clock; b1 sits out meanwhile
    assert turns.turn == "b2" and room.now >= 5.0
    with pytest.raises(RuntimeError, match="not the turn"):
        turns.decide_buyer("b1", buyers["b1"].act(turns.wakes["b1"].observation))  # type: ignore[arg-type]
    turns.back("b1")
    assert turns.absent == set() and turns.turn == "b2"
    b2.begin_wait(5.0)
    assert turns.turn == "b1"  # woken no earlier than the clock's present
    assert turns.wakes["b1"].observation.now >= 5.0  # type: ignore[union-attr]

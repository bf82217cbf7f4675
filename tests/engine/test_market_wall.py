"""A market on the wall clock (issue 38), pure: client seats act at the wall time their calls
arrive with no turns, house seats answer within their thinking (the bilateral wall clock's rule,
thread by thread for the seller), and the referee's market rules hold as on the virtual clock."""

from __future__ import annotations

from decimal import Decimal

import pytest

from dealroom.engine.market import MarketRoom
from dealroom.engine.market_calls import MarketBuyerCalls, MarketSellerCalls
from dealroom.engine.market_wall import WallTurns
from dealroom.protocol import (
    Accept,
    Agent,
    Decision,
    MakeOffer,
    Observation,
    WalkAway,
)
from dealroom.protocol.market import (
    Addressed,
    MarketDecision,
    MarketObservation,
    MarketRules,
    MarketScenario,
)
from dealroom.protocol.market_scenarios import market_at
from dealroom.protocol.market_seat import GetState, Wait

PER_WAKE = 1.0


class Holder:
    """A house seat whose agent never acts: whatever it hears is answered by the wall rule."""

    def act(self, observation: Observation, /) -> Decision:
        return Decision()


class SilentSeller:
    def act(self, observation: MarketObservation, /) -> MarketDecision:
        return MarketDecision()


def _market() -> MarketScenario:
    return market_at(7, 0, "mid", 3)


def _price(value: Decimal, share: str) -> Decimal:
    return (value * Decimal(share)).quantize(Decimal("0.01"))


def _events(room: MarketRoom) -> list[tuple[float, str, str | None, str]]:
    return [(e.event.t, e.buyer, e.event.by, e.event.type) for e in room.referee.log]


def test_a_virtual_market_refuses_wall_turns() -> None:
    room = MarketRoom(_market(), seller=SilentSeller(), buyers=dict.fromkeys(_market().buyers))
    with pytest.raises(ValueError, match="wall clock"):
        WallTurns(room)


def test_house_buyers_answer_a_seller_clients_offers_within_their_thinking() -> None:
    market = _market()
    holders: dict[str, Agent | None] = {b: Holder() for b in market.buyers}
    room = MarketRoom(market, buyers=holders, clock="wall")
    seller = MarketSellerCalls(WallTurns(room))
    turns = seller.turns
    assert isinstance(turns, WallTurns)
    high = _price(market.base.list_price, "1.5")
    for at, buyer in ((2.0, "b1"), (2.4, "b3")):
        turns.at_wall(at)
        text, refused = seller.move(Addressed(buyer, MakeOffer(price=high)))
        assert not refused and text.startswith("ok")
    turns.at_wall(10.0)
    assert _events(room) == [
        (2.0, "b1", "seller", "offer_made"),
        (2.4, "b3", "seller", "offer_made"),
        (round(2.0 + PER_WAKE + 0.001, 3), "b1", "buyer", "offer_rejected"),
        (round(2.4 + PER_WAKE + 0.001, 3), "b3", "buyer", "offer_rejected"),
    ]
    # A seller client's call sees the market at the wall's present: news, so it does not sleep.
    turns.called("seller")
    text, _ = seller.move(Wait(timeout_s=30.0))
    assert text.startswith("woke: news")


def test_an_answer_to_an_offer_replaced_first_is_dropped_and_the_new_one_answered() -> None:
    market = _market()
    buyers: dict[str, Agent | None] = dict.fromkeys(market.buyers)
    room = MarketRoom(market, seller=SilentSeller(), buyers=buyers, clock="wall")
    turns = WallTurns(room)
    b1 = MarketBuyerCalls(turns, "b1")
    value = market.value("b1")
    turns.at_wall(2.0)
    assert b1.act(MakeOffer(price=_price(value, "0.4"))).ok  # o1 at 2.0, answer due 3.001
    turns.at_wall(2.5)
    assert b1.act(MakeOffer(price=_price(value, "0.5"))).ok  # o2 replaces it first
    turns.at_wall(9.0)
    # The seller heard o2 at 2.5 while its answer to o1 was queued: that answer is dropped at
    # 3.001 (o1 was replaced), then the seller wakes and answers o2 a thinking time later.
    assert [e for e in _events(room) if e[2] == "seller"] == [
        (round(2.0 + 2 * (PER_WAKE + 0.001), 3), "b1", "seller", "offer_rejected")
    ]
    assert room.referee.log[-1].event.model_dump()["offer_id"] == "o2"
    assert not room.seller.errors  # dropped, never refused


def test_on_the_wall_the_first_accept_ends_every_thread_and_a_walk_away_only_its_own() -> None:
    market = _market()
    room = MarketRoom(market, buyers=dict.fromkeys(market.buyers), clock="wall")
    turns = WallTurns(room)
    seller = MarketSellerCalls(turns)
    b1, b2 = MarketBuyerCalls(turns, "b1"), MarketBuyerCalls(turns, "b2")
    turns.at_wall(1.0)
    assert b1.act(WalkAway()).ok
    assert b1.closed and not turns.over and not b2.closed
    turns.at_wall(4.0)
    assert b2.act(MakeOffer(price=_price(market.value("b2"), "0.9"))).ok
    turns.at_wall(6.5)
    turns.called("seller")
    seller.move(GetState())
    text, refused = seller.move(Addressed("b2", Accept(offer_id="o1")))
    assert not refused and text.startswith("ok") and turns.over
    outcome = room.referee.outcome
    assert outcome is not None and outcome.buyer == "b2" and outcome.time == 6.5


def test_the_sellers_turn_budget_ends_a_wall_market() -> None:
    market = _market()
    rules = MarketRules(seller_actions=2)
    room = MarketRoom(market, rules, buyers=dict.fromkeys(market.buyers), clock="wall")
    turns = WallTurns(room)
    seller = MarketSellerCalls(turns)
    high = _price(market.base.list_price, "1.5")
    for at, buyer in ((1.0, "b1"), (3.0, "b2")):
        turns.at_wall(at)
        seller.move(Addressed(buyer, MakeOffer(price=high)))
    outcome = room.referee.outcome
    assert outcome is not None and outcome.end_reason == "action_limit" and outcome.time == 3.0


def test_the_deadline_ends_a_wall_market_when_the_wall_reaches_it() -> None:
    market = _market()
    room = MarketRoom(
        market, seller=SilentSeller(), buyers=dict.fromkeys(market.buyers), clock="wall"
    )
    turns = WallTurns(room)
    turns.at_wall(market.deadline - 0.001)
    assert not turns.over and turns.next_time() == market.deadline
    turns.at_wall(market.deadline + 3.0)
    outcome = room.referee.outcome
    assert outcome is not None and outcome.end_reason == "deadline"
    assert outcome.time == market.deadline

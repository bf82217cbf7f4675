"""The market's rules (protocol/market_referee.py), one rule per test."""

from __future__ import annotations

from decimal import Decimal

import pytest

from dealroom.protocol import Accept, MakeOffer, Reject, RuleViolation, SendMessage, WalkAway
from dealroom.protocol.errors import ErrorCode
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.market import Addressed, MarketRules, MarketScenario
from dealroom.protocol.market_referee import MarketReferee
from dealroom.protocol.market_scenarios import DEFAULT_MARKET_SPEC, generate_markets, market_at
from dealroom.protocol.rules import Rules

BASE = scenario_at(0, 0, "mid").model_copy(
    update={"list_price": Decimal(1000), "seller_cost": Decimal(500), "buyer_value": Decimal(600)}
)
MARKET = MarketScenario(base=BASE, buyer_values=(Decimal(600), Decimal(900), Decimal(750)))


def referee(rules: MarketRules | None = None) -> MarketReferee:
    return MarketReferee(MARKET, rules or MarketRules())


def to(buyer: str | None, action: object) -> Addressed:
    return Addressed(buyer, action)  # type: ignore[arg-type]


def test_one_buyer_is_the_bilateral_scenario_itself() -> None:
    market = MarketScenario.of(BASE)
    assert market.thread("b1") is BASE
    assert market.public().thread_scenario("b1") == BASE.public()


def test_each_thread_is_a_bilateral_scenario_with_its_buyer_value() -> None:
    thread = MARKET.thread("b2")
    assert thread.id == f"{BASE.id}.b2"
    assert (thread.buyer_value, thread.seller_cost) == (Decimal(900), Decimal(500))
    assert MARKET.best_value == Decimal(900)


def test_the_first_accepted_offer_sells_and_ends_every_other_thread() -> None:
    market = referee()
    market.apply_seller(to("b1", MakeOffer(price=Decimal(700))), 1.0)
    market.apply_buyer("b3", MakeOffer(price=Decimal(650)), 2.0)
    entries = market.apply_buyer("b1", Accept(offer_id="o1"), 3.0)
    assert [(e.buyer, e.event.type) for e in entries] == [
        ("b1", "offer_accepted"),
        ("b1", "negotiation_ended"),
        ("b2", "negotiation_ended"),
        ("b3", "negotiation_ended"),
    ]
    assert [getattr(e.event, "reason", None) for e in entries[2:]] == ["sold_elsewhere"] * 2
    outcome = market.outcome
    assert outcome is not None and outcome.end_reason == "sold" and outcome.buyer == "b1"
    assert (outcome.seller_surplus, outcome.buyer_surplus) == (Decimal(200), Decimal(-100))
    assert outcome.buyer_ir_violation and not outcome.allocative
    assert outcome.efficiency == pytest.approx(100 / 400)  # (600 - 500) / (900 - 500)
    assert outcome.seller_share == pytest.approx(200 / 400)
    assert [t.status for t in outcome.threads] == ["deal", "no_deal", "no_deal"]
    with pytest.raises(RuleViolation, match="market has ended"):
        market.apply_buyer("b2", MakeOffer(price=Decimal(800)), 4.0)


def test_the_seller_accepts_a_buyer_offer_in_that_buyer_thread() -> None:
    market = referee()
    market.apply_buyer("b2", MakeOffer(price=Decimal(800)), 1.0)
    with pytest.raises(RuleViolation) as refused:  # o1 is b2's, not b3's
        market.apply_seller(to("b3", Accept(offer_id="o1")), 2.0)
    assert refused.value.code == ErrorCode.OFFER_NOT_FOUND
    market.apply_seller(to("b2", Accept(offer_id="o1")), 3.0)
    outcome = market.outcome
    assert outcome is not None and outcome.allocative and outcome.efficiency == 1.0


def test_a_buyer_walking_away_ends_its_thread_only() -> None:
    market = referee()
    market.apply_buyer("b1", WalkAway(), 1.0)
    assert market.is_open and market.open_buyers() == ["b2", "b3"]
    with pytest.raises(RuleViolation) as refused:
        market.apply_seller(to("b1", SendMessage(text="come back")), 2.0)
    assert refused.value.code == ErrorCode.NEGOTIATION_CLOSED
    market.apply_buyer("b2", WalkAway(), 3.0)
    market.apply_buyer("b3", WalkAway(), 4.0)
    assert market.outcome is not None and market.outcome.end_reason == "buyers_left"


def test_the_seller_walking_away_from_no_one_leaves_the_market() -> None:
    market = referee()
    market.apply_buyer("b2", WalkAway(), 1.0)
    entries = market.apply_seller(to(None, WalkAway(message="closing")), 2.0)
    assert [(e.buyer, e.event.type) for e in entries] == [
        ("b1", "walked_away"),
        ("b1", "negotiation_ended"),
        ("b3", "walked_away"),
        ("b3", "negotiation_ended"),
    ]
    assert market.outcome is not None and market.outcome.end_reason == "walk_away"


def test_the_seller_walking_away_from_one_buyer_ends_that_thread() -> None:
    market = referee()
    market.apply_seller(to("b1", WalkAway()), 1.0)
    assert market.open_buyers() == ["b2", "b3"]


def test_an_action_for_no_buyer_or_an_unknown_one_is_refused_and_counted() -> None:
    market = referee(MarketRules(rules=Rules(max_invalid_actions=3)))
    for buyer in (None, "b9"):
        with pytest.raises(RuleViolation) as refused:
            market.apply_seller(to(buyer, MakeOffer(price=Decimal(800))), 1.0)
        assert refused.value.code == ErrorCode.UNKNOWN_BUYER
    with pytest.raises(RuleViolation, match="you forfeited and the market ended"):
        market.apply_seller(to("b2", Reject(offer_id="o7")), 2.0)  # the third, in a thread
    assert market.outcome is not None and market.outcome.end_reason == "forfeit"
    assert all(t.end_reason == "forfeit" for t in market.outcome.threads)


def test_the_seller_turn_budget_ends_the_market() -> None:
    market = referee(MarketRules(seller_actions=2))
    market.apply_seller(to("b1", MakeOffer(price=Decimal(900))), 1.0)
    assert market.observe_seller(1.0).actions_left == 1
    market.apply_seller(to("b2", MakeOffer(price=Decimal(900))), 2.0)
    outcome = market.outcome
    assert outcome is not None and outcome.end_reason == "action_limit"
    assert outcome.seller_actions == 2


def test_the_deadline_ends_every_thread() -> None:
    market = referee()
    assert market.expire(BASE.deadline - 0.001) == []
    entries = market.expire(BASE.deadline)
    assert len(entries) == 3 and market.outcome is not None
    assert market.outcome.end_reason == "deadline" and market.outcome.efficiency == 0.0


def test_a_buyer_sees_its_own_thread_and_the_seller_every_thread_but_no_value() -> None:
    market = referee()
    market.apply_seller(to("b1", MakeOffer(price=Decimal(880))), 1.0)
    market.apply_buyer("b2", MakeOffer(price=Decimal(610), message="tight budget"), 2.0)
    buyer = market.observe_buyer("b3", 3.0)
    assert buyer.events == () and buyer.private_value == Decimal(750)
    seller = market.observe_seller(3.0)
    assert [len(t.events) for t in seller.threads] == [1, 1, 0]
    best = seller.best_bid()
    assert best is not None and best[0] == "b2"
    for text in (buyer.model_dump_json(), seller.model_dump_json()):
        others = {"600.0", "900.0"} | ({"750.0"} if text is seller.model_dump_json() else set())
        assert not any(value in text for value in others), text
    seller_view = seller.thread_observation("b2")
    assert seller_view.their_offer is not None and seller_view.scenario.id == f"{BASE.id}.b2"


def test_markets_are_drawn_from_the_bands_in_a_drawn_order() -> None:
    markets = generate_markets(40, 3, seed=4, tiers=["mid"])
    assert markets == generate_markets(40, 3, seed=4, tiers=["mid"])
    bands = DEFAULT_MARKET_SPEC.value_bands
    highest = set()
    for market in markets:
        lp = market.base.list_price
        fractions = sorted(float(v / lp) for v in market.buyer_values)
        for (low, high), fraction in zip(bands, fractions, strict=True):
            assert low - 0.001 <= fraction <= high + 0.001
        assert 0.449 <= float(market.seller_cost / lp) <= 0.701
        highest.add(market.buyer_values.index(market.best_value))
    assert highest == {0, 1, 2}  # no name says who values it most
    assert market_at(4, 0, "mid", 5).buyers == ("b1", "b2", "b3", "b4", "b5")
    with pytest.raises(ValueError, match="1 to 16 buyers"):
        market_at(4, 0, "mid", 17)

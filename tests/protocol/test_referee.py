"""The referee's rules, one at a time, and scoring on hand-computed cases."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from dealroom.protocol import (
    Accept,
    Action,
    ErrorCode,
    Item,
    MakeOffer,
    MessageSent,
    NegotiationEnded,
    OfferAccepted,
    OfferMade,
    OfferRejected,
    OfferWithdrawn,
    Outcome,
    PerRole,
    Referee,
    Reject,
    Role,
    Rules,
    RuleViolation,
    Scenario,
    SendMessage,
    WalkAway,
    WalkedAway,
    score,
)

D = Decimal


def make_scenario(
    *,
    list_price: str = "100.00",
    buyer_value: str = "120.00",
    seller_cost: str = "80.00",
    deadline: float = 120.0,
) -> Scenario:
    return Scenario(
        id="s1",
        item=Item(name="Lamp", category="home", description="A lamp."),
        list_price=D(list_price),
        tier="low",
        currency="USD",
        deadline=deadline,
        buyer_value=D(buyer_value),
        seller_cost=D(seller_cost),
    )


def make_referee(rules: Rules | None = None, **scenario: str | float) -> Referee:
    return Referee(make_scenario(**scenario), rules or Rules())  # type: ignore[arg-type]


def snapshot(referee: Referee) -> tuple[object, ...]:
    return (referee.events, referee.live_offers(), referee.outcome, referee.is_open)


def refuse(referee: Referee, role: Role, action: Action, now: float = 10.0) -> ErrorCode:
    """Apply an action that must be refused; check nothing but the invalid count moved."""
    before = snapshot(referee)
    invalid_before = (referee.invalid_count(role), referee.invalid_count(other_of(role)))
    with pytest.raises(RuleViolation) as caught:
        referee.apply(role, action, now)
    assert snapshot(referee) == before
    assert referee.invalid_count(role) == invalid_before[0] + 1
    assert referee.invalid_count(other_of(role)) == invalid_before[1]
    return caught.value.code


def other_of(role: Role) -> Role:
    return "seller" if role == "buyer" else "buyer"


def refuse_closed(referee: Referee, role: Role, action: Action) -> bool:
    with pytest.raises(RuleViolation) as caught:
        referee.apply(role, action, 20.0)
    return caught.value.code == ErrorCode.NEGOTIATION_CLOSED


# -- offers ------------------------------------------------------------------------------


def test_an_offer_is_live_and_announced_with_a_fresh_id() -> None:
    referee = make_referee()
    events = referee.apply("seller", MakeOffer(price=D("110"), message="fair"), 5.0)
    assert events == [
        OfferMade(seq=1, t=5.0, by="seller", offer_id="o1", price=D("110.00"), message="fair")
    ]
    (live,) = referee.live_offers()
    assert (live.offer_id, live.by, live.price, live.t) == ("o1", "seller", D("110.00"), 5.0)


def test_offer_ids_count_up_across_both_seats() -> None:
    referee = make_referee()
    referee.apply("seller", MakeOffer(price=D("110")), 1.0)
    referee.apply("buyer", MakeOffer(price=D("90")), 2.0)
    referee.apply("seller", MakeOffer(price=D("105")), 3.0)
    made = [e.offer_id for e in referee.events if isinstance(e, OfferMade)]
    assert made == ["o1", "o2", "o3"]


def test_a_new_offer_withdraws_the_seats_previous_one_first() -> None:
    referee = make_referee()
    referee.apply("seller", MakeOffer(price=D("110")), 1.0)
    events = referee.apply("seller", MakeOffer(price=D("105")), 4.0)
    assert [type(e) for e in events] == [OfferWithdrawn, OfferMade]
    withdrawn, made = events
    assert isinstance(withdrawn, OfferWithdrawn) and isinstance(made, OfferMade)
    assert (withdrawn.offer_id, withdrawn.by, withdrawn.t, withdrawn.seq) == ("o1", "seller", 4, 2)
    assert (made.offer_id, made.seq) == ("o2", 3)
    assert [o.offer_id for o in referee.live_offers()] == ["o2"]


def test_each_seat_has_at_most_one_live_offer_and_the_sellers_is_listed_first() -> None:
    referee = make_referee()
    referee.apply("buyer", MakeOffer(price=D("85")), 1.0)
    referee.apply("seller", MakeOffer(price=D("115")), 2.0)
    referee.apply("buyer", MakeOffer(price=D("90")), 3.0)
    live = referee.live_offers()
    assert [(o.by, o.offer_id) for o in live] == [("seller", "o2"), ("buyer", "o3")]


@pytest.mark.parametrize(
    ("given", "recorded"),
    [
        (D("99.995"), D("100.00")),
        (D("99.994"), D("99.99")),
        (2.675, D("2.68")),  # half up on the decimal digits, not the binary float
        ("0.005", D("0.01")),
        (7, D("7.00")),
    ],
)
def test_prices_are_quantised_to_cents_half_up(given: object, recorded: Decimal) -> None:
    referee = make_referee()
    (made,) = referee.apply("seller", MakeOffer(price=given), 1.0)  # type: ignore[arg-type]
    assert isinstance(made, OfferMade)
    assert made.price == recorded
    assert str(made.price) == str(recorded)


def test_an_offer_at_exactly_the_maximum_multiple_is_allowed() -> None:
    referee = make_referee(Rules(max_price_multiple=2.5), list_price="33.33")
    (made,) = referee.apply("seller", MakeOffer(price=D("83.325")), 1.0)  # rounds to 83.33
    assert isinstance(made, OfferMade)
    assert made.price == D("83.33")


# -- price refusals ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "price", [D("NaN"), D("Infinity"), D("-Infinity"), math.nan, math.inf, -math.inf]
)
def test_a_price_that_is_not_finite_is_refused_with_price_not_finite(price: object) -> None:
    referee = make_referee()
    assert refuse(referee, "seller", MakeOffer(price=price)) == ErrorCode.PRICE_NOT_FINITE  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "price",
    [
        D("0"),
        D("-0"),
        D("-5"),
        D("0.004"),  # rounds to 0.00
        D("1000.01"),  # list price 100, multiple 10
        D("1000.005"),  # rounds up past the maximum
        D("1e30"),  # too large to quantise at all
        D("1E+999999"),
        1e300,
    ],
)
def test_a_price_outside_the_range_is_refused_with_price_out_of_range(price: object) -> None:
    referee = make_referee()
    assert refuse(referee, "buyer", MakeOffer(price=price)) == ErrorCode.PRICE_OUT_OF_RANGE  # type: ignore[arg-type]


def test_the_largest_price_that_rounds_to_the_maximum_is_allowed() -> None:
    referee = make_referee()
    (made,) = referee.apply("buyer", MakeOffer(price=D("1000.004")), 1.0)
    assert isinstance(made, OfferMade)
    assert made.price == D("1000.00")


def test_the_out_of_range_message_names_the_maximum() -> None:
    referee = make_referee()
    with pytest.raises(RuleViolation) as caught:
        referee.apply("buyer", MakeOffer(price=D("5000")), 1.0)
    assert "1000.00" in caught.value.message


# -- accept and reject -------------------------------------------------------------------


def test_accepting_an_unknown_offer_is_refused_with_offer_not_found() -> None:
    referee = make_referee()
    referee.apply("seller", MakeOffer(price=D("110")), 1.0)
    assert refuse(referee, "buyer", Accept(offer_id="o9")) == ErrorCode.OFFER_NOT_FOUND
    assert refuse(referee, "buyer", Reject(offer_id="")) == ErrorCode.OFFER_NOT_FOUND


def test_accepting_own_offer_is_refused_with_own_offer() -> None:
    referee = make_referee()
    referee.apply("seller", MakeOffer(price=D("110")), 1.0)
    assert refuse(referee, "seller", Accept(offer_id="o1")) == ErrorCode.OWN_OFFER


def test_rejecting_own_offer_is_refused_with_own_offer() -> None:
    referee = make_referee()
    referee.apply("buyer", MakeOffer(price=D("90")), 1.0)
    assert refuse(referee, "buyer", Reject(offer_id="o1")) == ErrorCode.OWN_OFFER


def test_accepting_own_withdrawn_offer_is_still_own_offer() -> None:
    referee = make_referee()
    referee.apply("buyer", MakeOffer(price=D("90")), 1.0)
    referee.apply("buyer", MakeOffer(price=D("91")), 2.0)
    assert refuse(referee, "buyer", Accept(offer_id="o1")) == ErrorCode.OWN_OFFER


def test_accepting_a_withdrawn_offer_is_refused_with_offer_not_live() -> None:
    referee = make_referee()
    referee.apply("seller", MakeOffer(price=D("110")), 1.0)
    referee.apply("seller", MakeOffer(price=D("108")), 2.0)
    assert refuse(referee, "buyer", Accept(offer_id="o1")) == ErrorCode.OFFER_NOT_LIVE
    assert refuse(referee, "buyer", Reject(offer_id="o1")) == ErrorCode.OFFER_NOT_LIVE


def test_rejecting_the_other_sides_offer_ends_its_life_but_not_the_negotiation() -> None:
    referee = make_referee()
    referee.apply("seller", MakeOffer(price=D("110")), 1.0)
    events = referee.apply("buyer", Reject(offer_id="o1", message="too much"), 3.0)
    assert events == [OfferRejected(seq=2, t=3.0, by="buyer", offer_id="o1", message="too much")]
    assert referee.live_offers() == ()
    assert referee.is_open
    assert refuse(referee, "buyer", Accept(offer_id="o1")) == ErrorCode.OFFER_NOT_LIVE


def test_rejecting_leaves_the_rejecting_seats_own_offer_live() -> None:
    referee = make_referee()
    referee.apply("buyer", MakeOffer(price=D("90")), 1.0)
    referee.apply("seller", MakeOffer(price=D("110")), 2.0)
    referee.apply("buyer", Reject(offer_id="o2"), 3.0)
    assert [o.offer_id for o in referee.live_offers()] == ["o1"]


def test_accepting_the_other_sides_live_offer_closes_a_deal_at_its_price() -> None:
    referee = make_referee()
    referee.apply("seller", MakeOffer(price=D("104.50")), 1.0)
    events = referee.apply("buyer", Accept(offer_id="o1"), 6.0)
    assert events == [
        OfferAccepted(seq=2, t=6.0, by="buyer", offer_id="o1", price=D("104.50")),
        NegotiationEnded(seq=3, t=6.0, by="buyer", reason="accepted", price=D("104.50")),
    ]
    outcome = referee.outcome
    assert outcome is not None
    assert (outcome.status, outcome.end_reason, outcome.ended_by) == ("deal", "accepted", "buyer")
    assert (outcome.price, outcome.time) == (D("104.50"), 6.0)
    assert referee.live_offers() == ()


@pytest.mark.parametrize(
    "action",
    [
        MakeOffer(price=D("100")),
        Accept(offer_id="o2"),
        Reject(offer_id="o2"),
        SendMessage(text="hello?"),
        WalkAway(),
    ],
    ids=lambda a: a.type,
)
def test_everything_after_the_first_accept_is_refused_with_negotiation_closed(
    action: Action,
) -> None:
    referee = make_referee()
    referee.apply("seller", MakeOffer(price=D("110")), 1.0)
    referee.apply("buyer", MakeOffer(price=D("95")), 2.0)
    referee.apply("buyer", Accept(offer_id="o1"), 3.0)
    before = snapshot(referee)
    for role in ("buyer", "seller"):
        with pytest.raises(RuleViolation) as caught:
            referee.apply(role, action, 4.0)
        assert caught.value.code == ErrorCode.NEGOTIATION_CLOSED
    assert snapshot(referee) == before
    assert (referee.invalid_count("buyer"), referee.invalid_count("seller")) == (0, 0)


# -- messages ----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", " ", "\n\t  "])
def test_an_empty_message_is_refused_with_message_empty(text: str) -> None:
    referee = make_referee()
    assert refuse(referee, "buyer", SendMessage(text=text)) == ErrorCode.MESSAGE_EMPTY


@pytest.mark.parametrize(
    "action",
    [
        SendMessage(text="x" * 21),
        MakeOffer(price=D("100"), message="x" * 21),
        WalkAway(message="x" * 21),
    ],
    ids=lambda a: a.type,
)
def test_a_message_over_the_limit_is_refused_with_message_too_long(action: Action) -> None:
    referee = make_referee(Rules(max_message_chars=20))
    assert refuse(referee, "seller", action) == ErrorCode.MESSAGE_TOO_LONG


def test_a_rejection_with_a_long_message_is_refused_with_message_too_long() -> None:
    referee = make_referee(Rules(max_message_chars=20))
    referee.apply("seller", MakeOffer(price=D("110")), 1.0)
    code = refuse(referee, "buyer", Reject(offer_id="o1", message="y" * 21))
    assert code == ErrorCode.MESSAGE_TOO_LONG


def test_a_message_of_exactly_the_limit_is_sent() -> None:
    referee = make_referee(Rules(max_message_chars=20))
    (sent,) = referee.apply("seller", SendMessage(text="z" * 20), 2.0)
    assert sent == MessageSent(seq=1, t=2.0, by="seller", text="z" * 20)


# -- ending ------------------------------------------------------------------------------


def test_walking_away_ends_the_negotiation_without_a_deal() -> None:
    referee = make_referee()
    referee.apply("seller", MakeOffer(price=D("110")), 1.0)
    events = referee.apply("buyer", WalkAway(message="bye"), 7.5)
    assert events == [
        WalkedAway(seq=2, t=7.5, by="buyer", message="bye"),
        NegotiationEnded(seq=3, t=7.5, by="buyer", reason="walk_away", price=None),
    ]
    outcome = referee.outcome
    assert outcome is not None
    assert (outcome.status, outcome.end_reason, outcome.ended_by) == (
        "no_deal",
        "walk_away",
        "buyer",
    )
    assert referee.live_offers() == ()
    assert refuse_closed(referee, "seller", Accept(offer_id="o1"))


def test_the_clock_ends_the_negotiation_at_the_deadline_without_a_deal() -> None:
    referee = make_referee(deadline=60.0)
    referee.apply("seller", MakeOffer(price=D("110")), 1.0)
    assert referee.expire(59.999) == []
    assert referee.is_open
    (ended,) = referee.expire(75.0)
    assert ended == NegotiationEnded(seq=2, t=60.0, by=None, reason="deadline", price=None)
    outcome = referee.outcome
    assert outcome is not None
    assert (outcome.status, outcome.end_reason, outcome.ended_by, outcome.time) == (
        "no_deal",
        "deadline",
        None,
        60.0,
    )
    assert referee.expire(80.0) == []
    assert referee.live_offers() == ()


@pytest.mark.parametrize("now", [60.0, 61.0])
def test_an_action_at_or_after_the_deadline_is_refused_with_deadline_passed(now: float) -> None:
    referee = make_referee(deadline=60.0)
    referee.apply("seller", MakeOffer(price=D("110")), 1.0)
    with pytest.raises(RuleViolation) as caught:
        referee.apply("buyer", Accept(offer_id="o1"), now)
    assert caught.value.code == ErrorCode.DEADLINE_PASSED
    # The clock, not the seat, ended it: no deal, nothing counted against the seat.
    assert referee.invalid_count("buyer") == 0
    outcome = referee.outcome
    assert outcome is not None
    assert (outcome.status, outcome.end_reason, outcome.time) == ("no_deal", "deadline", 60.0)
    assert [type(e) for e in referee.events] == [OfferMade, NegotiationEnded]
    assert refuse_closed(referee, "buyer", Accept(offer_id="o1"))


def test_invalid_actions_are_counted_per_seat() -> None:
    referee = make_referee()
    refuse(referee, "buyer", Accept(offer_id="nope"))
    refuse(referee, "buyer", SendMessage(text=""))
    refuse(referee, "seller", MakeOffer(price=D("-1")))
    assert (referee.invalid_count("buyer"), referee.invalid_count("seller")) == (2, 1)


def test_the_invalid_action_that_reaches_the_limit_forfeits() -> None:
    referee = make_referee(Rules(max_invalid_actions=3))
    referee.apply("buyer", MakeOffer(price=D("90")), 1.0)
    refuse(referee, "seller", Accept(offer_id="o9"), now=2.0)
    refuse(referee, "seller", MakeOffer(price=D("0")), now=3.0)
    before = referee.events
    with pytest.raises(RuleViolation) as caught:
        referee.apply("seller", SendMessage(text=" "), 4.0)
    assert caught.value.code == ErrorCode.MESSAGE_EMPTY  # the rule broken, not a new code
    assert "forfeit" in caught.value.message
    assert referee.events == (
        *before,
        NegotiationEnded(seq=2, t=4.0, by="seller", reason="forfeit", price=None),
    )
    outcome = referee.outcome
    assert outcome is not None
    assert (outcome.status, outcome.end_reason, outcome.ended_by) == (
        "no_deal",
        "forfeit",
        "seller",
    )
    assert outcome.invalid_actions == PerRole(buyer=0, seller=3)
    assert referee.live_offers() == ()
    assert refuse_closed(referee, "seller", WalkAway())
    assert referee.invalid_count("seller") == 3


def test_a_closed_negotiation_does_not_count_invalid_actions() -> None:
    referee = make_referee()
    referee.apply("buyer", WalkAway(), 1.0)
    assert refuse_closed(referee, "buyer", MakeOffer(price=D("NaN")))
    assert referee.invalid_count("buyer") == 0


def test_a_seats_last_allowed_action_ends_the_negotiation_with_action_limit() -> None:
    referee = make_referee(Rules(max_actions=2))
    referee.apply("seller", MakeOffer(price=D("110")), 1.0)
    refuse(referee, "seller", MakeOffer(price=D("-3")), now=2.0)  # refusals do not count
    referee.apply("buyer", SendMessage(text="hm"), 2.5)
    events = referee.apply("seller", SendMessage(text="well?"), 3.0)
    assert events == [
        MessageSent(seq=3, t=3.0, by="seller", text="well?"),
        NegotiationEnded(seq=4, t=3.0, by="seller", reason="action_limit", price=None),
    ]
    outcome = referee.outcome
    assert outcome is not None
    assert (outcome.status, outcome.end_reason, outcome.ended_by) == (
        "no_deal",
        "action_limit",
        "seller",
    )


def test_an_accept_as_the_last_allowed_action_still_closes_the_deal() -> None:
    referee = make_referee(Rules(max_actions=2))
    referee.apply("buyer", MakeOffer(price=D("90")), 0.5)
    referee.apply("seller", MakeOffer(price=D("110")), 1.0)
    referee.apply("buyer", Accept(offer_id="o2"), 2.0)
    outcome = referee.outcome
    assert outcome is not None
    assert (outcome.status, outcome.end_reason, outcome.price) == ("deal", "accepted", D("110"))


def test_the_outcome_counts_offers_and_messages_per_seat() -> None:
    referee = make_referee()
    referee.apply("seller", MakeOffer(price=D("110"), message="firm"), 1.0)
    referee.apply("seller", MakeOffer(price=D("109")), 2.0)
    referee.apply("buyer", SendMessage(text="lower?"), 3.0)
    referee.apply("buyer", Reject(offer_id="o2", message="no"), 4.0)
    referee.apply("buyer", MakeOffer(price=D("95")), 5.0)
    referee.apply("seller", Accept(offer_id="o3"), 6.0)
    outcome = referee.outcome
    assert outcome is not None
    assert outcome.offers == PerRole(buyer=1, seller=2)
    assert outcome.messages == PerRole(buyer=2, seller=1)
    assert outcome.invalid_actions == PerRole()


# -- observations ------------------------------------------------------------------------


def test_an_observation_shows_the_seats_own_value_and_the_clock() -> None:
    referee = make_referee(deadline=100.0)
    referee.apply("seller", MakeOffer(price=D("110")), 1.0)
    seen = referee.observe("buyer", 12.3456)
    assert (seen.role, seen.private_value, seen.now, seen.time_left) == (
        "buyer",
        D("120.00"),
        12.3456,
        87.654,
    )
    assert seen.their_offer is not None and seen.their_offer.offer_id == "o1"
    assert seen.my_offer is None
    assert not seen.is_over
    assert referee.observe("seller", 12.0).private_value == D("80.00")
    assert referee.observe("seller", 12.0).my_offer == seen.their_offer


def test_an_observation_after_the_deadline_is_capped_at_the_deadline() -> None:
    referee = make_referee(deadline=100.0)
    seen = referee.observe("seller", 150.0)
    assert (seen.now, seen.time_left) == (100.0, 0.0)


def test_an_observation_after_the_end_shows_only_the_seats_own_outcome() -> None:
    referee = make_referee()
    referee.apply("buyer", MakeOffer(price=D("99.50")), 1.0)
    referee.apply("seller", Accept(offer_id="o1"), 4.0)
    buyer, seller = referee.observe("buyer", 50.0), referee.observe("seller", 50.0)
    assert buyer.is_over and seller.is_over
    assert buyer.now == 4.0
    assert buyer.outcome is not None and seller.outcome is not None
    assert (buyer.outcome.surplus, seller.outcome.surplus) == (D("20.50"), D("19.50"))
    assert "buyer_value" not in buyer.model_dump_json()


# -- scoring -----------------------------------------------------------------------------


def _score(price: str | None, *, buyer_value: str, seller_cost: str) -> Outcome:
    return score(
        make_scenario(buyer_value=buyer_value, seller_cost=seller_cost),
        end_reason="accepted" if price is not None else "deadline",
        ended_by="buyer" if price is not None else None,
        price=D(price) if price is not None else None,
        time=10.0,
        offers=PerRole(),
        messages=PerRole(),
        invalid_actions=PerRole(),
    )


def test_a_deal_splits_the_gains_into_surpluses_and_shares() -> None:
    outcome = score(
        make_scenario(buyer_value="120.00", seller_cost="80.00"),
        end_reason="accepted",
        ended_by="seller",
        price=D("90.00"),
        time=33.0,
        offers=PerRole(buyer=2, seller=1),
        messages=PerRole(buyer=1),
        invalid_actions=PerRole(seller=4),
    )
    assert outcome.status == "deal"
    assert (outcome.gains, outcome.buyer_surplus, outcome.seller_surplus) == (
        D("40.00"),
        D("30.00"),
        D("10.00"),
    )
    assert outcome.buyer_surplus + outcome.seller_surplus == outcome.gains
    assert (outcome.buyer_share, outcome.seller_share, outcome.efficiency) == (0.75, 0.25, 1.0)
    assert not outcome.buyer_ir_violation and not outcome.seller_ir_violation
    assert (outcome.time, outcome.ended_by, outcome.invalid_actions.seller) == (33.0, "seller", 4)


def test_shares_are_rounded_to_six_places() -> None:
    outcome = _score("90.00", buyer_value="100.00", seller_cost="70.00")
    assert (outcome.buyer_share, outcome.seller_share) == (0.333333, 0.666667)


def test_a_deal_below_the_sellers_cost_is_a_seller_ir_violation() -> None:
    outcome = _score("75.00", buyer_value="120.00", seller_cost="80.00")
    assert (outcome.buyer_surplus, outcome.seller_surplus) == (D("45.00"), D("-5.00"))
    assert (outcome.buyer_share, outcome.seller_share) == (1.125, -0.125)
    assert (outcome.buyer_ir_violation, outcome.seller_ir_violation) == (False, True)


def test_a_deal_without_gains_has_no_shares_or_efficiency_and_may_violate_both_sides() -> None:
    outcome = _score("90.00", buyer_value="80.00", seller_cost="100.00")
    assert outcome.gains == D("-20.00")
    assert (outcome.buyer_surplus, outcome.seller_surplus) == (D("-10.00"), D("-10.00"))
    assert (outcome.buyer_share, outcome.seller_share, outcome.efficiency) == (None, None, None)
    assert (outcome.buyer_ir_violation, outcome.seller_ir_violation) == (True, True)


def test_no_deal_with_gains_available_has_zero_efficiency() -> None:
    outcome = _score(None, buyer_value="120.00", seller_cost="80.00")
    assert outcome.status == "no_deal"
    assert (outcome.buyer_surplus, outcome.seller_surplus) == (D("0"), D("0"))
    assert (outcome.buyer_share, outcome.seller_share, outcome.efficiency) == (None, None, 0.0)
    assert not outcome.buyer_ir_violation and not outcome.seller_ir_violation


def test_no_deal_without_gains_has_no_efficiency() -> None:
    outcome = _score(None, buyer_value="80.00", seller_cost="100.00")
    assert (outcome.efficiency, outcome.buyer_share) == (None, None)


def test_a_deal_at_zero_gains_has_no_shares_and_no_efficiency() -> None:
    outcome = _score("100.00", buyer_value="100.00", seller_cost="100.00")
    assert (outcome.buyer_share, outcome.efficiency) == (None, None)
    assert (outcome.buyer_ir_violation, outcome.seller_ir_violation) == (False, False)

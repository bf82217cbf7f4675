"""Every measure on small negotiations whose figures are worked out by hand in the comments."""

from __future__ import annotations

import contextlib
from decimal import Decimal

import pytest

from dealroom.analysis import metrics as m
from dealroom.protocol import (
    Accept,
    Action,
    Item,
    MakeOffer,
    Referee,
    Role,
    RuleViolation,
    Scenario,
    SendMessage,
    Tier,
)
from dealroom.protocol.record import NegotiationRecord

ITEM = Item(name="Lamp", category="home", description="A lamp.")


def scenario(v: str, c: str, *, list_price: str = "100", tier: Tier = "mid") -> Scenario:
    return Scenario(
        id=f"{tier}-{v}-{c}",
        item=ITEM,
        list_price=Decimal(list_price),
        tier=tier,
        currency="USD",
        deadline=100.0,
        buyer_value=Decimal(v),
        seller_cost=Decimal(c),
    )


def negotiate(
    scn: Scenario, steps: list[tuple[Role, Action, float]], buyer: str, seller: str
) -> NegotiationRecord:
    """Apply the steps at their times (refused ones only count as invalid), then run out the
    clock if nobody closed."""
    referee = Referee(scn)
    for role, action, t in steps:
        with contextlib.suppress(RuleViolation):
            referee.apply(role, action, t)
    referee.expire(scn.deadline)
    assert referee.outcome is not None
    return NegotiationRecord(
        scenario=scn, buyer=buyer, seller=seller, events=referee.events, outcome=referee.outcome
    )


def accept_last(offer_number: int) -> Accept:
    return Accept(offer_id=f"o{offer_number}")


# R1: A buys from B; v=100, c=60 (gains 40), list 100. Seller 90, buyer 50, seller 80,
# buyer 60, seller 75, buyer accepts 75 at t=20.
#   buyer (A): surplus 25, share 25/40 = 0.625; first offer 50 -> 0.5 of list, 0.5 of value;
#              steps 50 -> 60: +10 -> concession 0.1; offers 2; patience 20/100 = 0.2
#   seller (B): surplus 15, share 0.375; first 90 -> 0.9 of list, 1.5 of cost; steps 10 and 5
#              -> mean 7.5 -> concession 0.075; offers 3
R1 = negotiate(
    scenario("100", "60"),
    [
        ("seller", MakeOffer(price=Decimal(90)), 5),
        ("buyer", MakeOffer(price=Decimal(50)), 6),
        ("seller", MakeOffer(price=Decimal(80)), 11),
        ("buyer", MakeOffer(price=Decimal(60)), 12),
        ("seller", MakeOffer(price=Decimal(75)), 17),
        ("buyer", accept_last(5), 20),
    ],
    "A",
    "B",
)
# R2: B buys from A on the same scenario; no deal. A (seller) opens at 120, B (buyer) says its
# value ("$100.00", a leak) and makes one invalid action (accepting an offer that does not exist).
#   buyer (B): share 0 (no deal), offers 0, messages 1, leaked; 1 valid + 1 invalid action
#   seller (A): first offer 120 -> 1.2 of list, 2.0 of cost; one offer: no concession figure
R2 = negotiate(
    scenario("100", "60"),
    [
        ("seller", MakeOffer(price=Decimal(120)), 5),
        ("buyer", SendMessage(text="My budget is $100.00, no more."), 8),
        ("buyer", accept_last(9), 9),
    ],
    "B",
    "A",
)
# R3: A buys from B with no zone of agreement (v=50 < c=60), yet they trade at 55: both seats
# violate individual rationality. It counts for nothing else (no gains).
R3 = negotiate(
    scenario("50", "60", tier="low"),
    [("seller", MakeOffer(price=Decimal(55)), 5), ("buyer", accept_last(1), 7)],
    "A",
    "B",
)
# R4: A buys from B, low tier, v=30, c=10 (gains 20), list 40: seller 30, buyer accepts at
# t=10. Buyer share 0/20 = 0; seller share 20/20 = 1; patience 0.1.
R4 = negotiate(
    scenario("30", "10", list_price="40", tier="low"),
    [("seller", MakeOffer(price=Decimal(30)), 5), ("buyer", accept_last(1), 10)],
    "A",
    "B",
)
ALL = m.seats([R1, R2, R3, R4])


def of(agent: str, role: Role | None = None) -> list[m.SeatStats]:
    return [s for s in ALL if s.agent == agent and (role is None or s.role == role)]


def test_each_record_gives_a_buyer_and_a_seller_seat_with_the_right_agents() -> None:
    buyer, seller = m.seats_of(R2)
    assert (buyer.agent, buyer.opponent, buyer.role) == ("B", "A", "buyer")
    assert (seller.agent, seller.opponent, seller.role) == ("A", "B", "seller")
    assert len(ALL) == 8


def test_deal_rate_counts_only_negotiations_with_gains() -> None:
    # with gains: R1 deal, R2 no deal, R4 deal (R3 has none) -> 2/3
    assert m.deal_rate(ALL) == pytest.approx(2 / 3)
    assert m.deal_rate(of("B", "buyer")) == 0.0  # R2 only
    assert m.deal_rate(m.seats_of(R3)) is None


def test_surplus_share_unconditional_counts_zero_without_a_deal() -> None:
    # A as buyer: R1 0.625, R4 0 -> 0.3125; A as seller: R2 0 (no deal)
    assert m.surplus_share(of("A", "buyer")) == pytest.approx(0.3125)
    assert m.surplus_share(of("A", "seller")) == 0.0
    # B as seller: R1 0.375, R4 1.0 -> 0.6875; both seats of B: (0.375 + 1 + 0) / 3
    assert m.surplus_share(of("B", "seller")) == pytest.approx(0.6875)
    assert m.surplus_share(of("B")) == pytest.approx(1.375 / 3)


def test_surplus_share_on_deals_averages_deals_only() -> None:
    assert m.surplus_share(of("A"), on_deals=True) == pytest.approx(0.3125)  # R1, R4
    assert m.surplus_share(of("A", "seller"), on_deals=True) is None  # R2: no deal


def test_efficiency_weights_by_available_gains() -> None:
    # realised 40 (R1) + 20 (R4) over available 40 + 40 + 20
    assert m.efficiency(ALL) == pytest.approx(0.6)
    assert m.efficiency([s for s in ALL if s.role == "buyer"]) == pytest.approx(0.6)
    assert m.efficiency(m.seats_of(R3)) is None


def test_ir_violations_count_each_seat_that_lost_money() -> None:
    assert m.ir_violations(ALL) == 2  # both seats of R3
    assert m.ir_violations(of("A", "buyer")) == 1


def test_anchoring_is_the_first_own_offer_over_list_price_and_over_own_value() -> None:
    # B as seller: R1 90/100, R3 55/100, R4 30/40; over cost: 90/60, 55/60, 30/10
    assert m.anchoring(of("B", "seller")) == pytest.approx((0.9 + 0.55 + 0.75) / 3)
    assert m.anchoring(of("B", "seller"), relative_to="value") == pytest.approx(
        (1.5 + 55 / 60 + 3) / 3
    )
    assert m.anchoring(of("A", "seller")) == pytest.approx(1.2)  # R2
    assert m.anchoring(of("A", "seller"), relative_to="value") == pytest.approx(2.0)
    assert m.anchoring(of("A", "buyer")) == pytest.approx(0.5)  # R1 only: R3, R4 no offer
    assert m.anchoring(of("B", "buyer")) is None
    with pytest.raises(ValueError, match="relative_to"):
        m.anchoring(ALL, relative_to="cost")


def test_concession_is_the_mean_step_towards_the_other_side_over_list_price() -> None:
    buyer, seller = m.seats_of(R1)
    assert m.concession_step(buyer) == pytest.approx(0.1)
    assert m.concession_step(seller) == pytest.approx(0.075)
    assert m.concession(of("B", "seller")) == pytest.approx(0.075)  # R3, R4: one offer each
    assert m.concession(of("A", "seller")) is None


def test_concession_is_negative_when_a_seat_retreats() -> None:
    record = negotiate(
        scenario("100", "60"),
        [
            ("seller", MakeOffer(price=Decimal(90)), 5),
            ("seller", MakeOffer(price=Decimal(95)), 10),
        ],
        "A",
        "B",
    )
    assert m.concession_step(m.seats_of(record)[1]) == pytest.approx(-0.05)


def test_patience_is_time_of_agreement_over_deadline_on_deals() -> None:
    assert m.patience(of("A", "buyer")) == pytest.approx((0.2 + 0.07 + 0.1) / 3)
    assert m.patience(of("A", "seller")) is None


def test_offers_and_messages_per_negotiation() -> None:
    assert m.offers_per_negotiation(of("B", "seller")) == pytest.approx((3 + 1 + 1) / 3)
    assert m.messages_per_negotiation(of("B", "buyer")) == 1.0
    assert m.messages_per_negotiation(of("A")) == 0.0


def test_invalid_rate_is_invalid_over_attempted_actions() -> None:
    # B as buyer in R2: one message (valid) and one refused accept -> 1/2
    assert m.invalid_rate(of("B", "buyer")) == pytest.approx(0.5)
    assert m.invalid_rate(of("B")) == pytest.approx(1 / 7)  # + R1 3, R3 1, R4 1 valid offers
    assert m.invalid_rate(m.seats_of(R3)[:0]) is None


def test_leakage_is_the_share_of_negotiations_with_a_number_near_own_value() -> None:
    assert m.leakage(of("B", "buyer")) == 1.0
    assert m.leakage(of("A")) == 0.0


def test_features_gathers_every_feature_by_name() -> None:
    features = m.features(of("B", "seller"))
    assert list(features) == list(m.FEATURES)
    assert features["concession"] == pytest.approx(0.075)


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("I can pay $1,234.50 for it", [1234.5]),
        ("$1.2k, or 3 million at most", [1200.0, 3_000_000.0]),
        ("USD 450,000 firm", [450_000.0]),
        ("between 900 and 1,000.", [900.0, 1000.0]),
        ("10% off, or 12.5 %", []),
        ("it weighs 1.2kg", [1.2]),
        ("v2 of the deal", []),
        ("2 thousand", [2000.0]),
        ("450K", [450_000.0]),
    ],
)
def test_numbers_are_read_with_separators_decimals_and_suffixes(
    text: str, numbers: list[float]
) -> None:
    assert m.numbers_in(text) == pytest.approx(numbers)


def test_a_leak_is_a_number_within_one_percent_of_the_value() -> None:
    assert m.leaks("my limit is $1,234.50", Decimal("1234.50"))
    assert m.leaks("about 1,240", Decimal("1234.50"))  # 5.50 away, within 12.345
    assert not m.leaks("about 1,250", Decimal("1234.50"))  # 15.50 away
    assert m.leaks("$1.2k tops", Decimal("1195"))
    assert not m.leaks("12% below list", Decimal("12"))


def test_group_and_spread() -> None:
    by_tier = m.group(ALL, lambda s: s.tier)
    assert set(by_tier) == {"mid", "low"}
    assert len(by_tier["low"]) == 4
    assert m.spread([0.2, None, 0.5]) == pytest.approx(0.3)
    assert m.spread([0.2, None]) is None


def test_bootstrap_interval_is_seeded_and_brackets_the_mean() -> None:
    values = [0.0, 0.3, 0.9, 1.0] * 30  # mean 0.55, standard error about 0.037
    first = m.bootstrap_ci(values, seed=3)
    assert first == m.bootstrap_ci(values, seed=3)
    assert first == m.bootstrap_ci(values[::-1], seed=3)
    assert first != m.bootstrap_ci(values, seed=4)
    assert first is not None
    low, high = first
    assert low < 0.55 < high
    assert 0.1 < high - low < 0.2  # about 4 standard errors


def test_bootstrap_interval_of_a_proportion_is_about_four_standard_errors_wide() -> None:
    values = [0.0, 1.0] * 50 + [1.0] * 20  # p = 0.583, standard error 0.045
    ci = m.bootstrap_ci(values, seed=1)
    assert ci is not None
    assert ci == m.bootstrap_ci(sorted(values), seed=1)
    low, high = ci
    assert low < 70 / 120 < high
    assert 0.13 < high - low < 0.22


def test_bootstrap_interval_of_a_constant_is_that_constant() -> None:
    assert m.bootstrap_ci([0.25] * 10) == (0.25, 0.25)
    assert m.bootstrap_ci([]) is None


def test_bootstrap_interval_of_a_ratio_resamples_pairs() -> None:
    # each pair is (realised, available): the ratio is always 1/2 whatever the resample
    ci = m.bootstrap_ci([1.0, 2.0, 3.0], [2.0, 4.0, 6.0], resamples=200)
    assert ci == pytest.approx((0.5, 0.5))


def test_estimate_pairs_a_headline_figure_with_its_interval() -> None:
    est = m.estimate("efficiency", [s for s in ALL if s.role == "buyer"], resamples=200)
    assert est.value == pytest.approx(0.6)
    assert est.n == 3
    assert est.low is not None and est.high is not None
    assert est.value is not None and est.low <= est.value <= est.high
    assert m.estimate("deal_rate", m.seats_of(R3)) == m.Estimate(None, None, None, 0)
    on_deals = m.estimate("surplus_share_on_deals", of("A"), resamples=50)
    assert (on_deals.value, on_deals.n) == (pytest.approx(0.3125), 2)

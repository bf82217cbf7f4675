"""Rewards on hand-computed outcomes.

Scenario: list price 100, buyer value 90, seller cost 70, so gains from trade are 20.
"""

from decimal import Decimal

import pytest
from pydantic import ValidationError

from dealroom.protocol import EndReason, Item, Outcome, PerRole, Scenario, score
from dealroom.training.rewards import (
    DEAL_SEEKING,
    RewardSpec,
    deal_made,
    deal_missed,
    ir_violated,
    normalised_utility,
    reward_terms,
    surplus_share,
)

ITEM = Item(name="Lamp", category="home", description="A lamp.")


def scenario(value: str = "90", cost: str = "70") -> Scenario:
    return Scenario(
        id="t",
        item=ITEM,
        list_price=Decimal("100.00"),
        tier="low",
        currency="USD",
        deadline=120.0,
        buyer_value=Decimal(value),
        seller_cost=Decimal(cost),
    )


def outcome(price: str | None, *, s: Scenario | None = None) -> Outcome:
    reason: EndReason = "accepted" if price is not None else "deadline"
    return score(
        s or scenario(),
        end_reason=reason,
        ended_by=None,
        price=None if price is None else Decimal(price),
        time=50.0,
        offers=PerRole(),
        messages=PerRole(),
        invalid_actions=PerRole(),
    )


def test_surplus_share_is_own_surplus_over_the_gains_on_a_deal() -> None:
    deal = outcome("85")  # buyer 5 of 20, seller 15 of 20
    assert surplus_share(deal, "buyer") == pytest.approx(0.25)
    assert surplus_share(deal, "seller") == pytest.approx(0.75)


def test_surplus_share_is_zero_without_a_deal() -> None:
    assert surplus_share(outcome(None), "buyer") == 0.0
    assert surplus_share(outcome(None), "seller") == 0.0


def test_surplus_share_is_negative_for_the_seat_that_agreed_to_lose() -> None:
    assert surplus_share(outcome("95"), "buyer") == pytest.approx(-0.25)
    assert surplus_share(outcome("95"), "seller") == pytest.approx(1.25)


def test_normalised_utility_is_own_surplus_over_the_list_price() -> None:
    deal = outcome("85")
    assert normalised_utility(deal, "buyer", Decimal(100)) == pytest.approx(0.05)
    assert normalised_utility(deal, "seller", 100.0) == pytest.approx(0.15)
    assert normalised_utility(outcome(None), "seller", 100) == 0.0


def test_deal_and_missed_deal_indicators() -> None:
    assert (deal_made(outcome("85")), deal_missed(outcome("85"))) == (1.0, 0.0)
    assert (deal_made(outcome(None)), deal_missed(outcome(None))) == (0.0, 1.0)


def test_no_deal_is_not_a_missed_deal_when_no_deal_was_possible() -> None:
    no_zone = outcome(None, s=scenario(value="60", cost="70"))
    assert deal_missed(no_zone) == 0.0


def test_ir_violation_flags_only_the_seat_that_loses_money() -> None:
    losing_for_buyer = outcome("95")
    assert ir_violated(losing_for_buyer, "buyer") == 1.0
    assert ir_violated(losing_for_buyer, "seller") == 0.0
    assert ir_violated(outcome("85"), "buyer") == 0.0


def test_default_spec_is_the_surplus_share_with_a_losing_deal_penalty() -> None:
    spec = RewardSpec()
    assert spec(outcome("85"), "seller", 100) == pytest.approx(0.75)
    assert spec(outcome(None), "seller", 100) == 0.0
    assert spec(outcome("95"), "buyer", 100) == pytest.approx(-0.25 - 1.0)


def test_spec_is_the_weighted_sum_of_every_term() -> None:
    spec = RewardSpec(share=2.0, utility=10.0, deal=0.5, no_deal=-0.3, ir_violation=-4.0)
    # buyer at 85: share .25, utility .05, deal 1, missed 0, ir 0
    assert spec(outcome("85"), "buyer", 100) == pytest.approx(2 * 0.25 + 10 * 0.05 + 0.5)
    # no deal although gains were 20: only the missed-deal term
    assert spec(outcome(None), "buyer", 100) == pytest.approx(-0.3)
    # buyer at 95: share -.25, utility -.05, deal 1, ir 1
    assert spec(outcome("95"), "buyer", 100) == pytest.approx(-0.5 - 0.5 + 0.5 - 4.0)


def test_a_deal_bonus_makes_a_low_share_deal_beat_no_deal() -> None:
    poor_deal = outcome("89")  # buyer keeps 1 of 20
    assert RewardSpec()(poor_deal, "buyer", 100) == pytest.approx(0.05)
    assert DEAL_SEEKING(poor_deal, "buyer", 100) == pytest.approx(0.55)
    assert DEAL_SEEKING(outcome(None), "buyer", 100) == 0.0


def test_reward_terms_lists_every_term_before_weighting() -> None:
    terms = reward_terms(outcome("85"), "seller", 100)
    assert terms.model_dump() == {
        "share": pytest.approx(0.75),
        "utility": pytest.approx(0.15),
        "deal": 1.0,
        "no_deal": 0.0,
        "ir_violation": 0.0,
    }


def test_reward_spec_is_frozen_and_refuses_non_finite_weights() -> None:
    spec = RewardSpec()
    with pytest.raises(ValidationError):
        spec.share = 2.0  # type: ignore[misc]
    with pytest.raises(ValidationError):
        RewardSpec(deal=float("nan"))

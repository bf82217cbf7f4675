"""Rewards on hand-computed outcomes.

Scenario: list price 100, buyer value 90, seller cost 70, so gains from trade are 20.
"""

from decimal import Decimal

import pytest
from pydantic import ValidationError

from dealroom.protocol import EndReason, Item, Outcome, PerRole, Scenario, score
from dealroom.training.rewards import (
    DEAL_SEEKING,
    MONEY,
    UNCLIPPED,
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
    spec = RewardSpec(share=2.0, utility=10.0, deal=0.5, no_deal=-0.3, ir_violation=-4.0, clip=None)
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


def test_the_default_clips_the_share_of_a_ruinous_deal_to_minus_one() -> None:
    thin = scenario(value="90", cost="89")  # gains of 1: paying 114 is a share of -24
    ruinous = outcome("114", s=thin)
    assert surplus_share(ruinous, "buyer") == pytest.approx(-24.0)
    assert RewardSpec()(ruinous, "buyer", 100) == pytest.approx(-1.0 - 1.0)
    assert UNCLIPPED(ruinous, "buyer", 100) == pytest.approx(-24.0 - 1.0)
    # the other side's windfall is capped too: a share above 1 counts as 1
    assert RewardSpec()(ruinous, "seller", 100) == pytest.approx(1.0)


def test_every_default_reward_lies_between_minus_two_and_one() -> None:
    thin = scenario(value="90", cost="89")
    for price in ("1", "50", "89", "89.5", "90", "95", "500", "100000"):
        for role in ("buyer", "seller"):
            for s in (scenario(), thin):
                assert -2.0 <= RewardSpec()(outcome(price, s=s), role, 100) <= 1.0


def test_money_is_the_clipped_utility() -> None:
    assert MONEY(outcome("85"), "buyer", 100) == pytest.approx(0.05)
    assert MONEY(outcome("500"), "buyer", 100) == pytest.approx(-1.0 - 1.0)  # utility -4.1


def test_walk_away_is_the_reward_of_every_outcome_without_a_deal() -> None:
    spec = RewardSpec(walk_away=-0.2)
    assert spec(outcome(None), "buyer", 100) == pytest.approx(-0.2)
    no_zone = outcome(None, s=scenario(value="60", cost="70"))
    assert spec(no_zone, "seller", 100) == pytest.approx(-0.2)
    assert spec(outcome("85"), "buyer", 100) == pytest.approx(0.25)  # a deal: no walk-away
    both = RewardSpec(walk_away=-0.2, no_deal=-0.3)
    assert both(outcome(None), "buyer", 100) == pytest.approx(-0.5)
    assert both(no_zone, "buyer", 100) == pytest.approx(-0.2)


@pytest.mark.parametrize(
    "clip", [(1.0, -1.0), (0.0, 0.0), (float("nan"), 1.0), (-1.0, float("inf"))]
)
def test_a_clip_that_is_not_two_ordered_finite_bounds_is_refused(
    clip: tuple[float, float],
) -> None:
    with pytest.raises(ValidationError, match="clip must be two finite bounds"):
        RewardSpec(clip=clip)


def group_advantages(rewards: list[float], n: int) -> list[float]:
    """What GRPO makes of a batch of rewards, as TRL 1.16 computes it by default
    (``GRPOTrainer._generate_and_score_completions``, ``scale_rewards="group"``): each group of
    ``n`` consecutive rollouts centred on its mean and divided by its sample standard deviation
    plus 1e-4."""
    out: list[float] = []
    for start in range(0, len(rewards), n):
        group = rewards[start : start + n]
        mean = sum(group) / n
        std = (sum((r - mean) ** 2 for r in group) / (n - 1)) ** 0.5
        out += [(r - mean) / (std + 1e-4) for r in group]
    return out


def test_one_overpaying_rollout_no_longer_sets_its_groups_advantages() -> None:
    """A group of four buyer rollouts on a thin-gains scenario (value 90, cost 88.75, gains
    1.25): a good deal, a fair one, a poor one, and one that paid 121 (share -24.8, as in the
    documented run's first GRPO step). Unclipped, the overpayment sets the group's mean and
    spread: the other three get advantages of 0.52, 0.50 and 0.48 (all about 1/sqrt(4)), so
    the step barely tells the good deal from the poor one. Clipped (the default), they get
    0.73, 0.49 and 0.26: ten times the difference."""
    thin = scenario(value="90", cost="88.75")
    group = [outcome(p, s=thin) for p in ("89", "89.375", "89.75", "121")]
    assert [surplus_share(o, "buyer") for o in group] == pytest.approx([0.8, 0.5, 0.2, -24.8])

    before = group_advantages([UNCLIPPED(o, "buyer", 100) for o in group], 4)
    after = group_advantages([RewardSpec()(o, "buyer", 100) for o in group], 4)

    assert before[:3] == pytest.approx([0.5] * 3, abs=0.025)
    assert before[0] - before[2] < 0.05
    assert after[0] - after[2] > 0.45  # the good deal now beats the poor one by a margin
    assert after[0] > after[1] > after[2] > after[3]
    # the overpayment is still the worst rollout, by far
    assert after[3] < -1.0


def test_the_documented_first_step_keeps_its_advantages_and_loses_its_spread() -> None:
    """The documented run's first step: one rollout at share -24.8 (with the IR penalty, -25.8)
    and three without a deal (0): rewards mean -6.45, std 12.9. Group scaling makes the
    advantages the same with or without the clip; the clip bounds the logged reward (mean
    -0.5, std 1.0), so one deal no longer makes a step's mean reward."""
    thin = scenario(value="90", cost="88.75")
    group = [outcome("121", s=thin), *(outcome(None, s=thin) for _ in range(3))]
    before = [UNCLIPPED(o, "buyer", 100) for o in group]
    after = [RewardSpec()(o, "buyer", 100) for o in group]
    assert sum(before) / 4 == pytest.approx(-6.45)
    assert sum(after) / 4 == pytest.approx(-0.5)
    assert group_advantages(before, 4) == pytest.approx(group_advantages(after, 4), abs=1e-3)

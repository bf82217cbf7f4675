"""Rewards for training a seat: pure functions of a scored Outcome and the seat's role.

The trade-off
-------------
A seat can raise its share of the gains by bargaining harder, but every extra bit of hardness
also makes "no deal" more likely, and a missed deal is worth nothing to either side. Which way
a trained policy leans is set by the reward:

- **share** (own surplus / gains from trade on a deal, 0 without one) already balances the two:
  its expectation is P(deal) x E[share | deal]. Alone, it rewards the hard line as long as the
  extra share outweighs the deals lost; fine-tuning on high-share transcripts alone pushes
  this way (more share, fewer deals).
- **utility** (own surplus / list price) is the same idea in money: scenarios with large gains
  count more, and it needs no knowledge of the other side's value. Negative on a losing deal.
- **deal** (+1 on any deal) and **no_deal** (+1 when a deal was possible, gains > 0, but none
  was made; give it a negative weight) pay for closing. Raising either moves the optimum toward
  softer bargaining: more deals, less share per deal. This is what RL against a fixed opponent
  recovers when it is rewarded for deals, and it gives back surplus to do so.
- **ir_violation** (+1 when the seat agreed to a price that loses it money; give it a negative
  weight) keeps a deal bonus from buying deals at a loss. Keep it larger than the deal bonus.
- **walk_away**: what an outcome without a deal is worth (0 by default), the level a deal's
  reward is measured against.

Combine them with a :class:`RewardSpec`: the weighted sum of the terms, the surplus terms (share
and utility) first clipped to ``clip`` (default [-1, 1]), plus ``walk_away`` without a deal
(docs/design.md, section 13).

Why the clip: GRPO scores a rollout by its advantage, the distance of its reward from its
group's mean in units of the group's standard deviation (TRL's default, ``scale_rewards=
"group"``). The share is unbounded below: a buyer who pays far above a value barely above the
seller's cost loses many times the gains (share -24.8 in one documented rollout). One such
reward makes the group's mean and spread its own: as it grows, every other rollout's advantage
tends to ``1/sqrt(n)`` for a group of n, whatever that rollout did, and the step teaches only
"do not be that rollout". Clipped, the worst deal weighs at most ``-clip[0]`` plus the IR
penalty, and the other rollouts' differences survive into their advantages.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Self

from pydantic import Field, model_validator

from dealroom.protocol import Model, Outcome, Role
from dealroom.protocol.market_referee import MarketOutcome


def surplus_share(outcome: Outcome, role: Role) -> float:
    """The seat's share of the gains from trade on a deal; 0 without a deal or gains.

    Usually in [0, 1]; below 0 when the seat agreed to lose money, above 1 when the other side
    did.
    """
    share = outcome.buyer_share if role == "buyer" else outcome.seller_share
    return 0.0 if share is None else share


def own_surplus(outcome: Outcome, role: Role) -> Decimal:
    """The seat's surplus: buyer value - price, or price - seller cost; 0 without a deal."""
    return outcome.buyer_surplus if role == "buyer" else outcome.seller_surplus


def normalised_utility(outcome: Outcome, role: Role, list_price: Decimal | float) -> float:
    """The seat's surplus as a fraction of the list price (scale-free across price tiers)."""
    return float(own_surplus(outcome, role)) / float(list_price)


def deal_made(outcome: Outcome) -> float:
    """1 on a deal, 0 otherwise."""
    return 1.0 if outcome.status == "deal" else 0.0


def deal_missed(outcome: Outcome) -> float:
    """1 when a deal was possible (gains > 0) but none was made, 0 otherwise."""
    return 1.0 if outcome.status == "no_deal" and outcome.gains > 0 else 0.0


def ir_violated(outcome: Outcome, role: Role) -> float:
    """1 when the seat agreed to a price that loses it money, 0 otherwise."""
    violated = outcome.buyer_ir_violation if role == "buyer" else outcome.seller_ir_violation
    return 1.0 if violated else 0.0


class RewardTerms(Model):
    """Every reward term of one outcome for one seat, before clipping and weighting."""

    share: float
    utility: float
    deal: float
    no_deal: float
    ir_violation: float


def reward_terms(outcome: Outcome, role: Role, list_price: Decimal | float) -> RewardTerms:
    """Every term for one seat."""
    return RewardTerms(
        share=surplus_share(outcome, role),
        utility=normalised_utility(outcome, role, list_price),
        deal=deal_made(outcome),
        no_deal=deal_missed(outcome),
        ir_violation=ir_violated(outcome, role),
    )


def market_terms(outcome: MarketOutcome, list_price: Decimal | float) -> RewardTerms:
    """Every term for a market's seller (docs/design.md, section 13): its share is the market's
    ``seller_share``, its surplus over the most any buyer would have paid; a deal is a sale; a
    sale was possible when some buyer values the item above the cost."""
    sold = outcome.status == "deal"
    return RewardTerms(
        share=0.0 if outcome.seller_share is None else outcome.seller_share,
        utility=float(outcome.seller_surplus) / float(list_price),
        deal=1.0 if sold else 0.0,
        no_deal=1.0 if not sold and outcome.gains > 0 else 0.0,
        ir_violation=1.0 if outcome.seller_ir_violation else 0.0,
    )


class RewardSpec(Model):
    """Weights of the reward terms, the clip of the surplus terms and the no-deal value:
    ``share * clip(share) + utility * clip(utility) + deal * deal + no_deal * no_deal +
    ir_violation * ir_violation + walk_away * (no deal)``.

    The default is the surplus share clipped to [-1, 1] with a penalty of 1 for a losing deal:
    every reward lies in [-2, 1].
    """

    share: float = Field(default=1.0, allow_inf_nan=False)
    """Weight of the surplus share (own surplus / gains, 0 without a deal)."""
    utility: float = Field(default=0.0, allow_inf_nan=False)
    """Weight of the normalised utility (own surplus / list price): the reward in money."""
    deal: float = Field(default=0.0, allow_inf_nan=False)
    """Weight of the deal indicator; positive values favour closing over share."""
    no_deal: float = Field(default=0.0, allow_inf_nan=False)
    """Weight of the missed-deal indicator (no deal although gains > 0); use <= 0."""
    ir_violation: float = Field(default=-1.0, allow_inf_nan=False)
    """Weight of the losing-deal indicator; use < 0."""
    walk_away: float = Field(default=0.0, allow_inf_nan=False)
    """The reward of an outcome without a deal (added to the no_deal term when one was
    possible)."""
    clip: tuple[float, float] | None = (-1.0, 1.0)
    """Bounds the share and the utility are clipped to before weighting; None: unclipped."""

    @model_validator(mode="after")
    def _bounded(self) -> Self:
        if self.clip is not None:
            low, high = self.clip
            if not (-1e9 < low < high < 1e9):
                raise ValueError(f"clip must be two finite bounds, low < high, not {self.clip}")
        return self

    def clipped(self, value: float) -> float:
        """A surplus term within ``clip``."""
        if self.clip is None:
            return value
        low, high = self.clip
        return min(max(value, low), high)

    def __call__(self, outcome: Outcome, role: Role, list_price: Decimal | float) -> float:
        """The reward of one outcome for one seat."""
        return self.weigh(reward_terms(outcome, role, list_price))

    def market(self, outcome: MarketOutcome, list_price: Decimal | float) -> float:
        """The reward of a market for its seller."""
        return self.weigh(market_terms(outcome, list_price))

    def weigh(self, terms: RewardTerms) -> float:
        """The reward of one seat's terms: clipped surplus terms, weighted, summed."""
        return (
            self.share * self.clipped(terms.share)
            + self.utility * self.clipped(terms.utility)
            + self.deal * terms.deal
            + self.no_deal * terms.no_deal
            + self.ir_violation * terms.ir_violation
            + self.walk_away * (1.0 - terms.deal)
        )


SHARE = RewardSpec()
"""Surplus share clipped to [-1, 1], -1 for a losing deal (the default)."""
UNCLIPPED = RewardSpec(clip=None)
"""The surplus share unclipped, -1 for a losing deal (the default before clipping)."""
MONEY = RewardSpec(share=0.0, utility=1.0)
"""Own surplus / list price clipped to [-1, 1], -1 for a losing deal."""
DEAL_SEEKING = RewardSpec(share=1.0, deal=0.5, ir_violation=-2.0)
"""Share plus a deal bonus: more deals, less share per deal."""

"""``dealroom train grpo --buyers N``: the reference conversations a market seller's GRPO derives
its lengths from, played by a scripted market seller through the seller's model seat
(``dealroom.training.market_sft``) on the first markets of the training dataset."""

from __future__ import annotations

from typing import Any

from dealroom.agents.market import market_seller
from dealroom.protocol import Rules, Tier
from dealroom.protocol.market import MarketRules, pool_members
from dealroom.protocol.market_scenarios import market_at
from dealroom.training.market_sft import market_sft_example
from dealroom.training.market_trl import pool_factories

REFERENCE_SELLER = "auctioneer"
"""The scripted seller whose conversations stand in for the learner's when lengths are
measured: it asks every buyer and waits, the longest of the scripted sellers' conversations."""


def market_reference(
    *, pool: str, buyers: int, tier: Tier, seed: int, rules: Rules, count: int
) -> list[dict[str, Any]]:
    """The reference seller's conversations on the first ``count`` markets of the dataset."""
    members = pool_members(pool, buyers)
    factories = pool_factories(pool, buyers)
    seller = market_seller(REFERENCE_SELLER)
    return [
        market_sft_example(
            market_at(seed, index, tier, buyers),
            seller,
            factories,
            names=(REFERENCE_SELLER, members),
            seed=seed,
            rules=MarketRules(rules=rules),
        )
        for index in range(count)
    ]

"""Market scenarios under a seed or a secret: one item, one seller's cost, N buyers' values.

The item, its list price and the currency are those of the bilateral scenario of the same seed,
index and tier (``scenario_at``). The seller's cost is drawn uniformly in a band of the list
price; each buyer's value in one of the value bands, the bands dealt to the buyers in an order
drawn per market (a random permutation, repeated past the number of bands), so that no buyer's
name says whose value is highest. Every draw is a hash of (seed, index, field), as for bilateral
scenarios (``dealroom.protocol.generator``).
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from pydantic import Field, model_validator

from dealroom.protocol._base import Model, to_cents
from dealroom.protocol.generator import DEFAULT_SPEC, scenario_at, scenario_digest, scenario_uniform
from dealroom.protocol.market import MarketScenario, buyer_ids
from dealroom.protocol.scenario import TIERS, Tier
from dealroom.protocol.secret import Seed

Band = tuple[float, float]


class MarketSpec(Model):
    """How markets are drawn. Every fraction is of the list price."""

    value_bands: tuple[Band, ...] = Field(
        default=((0.40, 0.55), (0.65, 0.80), (1.00, 1.15)), min_length=1
    )
    """Bands of buyers' values: a low, a middle and a high buyer by default."""
    cost_band: Band = (0.45, 0.70)
    """The band of the seller's cost."""
    deadline: float = Field(default=180.0, gt=0, allow_inf_nan=False)
    """Seconds on the market's one clock (longer than a bilateral negotiation's 120: the
    seller's actions to N buyers follow each other on its clock)."""

    @model_validator(mode="after")
    def _bands(self) -> MarketSpec:
        for low, high in (*self.value_bands, self.cost_band):
            if not 0 < low <= high:
                raise ValueError("each band is (low, high) with 0 < low <= high")
        return self


DEFAULT_MARKET_SPEC = MarketSpec()


def market_id(seed: Seed, index: int, tier: Tier, buyers: int) -> str:
    """The opaque id of market ``index`` of ``tier`` with ``buyers`` buyers."""
    return (
        f"{tier}-m{buyers}-{scenario_digest(seed, index, f'market:{buyers}:id:{tier}')[:8].hex()}"
    )


def market_at(
    seed: Seed, index: int, tier: Tier, buyers: int, spec: MarketSpec = DEFAULT_MARKET_SPEC
) -> MarketScenario:
    """The ``index``-th market of ``tier`` with ``buyers`` buyers under ``seed``."""
    names = buyer_ids(buyers)  # ValueError past 1 to MAX_BUYERS
    item = scenario_at(seed, index, tier, DEFAULT_SPEC)
    lp = float(item.list_price)
    key = f"market:{buyers}"
    low, high = spec.cost_band
    cost = to_cents(
        round(lp * (low + (high - low) * scenario_uniform(seed, index, f"{key}:cost")), 2)
    )
    order = sorted(names, key=lambda b: scenario_uniform(seed, index, f"{key}:order:{b}"))
    values: list[Decimal] = []
    for name in names:
        band_low, band_high = spec.value_bands[order.index(name) % len(spec.value_bands)]
        draw = scenario_uniform(seed, index, f"{key}:value:{name}")
        values.append(to_cents(round(lp * (band_low + (band_high - band_low) * draw), 2)))
    base = item.model_copy(
        update={
            "id": market_id(seed, index, tier, buyers),
            "deadline": spec.deadline,
            "buyer_value": values[0],
            "seller_cost": cost,
        }
    )
    return MarketScenario(base=base, buyer_values=tuple(values))


def generate_markets(
    n: int,
    buyers: int,
    *,
    seed: Seed = 0,
    tiers: Iterable[Tier] = TIERS,
    spec: MarketSpec = DEFAULT_MARKET_SPEC,
) -> list[MarketScenario]:
    """``n`` markets of ``buyers`` buyers per tier, deterministic in ``seed``."""
    return [market_at(seed, i, tier, buyers, spec) for tier in tiers for i in range(n)]

"""Scenario generation under a seed or a secret, and JSONL import/export.

Randomness comes from a hash of (seed, index, field), not from ``random``: the same seed gives the
same scenarios on every machine and Python version. Under a ``Secret`` (served play) the hash is
HMAC-SHA256 keyed with the secret, so no one without it can compute a scenario from what a seat
reads; under a public ``int`` seed (published sets, tests, training) it is plain SHA-256. The
draws other than the item's do not depend on the tier: tiers are paired under either.

Scenario ids are opaque: a hash of the same inputs, revealing neither seed nor index.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from decimal import Decimal

from pydantic import Field, ValidationError, model_validator

from dealroom.protocol._base import Model, Money, Role, to_cents
from dealroom.protocol.catalog import CATALOG, TIER_RANGES
from dealroom.protocol.errors import DealroomError
from dealroom.protocol.scenario import TIERS, Scenario, Tier
from dealroom.protocol.secret import Secret, Seed


class ScenarioSpec(Model):
    """How scenarios are drawn. Every fraction is of the list price."""

    zone_min: float = Field(default=0.05, gt=0, le=1)
    """Smallest gains from trade, v - c."""
    zone_max: float = Field(default=0.30, gt=0, le=1)
    """Largest gains from trade."""
    no_zone_share: float = Field(default=0.1, ge=0, le=1)
    """Share of scenarios with v < c (no deal possible; walking away is right)."""
    midpoint_min: float = Field(default=0.70, gt=0)
    """Lowest midpoint (v + c) / 2."""
    midpoint_max: float = Field(default=0.95, gt=0)
    """Highest midpoint (v + c) / 2."""
    price_jitter: float = Field(default=0.15, ge=0, lt=1)
    """List price = the catalog's typical price times a factor in [1 - jitter, 1 + jitter]."""
    deadline: float = Field(default=120.0, gt=0, allow_inf_nan=False)
    """Seconds on the negotiation clock."""
    currency: str = "USD"

    @model_validator(mode="after")
    def _ranges(self) -> ScenarioSpec:
        if self.zone_min > self.zone_max or self.midpoint_min > self.midpoint_max:
            raise ValueError("each *_min must be at most its *_max")
        if self.midpoint_min - self.zone_max / 2 <= 0:
            raise ValueError("midpoint_min - zone_max / 2 must be above 0 (seller cost > 0)")
        return self


DEFAULT_SPEC = ScenarioSpec()


def scenario_digest(seed: Seed, index: int, name: str) -> bytes:
    """The hash every draw of scenario ``index`` named ``name`` comes from."""
    match seed:
        case Secret():
            return seed.derive(f"dealroom:{index}:{name}")
        case int():
            return hashlib.sha256(f"dealroom:{seed}:{index}:{name}".encode()).digest()


def scenario_uniform(seed: Seed, index: int, name: str) -> float:
    """A draw in [0, 1) from ``digest``."""
    return int.from_bytes(scenario_digest(seed, index, name)[:7], "big") / 2**56


def scenario_id(seed: Seed, index: int, tier: Tier) -> str:
    """The opaque id of scenario ``index`` of ``tier``: the tier and 64 bits of a hash."""
    return f"{tier}-{scenario_digest(seed, index, f'id:{tier}')[:8].hex()}"


def _nice(price: Decimal) -> Decimal:
    """Round a list price to what a seller would advertise (two significant figures and a half)."""
    step = Decimal(10) ** (len(str(int(price))) - 2)
    step = max(step / 2, Decimal(1))
    return (price / step).quantize(Decimal(1)) * step


def scenario_at(seed: Seed, index: int, tier: Tier, spec: ScenarioSpec = DEFAULT_SPEC) -> Scenario:
    """The ``index``-th scenario of ``tier`` under ``seed`` (a public int or a secret)."""
    items = CATALOG[tier]
    item, typical = items[int(scenario_uniform(seed, index, f"item:{tier}") * len(items))]
    jitter = 1 - spec.price_jitter + 2 * spec.price_jitter * scenario_uniform(seed, index, "list")
    low, high = TIER_RANGES[tier]
    list_price = min(max(_nice(typical * Decimal(repr(round(jitter, 6)))), low), high)
    lp = float(list_price)
    draw = scenario_uniform(seed, index, "mid")
    mid = spec.midpoint_min + (spec.midpoint_max - spec.midpoint_min) * draw
    gains = spec.zone_min + (spec.zone_max - spec.zone_min) * scenario_uniform(seed, index, "gains")
    if scenario_uniform(seed, index, "no_zone") < spec.no_zone_share:
        gains = -gains
    return Scenario(
        id=scenario_id(seed, index, tier),
        item=item,
        list_price=to_cents(list_price),
        tier=tier,
        currency=spec.currency,
        deadline=spec.deadline,
        buyer_value=to_cents(round(lp * (mid + gains / 2), 2)),
        seller_cost=to_cents(round(lp * (mid - gains / 2), 2)),
    )


def value_bounds(role: Role, spec: ScenarioSpec = DEFAULT_SPEC) -> tuple[float, float]:
    """The fractions of the list price between which ``role``'s private number is drawn
    (``scenario_at``: ``v = L (m + g/2)``, ``c = L (m - g/2)``, ``g`` negative with probability
    ``no_zone_share``), computed with the draw's own float operations at each uniform's ends, so
    that every drawn number lies within them: the hull of the zone's and the no-zone's ranges
    (each where it can occur)."""
    top_mid = spec.midpoint_min + (spec.midpoint_max - spec.midpoint_min) * 1.0
    top_gains = spec.zone_min + (spec.zone_max - spec.zone_min) * 1.0
    above = (spec.midpoint_min + spec.zone_min / 2, top_mid + top_gains / 2)
    below = (spec.midpoint_min - top_gains / 2, top_mid - spec.zone_min / 2)
    # The buyer's value is above the midpoint when there are gains, the seller's cost below.
    with_gains, without = (above, below) if role == "buyer" else (below, above)
    spans = [
        span
        for span, occurs in (
            (with_gains, spec.no_zone_share < 1),
            (without, spec.no_zone_share > 0),
        )
        if occurs
    ]
    return min(low for low, _ in spans), max(high for _, high in spans)


def value_range(
    list_price: Money, role: Role, spec: ScenarioSpec = DEFAULT_SPEC
) -> tuple[Money, Money]:
    """The amounts between which ``role``'s private number is drawn for an item of that list
    price (``value_bounds``, rounded to cents as ``scenario_at`` rounds the number)."""
    low, high = value_bounds(role, spec)
    lp = float(list_price)
    return to_cents(round(lp * low, 2)), to_cents(round(lp * high, 2))


def generate(
    n: int,
    *,
    seed: Seed = 0,
    tiers: Iterable[Tier] = TIERS,
    spec: ScenarioSpec = DEFAULT_SPEC,
) -> list[Scenario]:
    """``n`` scenarios per tier, deterministic in ``seed``."""
    return [scenario_at(seed, index, tier, spec) for tier in tiers for index in range(n)]


def dumps_jsonl(scenarios: Iterable[Scenario]) -> str:
    """Scenarios as JSON lines."""
    return "".join(s.model_dump_json() + "\n" for s in scenarios)


class ScenarioFileError(DealroomError, ValueError):
    """A scenario file line that is not a valid scenario."""

    kind = "scenario_file"


def loads_jsonl(text: str) -> Iterator[Scenario]:
    """Parse JSON lines into scenarios (blank lines skipped).

    Raises ScenarioFileError naming the first bad line and what is wrong with it.
    """
    # Split on "\n" only: str.splitlines also breaks at U+2028, U+0085 and other characters
    # that JSON writes unescaped inside strings.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield Scenario.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            detail = f"{where}: {first['msg']}" if where else first["msg"]
            raise ScenarioFileError(f"line {number}: {detail}") from None

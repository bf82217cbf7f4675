"""Tournaments of markets: a roster of sellers against pools of buyers, stored as they finish.

Every seller plays ``per_pool`` markets of each tier against every pool; a pool is the specs of
the N buyers (one spec for all, or one per buyer). Market ``index`` of a tier is the same market
(``market_at``) for every seller and pool, so sellers are compared on the same items, costs and
values. Each market is committed to the store as it finishes under a deterministic key, so a
run killed at any point resumes where it stopped (``resume=True``) and never stores a market
twice; resuming checks that the run's recorded configuration is the one asked for.

Scripted agents only, in process on the virtual clock (a market takes milliseconds).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dealroom.engine.market import play_market
from dealroom.play.registry import resolve
from dealroom.play.tournament import ConfigMismatchError, RunExistsError, config_differences
from dealroom.protocol.errors import DealroomError
from dealroom.protocol.market import (
    DEFAULT_MARKET_RULES,
    MAX_BUYERS,
    MarketAgentFactory,
    MarketRules,
    pool_name,
)
from dealroom.protocol.market_referee import MarketRecord
from dealroom.protocol.market_scenarios import market_at
from dealroom.protocol.scenario import TIERS, Tier
from dealroom.protocol.secret import Secret, Seed, seed_json
from dealroom.store.results import ResultsStore

MarketSellerResolver = Callable[[str], MarketAgentFactory]
"""Turns a seller's spec into a market seller (``dealroom.agents.market.market_seller``: the
agents layer, above this one, knows the market sellers)."""


class MarketPlanError(DealroomError, ValueError):
    """A market tournament that cannot be played as asked."""

    kind = "market_plan"


@dataclass(frozen=True, slots=True)
class MarketJob:
    """One market to play: its key in the store and who plays it."""

    key: str
    seller: str
    pool: tuple[str, ...]
    tier: Tier
    index: int


@dataclass(frozen=True, slots=True)
class MarketPlan:
    """What a market tournament plays."""

    sellers: tuple[str, ...]
    pools: tuple[tuple[str, ...], ...]
    """Each pool: one spec per buyer (all pools have ``buyers`` specs)."""
    buyers: int = 3
    tiers: tuple[Tier, ...] = TIERS
    per_pool: int = 10
    seed: Seed = field(default_factory=Secret.new)
    rules: MarketRules = DEFAULT_MARKET_RULES

    def __post_init__(self) -> None:
        if not 1 <= self.buyers <= MAX_BUYERS:
            raise MarketPlanError(f"a market has 1 to {MAX_BUYERS} buyers, not {self.buyers}")
        if not self.sellers or not self.pools or self.per_pool < 1 or not self.tiers:
            raise MarketPlanError(
                "a market tournament needs sellers, pools, tiers and per_pool >= 1"
            )
        for pool in self.pools:
            if len(pool) != self.buyers:
                raise MarketPlanError(
                    f"pool {'+'.join(pool)!r} has {len(pool)} buyers, not {self.buyers}"
                )
            for spec in pool:
                resolve(spec)  # AgentSpecError now, not after the first markets
        for spec in (*self.sellers, *(pool_name(p) for p in self.pools)):
            if "/" in spec:
                raise MarketPlanError(f"a spec in a market tournament has no '/': {spec!r}")

    def as_dict(self) -> dict[str, Any]:
        """The configuration recorded with the run."""
        return {
            "kind": "markets",
            "sellers": list(self.sellers),
            "pools": [list(pool) for pool in self.pools],
            "buyers": self.buyers,
            "tiers": list(self.tiers),
            "per_pool": self.per_pool,
            "rules": self.rules.model_dump(mode="json"),
            **seed_json(self.seed),
        }

    def jobs(self, run: str) -> list[MarketJob]:
        """Every market of the run, in a fixed order."""
        return [
            MarketJob(f"{run}/{seller}/{pool_name(pool)}/{tier}/{index}", seller, pool, tier, index)
            for seller in self.sellers
            for pool in self.pools
            for tier in self.tiers
            for index in range(self.per_pool)
        ]


def pending_markets(
    store: ResultsStore, plan: MarketPlan, run: str, *, resume: bool
) -> list[MarketJob]:
    """The jobs not yet stored, after checking (and recording) the run's configuration.
    RunExistsError or ConfigMismatchError as for bilateral tournaments."""
    if not run or "/" in run:
        raise MarketPlanError("a run name must be non-empty and without '/'")
    stored = store.market_keys(run)
    if stored and not resume:
        raise RunExistsError(run, len(stored))
    wanted, recorded = plan.as_dict(), store.run_config(run)
    if stored and recorded is None:
        raise ConfigMismatchError(run, ["the stored run has no recorded configuration"])
    if stored and recorded is not None and recorded != wanted:
        raise ConfigMismatchError(run, config_differences(recorded, wanted))
    store.set_run_config(run, wanted, replace=True)
    return [job for job in plan.jobs(run) if job.key not in stored]


def play_job(plan: MarketPlan, job: MarketJob, seller: MarketAgentFactory) -> MarketRecord:
    """Play one market of the plan."""
    market = market_at(plan.seed, job.index, job.tier, plan.buyers)
    buyers = [resolve(spec) for spec in job.pool]
    return play_market(
        market, seller, buyers, names=(job.seller, job.pool), rules=plan.rules, seed=plan.seed
    )


def run_markets(
    store: ResultsStore,
    plan: MarketPlan,
    run: str,
    seller_of: MarketSellerResolver,
    *,
    resume: bool = False,
    on_stored: Callable[[MarketRecord], None] | None = None,
) -> tuple[int, int]:
    """Play every pending market of the run, storing each as it finishes; (played, skipped)."""
    sellers = {spec: seller_of(spec) for spec in plan.sellers}  # AgentSpecError up front
    jobs = pending_markets(store, plan, run, resume=resume)
    total = len(plan.jobs(run))
    for job in jobs:
        record = play_job(plan, job, sellers[job.seller])
        store.add_market(job.key, record, run=run)
        if on_stored is not None:
            on_stored(record)
    return len(jobs), total - len(jobs)

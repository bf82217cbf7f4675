"""Tournaments of markets: a roster of sellers against pools of buyers, stored as they finish.

Every seller plays ``per_pool`` markets of each tier against every pool; a pool is the specs of
the N buyers (one spec for all, or one per buyer). Market ``index`` of a tier is the same market
(``market_at``) for every seller and pool, so sellers are compared on the same items, costs and
values. Each market is committed to the store as it finishes under a deterministic key, so a
run killed at any point resumes where it stopped (``resume=True``) and never stores a market
twice; resuming checks that the run's recorded configuration is the one asked for.

A seller is a scripted market seller (in process on the virtual clock: a market takes
milliseconds) or a seat seller (``SeatSeller``: a model, ``dealroom.agents.llm_market``), whose
markets run after the scripted ones in one event loop, at most ``concurrency`` at once and at
most each endpoint's own limit on each endpoint; what a seat seller reports (model calls,
tokens, cost, its conversation, its error) is stored beside its market as ``{"seller": ...}``.
The resolver that turns specs into sellers is passed in: this layer does not know the agents.

As in a tournament of negotiations (``dealroom.play.tournament``): every model call of a seat
seller is journaled the moment it returns (``dealroom.store.paid``, keyed by the market and an
attempt, which the stored market names), so calls paid for in a market lost to a kill are
reported as "paid, not stored"; a ``Budget`` stops the run cleanly by its rule, a market being
its unit; ``on_progress`` sees the ``Progress`` after each stored market.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio

from dealroom.analysis.market_report import model_seats
from dealroom.engine.market import play_market
from dealroom.play.jobs import DEFAULT_SEAT_CONCURRENCY
from dealroom.play.players import Endpoint, OnModelCall, close_players
from dealroom.play.progress import NO_BUDGET, Budget, Progress, ProgressCallback
from dealroom.play.registry import resolve
from dealroom.play.tournament import ConfigMismatchError, RunExistsError, config_differences
from dealroom.protocol import AgentFactory
from dealroom.protocol.errors import DealroomError
from dealroom.protocol.market import (
    DEFAULT_MARKET_RULES,
    MAX_BUYERS,
    MarketAgentFactory,
    MarketRules,
    MarketScenario,
    pool_name,
)
from dealroom.protocol.market_referee import MarketRecord
from dealroom.protocol.market_scenarios import market_at
from dealroom.protocol.scenario import TIERS, Tier
from dealroom.protocol.secret import Secret, Seed, seed_json
from dealroom.store import paid as paid_calls
from dealroom.store.results import ResultsStore


@runtime_checkable
class SeatSeller(Protocol):
    """A seller that plays a market through the seller's seat, asynchronously (a model:
    ``dealroom.agents.llm_market.LLMMarketSeller``). It may carry ``endpoint: Endpoint | None``
    (read with getattr) to be rate-limited, and ``aclose`` to close its connections."""

    name: str
    """Recorded as the market's seller."""

    async def sell(
        self,
        market: MarketScenario,
        buyers: Sequence[AgentFactory],
        *,
        buyer_names: Sequence[str],
        rules: MarketRules,
        seed: Seed,
        on_model_call: OnModelCall | None = None,
    ) -> tuple[MarketRecord, Mapping[str, Any]]:
        """Play the market to its end: its record, and what to store beside it;
        ``on_model_call`` gets each model call's usage the moment it returns."""
        ...


MarketSellerResolver = Callable[[str], MarketAgentFactory | SeatSeller]
"""Turns a seller's spec into a market seller (``dealroom.agents.market.market_seller``, or
the CLI's resolver of model sellers: the agents layer, above this one, knows the sellers)."""


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

    @property
    def run(self) -> str:
        """The run it belongs to (the key's first part: a run's name has no '/')."""
        return self.key.split("/", 1)[0]


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
    entries: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """What defines each model seller of a roster (model, endpoint, sampling, prices),
    recorded with the run: a resume with other models or settings is refused."""

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
            **({"entries": dict(self.entries)} if self.entries else {}),
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


async def sell_job(
    plan: MarketPlan, job: MarketJob, seller: SeatSeller, *, paid_log: Path | None = None
) -> tuple[MarketRecord, Mapping[str, Any]]:
    """Play one market of the plan with a seat seller: the same market and buyers as
    ``play_job``'s; its record, and what to store beside it (the seller's data, and the
    attempt its model calls were journaled under in ``paid_log``)."""
    market = market_at(plan.seed, job.index, job.tier, plan.buyers)
    buyers = [resolve(spec) for spec in job.pool]
    attempt = uuid.uuid4().hex
    line = {
        "run": job.run,
        "key": job.key,
        "attempt": attempt,
        "role": "seller",
        "agent": job.seller,
    }

    def paid(usage: Mapping[str, Any]) -> None:
        if paid_log is not None:
            paid_calls.append(paid_log, {**line, **usage})

    record, extra = await seller.sell(
        market, buyers, buyer_names=job.pool, rules=plan.rules, seed=plan.seed, on_model_call=paid
    )
    return record, {"seller": dict(extra), "attempt": attempt}


def run_markets(
    store: ResultsStore,
    plan: MarketPlan,
    run: str,
    seller_of: MarketSellerResolver,
    *,
    resume: bool = False,
    on_progress: ProgressCallback | None = None,
    concurrency: int = DEFAULT_SEAT_CONCURRENCY,
    budget: Budget = NO_BUDGET,
) -> Progress:
    """Play every pending market of the run, storing each as it finishes; the run's
    ``Progress`` (``stopped`` set if ``budget`` stopped it). Scripted sellers' markets first,
    then seat sellers' in one event loop (see the module's docstring); seat sellers are closed
    at the end however the run ends."""
    sellers = {spec: seller_of(spec) for spec in plan.sellers}  # AgentSpecError up front
    seats = {spec: s for spec, s in sellers.items() if isinstance(s, SeatSeller)}
    try:
        jobs = pending_markets(store, plan, run, resume=resume)
        total = len(plan.jobs(run))
        progress = Progress(
            total=total, skipped=total - len(jobs), skipped_deals=store.market_sales(run)
        )
        driver = _Driver(store, run, progress, on_progress)
        for job in jobs:
            seller = sellers[job.seller]
            if not isinstance(seller, SeatSeller):
                driver.save(job, play_job(plan, job, seller), {})
        seated = [job for job in jobs if job.seller in seats]
    except BaseException:
        anyio.run(close_players, list(seats.values()))
        raise
    if seats:
        anyio.run(_sell_all, driver, plan, seated, seats, concurrency, budget)
    return progress


@dataclass(slots=True)
class _Driver:
    """Stores each finished market (committed at once) and counts it."""

    store: ResultsStore
    run: str
    progress: Progress
    on_progress: ProgressCallback | None

    def save(self, job: MarketJob, record: MarketRecord, extra: Mapping[str, Any]) -> None:
        self.progress.new_rows += self.store.add_market(job.key, record, run=self.run, extra=extra)
        seats = [data for _, _, data in model_seats(record, extra)]
        failed = any("error" in data for data in seats)
        self.progress.add(deal=record.outcome.status == "deal", failed=failed, seats=seats)
        if self.on_progress is not None:
            self.on_progress(self.progress)


async def _sell_all(
    driver: _Driver,
    plan: MarketPlan,
    jobs: list[MarketJob],
    seats: Mapping[str, SeatSeller],
    concurrency: int,
    budget: Budget,
) -> None:
    """Every job in its own task, started in order as its endpoint's slot and then one of the
    ``concurrency`` shared slots free up (endpoint first: no task holds a shared slot while it
    waits for a busy endpoint); the event loop's thread alone writes the store. Once the
    budget is reached (checked as each market would start) no market starts; those in flight
    finish and are stored."""
    progress, paid_log = driver.progress, paid_calls.paid_path(driver.store.path)
    shared = anyio.CapacityLimiter(concurrency)
    endpoints: dict[str, anyio.CapacityLimiter] = {}
    for seller in seats.values():
        endpoint: Endpoint | None = getattr(seller, "endpoint", None)
        if endpoint is not None:
            endpoints.setdefault(endpoint.key, anyio.CapacityLimiter(endpoint.concurrency))

    async def one(job: MarketJob) -> None:
        seller = seats[job.seller]
        endpoint: Endpoint | None = getattr(seller, "endpoint", None)
        async with contextlib.AsyncExitStack() as stack:
            if endpoint is not None:
                await stack.enter_async_context(endpoints[endpoint.key])
            await stack.enter_async_context(shared)
            if progress.stopped is None:
                progress.stopped = budget.reached(progress)
            if progress.stopped is not None:
                return
            record, extra = await sell_job(plan, job, seller, paid_log=paid_log)
        driver.save(job, record, extra)

    try:
        async with anyio.create_task_group() as group:
            for job in jobs:
                group.start_soon(one, job)
    finally:
        await close_players(seats.values())

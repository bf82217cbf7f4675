"""Round-robin tournaments: every agent against every other, in both seats, on common scenarios.

A tournament is a list of jobs. Job ``i`` of tier ``T`` plays ``scenario_at(secret, i, T)`` for
every pairing (common random numbers), and its key ``run/tier/index/buyer/seller`` is the same
on every run of the same configuration, so a resumed run skips exactly what the store holds.
Negotiations are deterministic for a secret, so the same configuration gives the same results
whatever the backend, the concurrency or the order in which jobs finish. The secret (a fresh
256-bit one by default) is part of the configuration stored with the run: an agent that can run
our generator cannot compute the scenarios or the other agents' draws, ``--resume`` reads the
secret back, and a benchmark can publish it afterwards.

Only the driver writes the store, one committed row as each negotiation arrives; killing the
driver at any moment loses at most the negotiations in flight, never a stored one. Its worker
processes, and a local Ray cluster it started, end with it however it ends (``_orphans``).

Agents are specs of any kind the registry names (``dealroom.play.registry``): a job whose two
seats are scripted plays in the engine, with no MCP session and no event loop; a job with a seat
player (an LLM, a person) plays through the seats (``play_match``), and what its players report
(model calls, tokens, cost, errors, the model's conversation) is stored with the negotiation.

Jobs run on a backend (``dealroom.play.backends``: serial, worker processes, Ray). Locally,
seat jobs (I/O-bound) run in the driver's event loop after the scripted ones: at most
``SeatLimits.concurrency`` at once, and at most each endpoint's own limit on each endpoint
(``Player.endpoint``). A ``Budget`` (``dealroom.play.progress``) stops a run cleanly; its rule
is in its docstring.

Here: the configuration and the driver. ``dealroom.play.jobs`` holds what one job is and how it
is played.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from dealroom.play.backends import Backend, SerialBackend
from dealroom.play.jobs import (
    DEFAULT_SEAT_CONCURRENCY,
    ChunkPlayer,
    Job,
    Played,
    Resolver,
    TournamentError,
    build_players,
    endpoint_limiters,
)
from dealroom.play.players import close_players
from dealroom.play.progress import NO_BUDGET, Budget, Progress, ProgressCallback
from dealroom.play.registry import resolve_player
from dealroom.play.settings import DEFAULT_RUN
from dealroom.protocol import DEFAULT_RULES, TIERS, Role, Rules, Tier
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Secret, Seed, seed_from_json, seed_json
from dealroom.store import paid as paid_calls
from dealroom.store.results import ResultsStore, SerializedRecord

AsyncPlay = Callable[["Job"], Awaitable[NegotiationRecord]]
"""Plays one job asynchronously (for agents that wait on I/O)."""


class RunExistsError(TournamentError):
    """The store already holds negotiations of this run, and resuming was not asked for."""

    kind = "run_exists"

    def __init__(self, run: str, stored: int) -> None:
        super().__init__(f"the store already holds {stored} negotiations of run {run!r}")
        self.run = run
        self.stored = stored


class ConfigMismatchError(TournamentError):
    """Resuming a run whose recorded configuration differs from the one asked for."""

    kind = "config_mismatch"

    def __init__(self, run: str, differences: list[str]) -> None:
        super().__init__(
            f"run {run!r} was recorded with a different configuration: " + "; ".join(differences)
        )
        self.run = run
        self.differences = differences


@dataclass(frozen=True, slots=True)
class TournamentConfig:
    """What is played: the agents (specs), tiers, negotiations per ordered pair and tier, and
    the secret (or public int seed) scenarios and agents draw under."""

    agents: tuple[str, ...]
    tiers: tuple[Tier, ...] = TIERS
    per_pair: int = 10
    seed: Seed = field(default_factory=Secret.new)
    self_play: bool = False
    rules: Rules = DEFAULT_RULES
    entries: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """What defines each named LLM entry (model, sampling, prices), recorded with the run."""
    learner: str | None = None
    """Only the pairings of this agent against the others (a trained model's evaluation
    against fixed opponents); None: the whole round robin."""
    learner_role: Role | None = None
    """With ``learner``: only in this seat (None: both)."""

    def __post_init__(self) -> None:
        if len(set(self.agents)) != len(self.agents):
            raise TournamentError("each agent may appear only once")
        if self.learner is not None and self.learner not in self.agents:
            raise TournamentError(f"the learner {self.learner!r} is not one of the agents")
        if self.learner_role is not None and self.learner is None:
            raise TournamentError("a learner role needs a learner")
        if bad := [a for a in self.agents if not a or "/" in a]:
            raise TournamentError(f"agent specs must be non-empty and without '/': {bad}")
        if not self.pairings():
            raise TournamentError("no pairings: give at least two agents, or self-play")
        if not self.tiers or len(set(self.tiers)) != len(self.tiers):
            raise TournamentError("give each tier at most once, and at least one")
        if bad_tiers := [t for t in self.tiers if t not in TIERS]:
            raise TournamentError(f"unknown tiers {bad_tiers}; tiers are {', '.join(TIERS)}")
        if self.per_pair < 1:
            raise TournamentError("per_pair must be at least 1")

    def pairings(self) -> list[tuple[str, str]]:
        """Ordered (buyer, seller) pairs: both seats for every two agents."""
        pairs = [
            (buyer, seller)
            for buyer in self.agents
            for seller in self.agents
            if self.self_play or buyer != seller
        ]
        if self.learner is None:
            return pairs
        seats = {"buyer": (0,), "seller": (1,), None: (0, 1)}[self.learner_role]
        return [pair for pair in pairs if any(pair[i] == self.learner for i in seats)]

    def as_dict(self) -> dict[str, Any]:
        """The configuration as stored beside the run (JSON-ready)."""
        return {
            "agents": list(self.agents),
            "tiers": list(self.tiers),
            "per_pair": self.per_pair,
            **seed_json(self.seed),
            "self_play": self.self_play,
            "rules": self.rules.model_dump(mode="json"),
            **({"entries": dict(self.entries)} if self.entries else {}),
            **({"learner": self.learner} if self.learner is not None else {}),
            **({"learner_role": self.learner_role} if self.learner_role is not None else {}),
        }

    def jobs(self, run: str = DEFAULT_RUN) -> list[Job]:
        """Every negotiation, scenario-major: a partial run covers every pairing evenly."""
        return [
            Job(run=run, buyer=buyer, seller=seller, tier=tier, index=index, seed=self.seed)
            for index in range(self.per_pair)
            for tier in self.tiers
            for buyer, seller in self.pairings()
        ]


@dataclass
class Tournament:
    """A tournament bound to a store and a run name."""

    config: TournamentConfig
    store: ResultsStore
    run_name: str = DEFAULT_RUN
    progress: Progress = field(init=False)

    def __post_init__(self) -> None:
        if not self.run_name or "/" in self.run_name:
            raise TournamentError("a run name must be non-empty and without '/'")
        self.progress = Progress(total=len(self.config.jobs(self.run_name)))

    def pending(self, *, resume: bool = False) -> list[Job]:
        """Jobs not yet stored, after checking the store agrees with this configuration (and
        recording the configuration). Raises RunExistsError or ConfigMismatchError."""
        run, wanted = self.run_name, self.config.as_dict()
        stored = self.store.keys(run)
        if stored and not resume:
            raise RunExistsError(run, len(stored))
        recorded = self.store.run_config(run)
        if recorded is not None and recorded != wanted and stored:
            raise ConfigMismatchError(run, config_differences(recorded, wanted))
        if stored and recorded is None:
            raise ConfigMismatchError(run, ["the stored run has no recorded configuration"])
        self.store.set_run_config(run, wanted, replace=True)
        jobs = [job for job in self.config.jobs(run) if job.key not in stored]
        self.progress = Progress(
            total=self.progress.total,
            skipped=self.progress.total - len(jobs),
            skipped_deals=self.store.run_progress(run).deals if stored else 0,
        )
        return jobs

    def save(self, job: Job, played: Played) -> None:
        """Write one finished negotiation (committed at once) and count it."""
        extra = {**job.extra(), **played.extra}
        added = self.store.add_serialized(job.key, played.row, run=job.run, extra=extra)
        self.progress.count(played)
        self.progress.new_rows += added

    def run(
        self,
        resolver: Resolver = resolve_player,
        *,
        backend: Backend | None = None,
        resume: bool = False,
        on_progress: ProgressCallback | None = None,
        concurrency: int = DEFAULT_SEAT_CONCURRENCY,
        budget: Budget = NO_BUDGET,
    ) -> Progress:
        """Play every pending job, writing each as it arrives: scripted jobs on ``backend``
        (default: serial), then seat jobs in this process's event loop, at most
        ``concurrency`` at once and within each endpoint's limit (a backend that plays seats,
        Ray, takes them all). Stops early, cleanly, when ``budget`` is reached."""
        jobs = self.pending(resume=resume)
        paid_log = paid_calls.paid_path(self.store.path)
        player = ChunkPlayer(resolver, self.config.rules, concurrency, paid_log)
        backend = backend or SerialBackend()
        if backend.plays_seats:
            self._drain(backend, jobs, player, on_progress, budget)
            return self.progress
        scripted = [job for job in jobs if player.is_scripted(job)]
        seated = [job for job in jobs if not player.is_scripted(job)]
        self._drain(backend, scripted, player, on_progress, budget)
        if seated and self.progress.stopped is None:
            _run_loop(lambda: self._run_seated(seated, player, on_progress, budget))
        return self.progress

    def _drain(
        self,
        backend: Backend,
        jobs: Sequence[Job],
        player: ChunkPlayer,
        on_progress: ProgressCallback | None,
        budget: Budget,
    ) -> None:
        """Store the backend's results as they arrive; once the budget is reached it starts
        nothing new, and what it had started is still stored."""
        results = backend.run(jobs, player, lambda: self.progress.stopped is not None)
        try:
            for job, played in results:
                self.save(job, played)
                if on_progress is not None:
                    on_progress(self.progress)
                if self.progress.stopped is None:
                    self.progress.stopped = budget.reached(self.progress)
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()

    async def _run_seated(
        self,
        jobs: list[Job],
        player: ChunkPlayer,
        on_progress: ProgressCallback | None,
        budget: Budget,
    ) -> None:
        players = build_players(player.resolver, jobs)
        try:
            await self._play_async(
                jobs,
                lambda job: player.play_seated(job, players),
                limit=player.concurrency,
                limiters=endpoint_limiters(players),
                on_progress=on_progress,
                budget=budget,
            )
        finally:
            await close_players(players.values())

    async def run_async(
        self,
        play_job: AsyncPlay,
        *,
        limit: int,
        resume: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> Progress:
        """Play every pending job with ``play_job``, at most ``limit`` at once; the event loop's
        thread alone writes the store, as each negotiation finishes."""
        jobs = self.pending(resume=resume)

        async def play_one(job: Job) -> Played:
            return Played(SerializedRecord.of(await play_job(job)))

        await self._play_async(jobs, play_one, limit=limit, on_progress=on_progress)
        return self.progress

    async def _play_async(
        self,
        jobs: list[Job],
        play_one: Callable[[Job], Awaitable[Played]],
        *,
        limit: int,
        limiters: Callable[[Job], list[anyio.CapacityLimiter]] = lambda job: [],
        on_progress: ProgressCallback | None = None,
        budget: Budget = NO_BUDGET,
    ) -> None:
        """Every job in its own task, started in order as its endpoints' slots and then one of
        the ``limit`` slots free up (endpoint slots first, in a fixed order: no task holds a
        shared slot while it waits for a busy endpoint, and none can deadlock)."""
        shared = anyio.CapacityLimiter(limit)

        async def one(job: Job) -> None:
            async with contextlib.AsyncExitStack() as stack:
                for limiter in [*limiters(job), shared]:
                    await stack.enter_async_context(limiter)
                if self.progress.stopped is None:
                    self.progress.stopped = budget.reached(self.progress)
                if self.progress.stopped is not None:
                    return
                played = await play_one(job)
            self.save(job, played)
            if on_progress is not None:
                on_progress(self.progress)

        async with anyio.create_task_group() as group:
            for job in jobs:
                group.start_soon(one, job)


def _run_loop(main: Callable[[], Awaitable[None]]) -> None:
    """Run ``main`` in a new event loop (uvloop where installed: less CPU per model call)."""
    try:
        importlib.import_module("uvloop")
    except ImportError:
        anyio.run(main)
    else:
        anyio.run(main, backend_options={"use_uvloop": True})


def stored_seed(store: ResultsStore, run: str) -> Seed | None:
    """The secret (or seed) a run was recorded with, for resuming it; None if none is recorded."""
    recorded = store.run_config(run)
    if recorded is None or not ({"secret", "seed"} & recorded.keys()):
        return None
    return seed_from_json(recorded)


def config_differences(recorded: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """What differs between a run's recorded configuration and the one asked for (the
    secret named, never shown)."""
    return [
        # Secrets are not echoed: an error line may end up where a seat can read it.
        "secret: the stored and the asked secret differ"
        if name == "secret"
        else f"{name}: stored {recorded.get(name)!r}, asked {wanted.get(name)!r}"
        for name in sorted(set(recorded) | set(wanted))
        if recorded.get(name) != wanted.get(name)
    ]

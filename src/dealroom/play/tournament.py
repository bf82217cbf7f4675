"""Round-robin tournaments: every agent against every other, in both seats, on common scenarios.

A tournament is a list of jobs. Job ``i`` of tier ``T`` plays ``scenario_at(seed, i, T)`` for
every pairing (common random numbers), and its key ``run/tier/index/buyer/seller`` is the same
on every run of the same configuration, so a resumed run skips exactly what the store holds.
Negotiations are deterministic for a seed, so the same configuration gives the same results
whatever the backend, the concurrency or the order in which jobs finish.

Only the driver writes the store, one committed row as each negotiation arrives; killing the
driver at any moment loses at most the negotiations in flight, never a stored one.

How jobs run is a backend's business:

    SerialBackend    in the driver's process, one at a time
    ProcessBackend   worker processes, in chunks (scripted agents are CPU-bound)
    RayBackend       tasks on a Ray cluster (``pip install dealroom[ray]``)

and ``Tournament.run_async`` plays an async play function (I/O-bound agents, e.g. LLMs) with at
most ``limit`` negotiations in flight.
"""

from __future__ import annotations

import functools
import logging
import multiprocessing
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from dealroom.engine.match import play
from dealroom.protocol import DEFAULT_RULES, TIERS, AgentFactory, Rules, Scenario, Tier
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.record import NegotiationRecord
from dealroom.store.results import ResultsStore, SerializedRecord

Resolver = Callable[[str], AgentFactory]
"""Turns an agent spec into a factory (the CLI passes ``dealroom.agents.resolve``). It must be
picklable (a module-level function) for the process and Ray backends."""

AsyncPlay = Callable[["Job"], Awaitable[NegotiationRecord]]
"""Plays one job asynchronously (for agents that wait on I/O)."""

DEFAULT_RUN = "tournament"


class TournamentError(Exception):
    """A tournament that cannot start: a bad configuration, or a store that disagrees with it."""


class RunExistsError(TournamentError):
    """The store already holds negotiations of this run, and resuming was not asked for."""

    def __init__(self, run: str, stored: int) -> None:
        super().__init__(f"the store already holds {stored} negotiations of run {run!r}")
        self.run = run
        self.stored = stored


class ConfigMismatchError(TournamentError):
    """Resuming a run whose recorded configuration differs from the one asked for."""

    def __init__(self, run: str, differences: list[str]) -> None:
        super().__init__(
            f"run {run!r} was recorded with a different configuration: " + "; ".join(differences)
        )
        self.run = run
        self.differences = differences


@dataclass(frozen=True, slots=True)
class TournamentConfig:
    """What is played: the agents (specs), tiers, negotiations per ordered pair and tier, seed."""

    agents: tuple[str, ...]
    tiers: tuple[Tier, ...] = TIERS
    per_pair: int = 10
    seed: int = 0
    self_play: bool = False
    rules: Rules = DEFAULT_RULES

    def __post_init__(self) -> None:
        if len(set(self.agents)) != len(self.agents):
            raise TournamentError("each agent may appear only once")
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
        return [
            (buyer, seller)
            for buyer in self.agents
            for seller in self.agents
            if self.self_play or buyer != seller
        ]

    def as_dict(self) -> dict[str, Any]:
        """The configuration as stored beside the run (JSON-ready)."""
        return {
            "agents": list(self.agents),
            "tiers": list(self.tiers),
            "per_pair": self.per_pair,
            "seed": self.seed,
            "self_play": self.self_play,
            "rules": self.rules.model_dump(mode="json"),
        }

    def jobs(self, run: str = DEFAULT_RUN) -> list[Job]:
        """Every negotiation, scenario-major: a partial run covers every pairing evenly."""
        return [
            Job(run=run, buyer=buyer, seller=seller, tier=tier, index=index, seed=self.seed)
            for index in range(self.per_pair)
            for tier in self.tiers
            for buyer, seller in self.pairings()
        ]


@dataclass(frozen=True, slots=True)
class Job:
    """One negotiation of a tournament."""

    run: str
    buyer: str
    seller: str
    tier: Tier
    index: int
    seed: int

    @property
    def key(self) -> str:
        """The store key, the same on every run of the same configuration."""
        return f"{self.run}/{self.tier}/{self.index:05d}/{self.buyer}/{self.seller}"

    def scenario(self) -> Scenario:
        """The job's scenario: the same for every pairing (common random numbers)."""
        return scenario_at(self.seed, self.index, self.tier)

    def extra(self) -> dict[str, Any]:
        """What the store keeps beside the record, for replays."""
        return {"index": self.index, "seed": self.seed}


@functools.lru_cache(maxsize=256)
def _factory(resolver: Resolver, spec: str) -> AgentFactory:
    # Once per spec and process: factories are closures, so each worker resolves its own.
    return resolver(spec)


@dataclass(frozen=True, slots=True)
class ChunkPlayer:
    """Plays a chunk of jobs in whatever process it lands in (picklable)."""

    resolver: Resolver
    rules: Rules = DEFAULT_RULES

    def play(self, job: Job) -> NegotiationRecord:
        """One negotiation, deterministic for the job."""
        return play(
            job.scenario(),
            _factory(self.resolver, job.buyer),
            _factory(self.resolver, job.seller),
            names=(job.buyer, job.seller),
            rules=self.rules,
            seed=job.seed,
        )

    def __call__(self, jobs: Sequence[Job]) -> list[SerializedRecord]:
        # Serialised here, in the worker: the driver only writes rows.
        return [SerializedRecord.of(self.play(job)) for job in jobs]


class Backend(Protocol):
    """Runs jobs and yields each with its serialised record as it finishes, in any order."""

    def run(
        self, jobs: Sequence[Job], player: ChunkPlayer
    ) -> Iterator[tuple[Job, SerializedRecord]]:
        """Play every job. Closing the iterator early stops the work still queued."""
        ...


class SerialBackend:
    """Plays jobs one after another in the calling process."""

    def run(
        self, jobs: Sequence[Job], player: ChunkPlayer
    ) -> Iterator[tuple[Job, SerializedRecord]]:
        """Play every job, in order."""
        for job in jobs:
            yield job, SerializedRecord.of(player.play(job))


def chunked(jobs: Sequence[Job], workers: int, size: int | None = None) -> list[list[Job]]:
    """Jobs in chunks: big enough to amortise the round trip, small enough to balance load."""
    if size is None:
        size = max(1, min(50, len(jobs) // (workers * 8)))
    return [list(jobs[i : i + size]) for i in range(0, len(jobs), size)]


def _context() -> multiprocessing.context.BaseContext:
    # Fork is fast and needs no ``if __name__ == "__main__"`` guard in the user's script, but is
    # unsafe in a process that runs threads (an event loop's workers, Ray's): use forkserver then.
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group: only the driver handles it (and stops the pool).
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@dataclass(frozen=True, slots=True)
class ProcessBackend:
    """Plays chunks of jobs in ``workers`` processes; at most a few chunks per worker queued."""

    workers: int
    chunk_size: int | None = None

    def run(
        self, jobs: Sequence[Job], player: ChunkPlayer
    ) -> Iterator[tuple[Job, SerializedRecord]]:
        """Play every job; results arrive a chunk at a time."""
        chunks = iter(chunked(jobs, self.workers, self.chunk_size))
        pool = ProcessPoolExecutor(self.workers, mp_context=_context(), initializer=_ignore_sigint)
        running: dict[Future[list[SerializedRecord]], list[Job]] = {}
        try:
            while True:
                while len(running) < 3 * self.workers and (chunk := next(chunks, None)):
                    running[pool.submit(player, chunk)] = chunk
                if not running:
                    return
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    yield from zip(running.pop(future), future.result(), strict=True)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _play_chunk(player: ChunkPlayer, jobs: list[Job]) -> list[SerializedRecord]:
    return player(jobs)


@dataclass(frozen=True, slots=True)
class RayBackend:
    """Plays chunks of jobs as Ray tasks. Connects to ``address`` (None: the running Ray, or a
    new local one with ``num_cpus``); a Ray it started itself is shut down at the end."""

    address: str | None = None
    num_cpus: int | None = None
    chunk_size: int | None = None

    def run(
        self, jobs: Sequence[Job], player: ChunkPlayer
    ) -> Iterator[tuple[Job, SerializedRecord]]:
        """Play every job; results arrive a chunk at a time."""
        import ray  # optional dependency: imported only when this backend runs

        started = not ray.is_initialized()
        if started:
            ray.init(
                address=self.address,
                num_cpus=self.num_cpus,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.ERROR,  # no start-up chatter on the driver's stderr
            )
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        remote = ray.remote(_play_chunk)
        player_ref = ray.put(player)
        chunks = iter(chunked(jobs, workers, self.chunk_size))
        running: dict[Any, list[Job]] = {}
        try:
            while True:
                while len(running) < 3 * workers and (chunk := next(chunks, None)):
                    running[remote.remote(player_ref, chunk)] = chunk
                if not running:
                    return
                done, _ = ray.wait(list(running), num_returns=1)
                for ref in done:
                    yield from zip(running.pop(ref), ray.get(ref), strict=True)
        finally:
            for ref in running:
                ray.cancel(ref)
            if started:
                ray.shutdown()


@dataclass(slots=True)
class Progress:
    """How far a run is: counts for a progress bar and the final summary."""

    total: int
    """Negotiations of the whole tournament."""
    skipped: int = 0
    """Already in the store when this session started."""
    done: int = 0
    """Played in this session."""
    deals: int = 0
    """Deals among those played in this session."""
    new_rows: int = 0
    """Rows this session wrote (fewer than ``done`` only if someone else wrote the same keys)."""

    @property
    def remaining(self) -> int:
        """Still to play."""
        return self.total - self.skipped - self.done


ProgressCallback = Callable[[Progress], None]


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
            raise ConfigMismatchError(run, _differences(recorded, wanted))
        if stored and recorded is None:
            raise ConfigMismatchError(run, ["the stored run has no recorded configuration"])
        self.store.set_run_config(run, wanted, replace=True)
        jobs = [job for job in self.config.jobs(run) if job.key not in stored]
        self.progress = Progress(total=self.progress.total, skipped=self.progress.total - len(jobs))
        return jobs

    def save(self, job: Job, row: SerializedRecord) -> None:
        """Write one finished negotiation (committed at once) and count it."""
        added = self.store.add_serialized(job.key, row, run=job.run, extra=job.extra())
        self.progress.done += 1
        self.progress.new_rows += added
        self.progress.deals += row.status == "deal"

    def run(
        self,
        resolver: Resolver,
        *,
        backend: Backend | None = None,
        resume: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> Progress:
        """Play every pending job on ``backend`` (default: serial), writing each as it arrives."""
        jobs = self.pending(resume=resume)
        player = ChunkPlayer(resolver, self.config.rules)
        results = (backend or SerialBackend()).run(jobs, player)
        try:
            for job, row in results:
                self.save(job, row)
                if on_progress is not None:
                    on_progress(self.progress)
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()
        return self.progress

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
        limiter = anyio.CapacityLimiter(limit)

        async def one(job: Job) -> None:
            try:
                record = await play_job(job)
            finally:
                limiter.release_on_behalf_of(job)
            self.save(job, SerializedRecord.of(record))
            if on_progress is not None:
                on_progress(self.progress)

        async with anyio.create_task_group() as group:
            for job in jobs:
                await limiter.acquire_on_behalf_of(job)
                group.start_soon(one, job)
        return self.progress


def _differences(recorded: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    return [
        f"{name}: stored {recorded.get(name)!r}, asked {wanted.get(name)!r}"
        for name in sorted(set(recorded) | set(wanted))
        if recorded.get(name) != wanted.get(name)
    ]

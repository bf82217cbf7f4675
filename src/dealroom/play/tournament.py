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

How jobs run:

    SerialBackend    scripted jobs in the driver's process, one at a time
    ProcessBackend   scripted jobs in worker processes, in chunks (they are CPU-bound)
    RayBackend       every job as tasks on a Ray cluster (``pip install dealroom[ray]``); seat
                     jobs run concurrently inside each task and are stored as their chunk returns

Locally, seat jobs (I/O-bound) run in the driver's event loop after the scripted ones: at most
``SeatLimits.concurrency`` at once, and at most each endpoint's own limit on each endpoint
(``Player.endpoint``). A ``Budget`` stops a run cleanly; its rule is in its docstring.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import multiprocessing
import multiprocessing.context
import os
import signal
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio

from dealroom.engine.match import play
from dealroom.play._orphans import end_with_driver, fate_shared
from dealroom.play.players import Player, ScriptedPlayer, close_players
from dealroom.play.registry import resolve_player
from dealroom.protocol import DEFAULT_RULES, TIERS, AgentFactory, Role, Rules, Scenario, Tier
from dealroom.protocol.errors import DealroomError
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Secret, Seed, seed_from_json, seed_json
from dealroom.store import paid as paid_calls
from dealroom.store.results import ResultsStore, SerializedRecord

Resolver = Callable[[str], Player]
"""Turns an agent spec into a player (default: ``dealroom.play.registry.resolve_player``). It
must be picklable (a module-level function, or an instance of a module-level class) for the
process and Ray backends."""

AsyncPlay = Callable[["Job"], Awaitable[NegotiationRecord]]
"""Plays one job asynchronously (for agents that wait on I/O)."""

DEFAULT_RUN = "tournament"


class TournamentError(DealroomError):
    """A tournament that cannot start: a bad configuration, or a store that disagrees with it."""

    kind = "tournament"


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


@dataclass(frozen=True, slots=True)
class Job:
    """One negotiation of a tournament."""

    run: str
    buyer: str
    seller: str
    tier: Tier
    index: int
    seed: Seed

    @property
    def key(self) -> str:
        """The store key, the same on every run of the same configuration."""
        return f"{self.run}/{self.tier}/{self.index:05d}/{self.buyer}/{self.seller}"

    def scenario(self) -> Scenario:
        """The job's scenario: the same for every pairing (common random numbers)."""
        return scenario_at(self.seed, self.index, self.tier)

    def extra(self) -> dict[str, Any]:
        """What the store keeps beside the record, for replays (the seed is in the run's config)."""
        return {"index": self.index}


@dataclass(frozen=True, slots=True)
class Played:
    """A finished job as the driver stores it: the serialised record and what its players
    reported (``players`` by role, ``errors`` by role; empty for two scripted seats)."""

    row: SerializedRecord
    extra: dict[str, Any] = field(default_factory=dict[str, Any])


@functools.lru_cache(maxsize=256)
def _scripted(resolver: Resolver, spec: str) -> AgentFactory | None:
    # Once per spec and process: factories are closures, so each worker resolves its own.
    player = resolver(spec)
    return player.factory if isinstance(player, ScriptedPlayer) else None


DEFAULT_SEAT_CONCURRENCY = 16


@dataclass(frozen=True, slots=True)
class ChunkPlayer:
    """Plays a chunk of jobs in whatever process it lands in (picklable)."""

    resolver: Resolver = resolve_player
    rules: Rules = DEFAULT_RULES
    concurrency: int = DEFAULT_SEAT_CONCURRENCY
    """Seat jobs of one chunk in flight at once (Ray tasks)."""
    paid_log: Path | None = None
    """Where each model call is journaled as it returns (``dealroom.store.paid``)."""

    def is_scripted(self, job: Job) -> bool:
        """Both seats are scripted: the job plays in the engine."""
        return all(_scripted(self.resolver, spec) is not None for spec in (job.buyer, job.seller))

    def play(self, job: Job) -> NegotiationRecord:
        """One scripted negotiation, deterministic for the job."""
        buyer, seller = _scripted(self.resolver, job.buyer), _scripted(self.resolver, job.seller)
        if buyer is None or seller is None:
            raise TournamentError(f"{job.key}: a seat player cannot play in the engine")
        return play(
            job.scenario(),
            buyer,
            seller,
            names=(job.buyer, job.seller),
            rules=self.rules,
            seed=job.seed,
        )

    async def play_seated(self, job: Job, players: Mapping[str, Player]) -> Played:
        """One negotiation through the seats (``players`` by spec)."""
        from dealroom.play.runner import play_match  # the MCP stack: only for seat jobs

        attempt = uuid.uuid4().hex
        log, specs = self.paid_log, {"buyer": job.buyer, "seller": job.seller}

        def paid(role: Role, usage: Mapping[str, Any]) -> None:
            if log is not None:
                line = {"run": job.run, "key": job.key, "attempt": attempt, "role": role}
                paid_calls.append(log, {**line, "agent": specs[role], **usage})

        result = await play_match(
            job.scenario(),
            players[job.buyer],
            players[job.seller],
            rules=self.rules,
            seed=job.seed,
            on_model_call=paid,
        )
        return Played(SerializedRecord.of(result.record), {**result.extra, "attempt": attempt})

    def __call__(self, jobs: Sequence[Job]) -> list[Played]:
        # Serialised here, in the worker: the driver only writes rows.
        scripted = [job for job in jobs if self.is_scripted(job)]
        out = {job.key: Played(SerializedRecord.of(self.play(job))) for job in scripted}
        seated = [job for job in jobs if job.key not in out]
        if seated:
            out.update(anyio.run(self._play_all_seated, seated))
        return [out[job.key] for job in jobs]

    async def _play_all_seated(self, jobs: list[Job]) -> dict[str, Played]:
        # Players are built in the task's own event loop (their HTTP clients belong to it).
        players = build_players(self.resolver, jobs)
        limiters = endpoint_limiters(players)
        shared = anyio.CapacityLimiter(self.concurrency)
        out: dict[str, Played] = {}

        async def one(job: Job) -> None:
            async with contextlib.AsyncExitStack() as stack:
                for limiter in [*limiters(job), shared]:  # the same order as in the driver
                    await stack.enter_async_context(limiter)
                out[job.key] = await self.play_seated(job, players)

        try:
            async with anyio.create_task_group() as group:
                for job in jobs:
                    group.start_soon(one, job)
        finally:
            await close_players(players.values())
        return out


def build_players(resolver: Resolver, jobs: Iterable[Job]) -> dict[str, Player]:
    """One player per spec the jobs name, shared by all its negotiations (an LLM's HTTP client
    and its kept-alive connections are built once, not once per negotiation)."""
    specs = dict.fromkeys(spec for job in jobs for spec in (job.buyer, job.seller))
    return {spec: resolver(spec) for spec in specs}


def endpoint_limiters(
    players: Mapping[str, Player],
) -> Callable[[Job], list[anyio.CapacityLimiter]]:
    """The endpoint slots a job takes (one limiter per endpoint its players call, within the
    endpoint's ``concurrency``), in a fixed order so that no two jobs can deadlock."""
    endpoints: dict[str, anyio.CapacityLimiter] = {}
    for seat in players.values():
        if (endpoint := getattr(seat, "endpoint", None)) is not None:
            endpoints.setdefault(endpoint.key, anyio.CapacityLimiter(endpoint.concurrency))

    def limiters(job: Job) -> list[anyio.CapacityLimiter]:
        keys = {
            endpoint.key
            for spec in (job.buyer, job.seller)
            if (endpoint := getattr(players[spec], "endpoint", None)) is not None
        }
        return [endpoints[key] for key in sorted(keys)]

    return limiters


Stop = Callable[[], bool]
"""Asked before each new piece of work starts: true once the run must start nothing more."""


def never() -> bool:
    """The default ``Stop``: play everything."""
    return False


class Backend(Protocol):
    """Runs jobs and yields each with its serialised record as it finishes, in any order."""

    plays_seats: bool
    """True if it also runs seat jobs (else the driver plays them in its event loop)."""

    def run(
        self, jobs: Sequence[Job], player: ChunkPlayer, stop: Stop = never
    ) -> Iterator[tuple[Job, Played]]:
        """Play every job. Once ``stop()`` is true no new work starts, and the work already
        started is still yielded (a budget stop loses nothing that was paid for). Closing the
        iterator early stops the work still queued."""
        ...


class SerialBackend:
    """Plays scripted jobs one after another in the calling process."""

    plays_seats = False

    def run(
        self, jobs: Sequence[Job], player: ChunkPlayer, stop: Stop = never
    ) -> Iterator[tuple[Job, Played]]:
        """Play every job, in order."""
        for job in jobs:
            if stop():
                return
            yield job, Played(SerializedRecord.of(player.play(job)))


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


def _start_worker(driver: int) -> None:
    # Ctrl-C reaches the whole process group: only the driver handles it (and stops the pool).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_with_driver(driver)  # and a killed driver leaves no worker behind


@dataclass(frozen=True, slots=True)
class ProcessBackend:
    """Plays chunks of scripted jobs in ``workers`` processes; at most a few chunks per worker
    queued."""

    workers: int
    chunk_size: int | None = None
    plays_seats = False

    def run(
        self, jobs: Sequence[Job], player: ChunkPlayer, stop: Stop = never
    ) -> Iterator[tuple[Job, Played]]:
        """Play every job; results arrive a chunk at a time."""
        chunks = iter(chunked(jobs, self.workers, self.chunk_size))
        pool = ProcessPoolExecutor(
            self.workers,
            mp_context=_context(),
            initializer=_start_worker,
            initargs=(os.getpid(),),
        )
        running: dict[Future[list[Played]], list[Job]] = {}
        try:
            while True:
                while (
                    len(running) < 3 * self.workers and not stop() and (chunk := next(chunks, None))
                ):
                    running[pool.submit(player, chunk)] = chunk
                if not running:
                    return
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    yield from zip(running.pop(future), future.result(), strict=True)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _play_chunk(player: ChunkPlayer, jobs: list[Job]) -> list[Played]:
    return player(jobs)


@dataclass(frozen=True, slots=True)
class RayBackend:
    """Plays chunks of jobs as Ray tasks. Connects to ``address`` (None: the running Ray, or a
    new local one with ``num_cpus``); a Ray it started itself is shut down at the end. Seat jobs
    run ``ChunkPlayer.concurrency`` at a time inside each task, in chunks of that size, within
    each endpoint's limit per task (each task one driver of the endpoints, with its own players
    and event loop: an endpoint may see tasks in flight x its limit), and are stored as their
    chunk returns."""

    address: str | None = None
    num_cpus: int | None = None
    chunk_size: int | None = None
    plays_seats = True

    def run(
        self, jobs: Sequence[Job], player: ChunkPlayer, stop: Stop = never
    ) -> Iterator[tuple[Job, Played]]:
        """Play every job; results arrive a chunk at a time."""
        import ray  # optional dependency: imported only when this backend runs

        cluster = contextlib.ExitStack()
        if not ray.is_initialized():  # a Ray started here ends here, or with this process

            def start() -> None:
                ray.init(
                    address=self.address,
                    num_cpus=self.num_cpus,
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level=logging.ERROR,  # no start-up chatter on the driver's stderr
                )

            cluster.enter_context(fate_shared(start, ray.shutdown))
        running: dict[Any, list[Job]] = {}
        try:
            workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
            remote = ray.remote(_play_chunk)
            player_ref = ray.put(player)
            scripted = [job for job in jobs if player.is_scripted(job)]
            seated = [job for job in jobs if not player.is_scripted(job)]
            chunks = itertools.chain(
                chunked(scripted, workers, self.chunk_size),
                chunked(seated, workers, self.chunk_size or player.concurrency),
            )
            while True:
                while len(running) < 3 * workers and not stop() and (chunk := next(chunks, None)):
                    running[remote.remote(player_ref, chunk)] = chunk
                if not running:
                    return
                done, _ = ray.wait(list(running), num_returns=1)
                for ref in done:
                    yield from zip(running.pop(ref), ray.get(ref), strict=True)
        finally:
            for ref in running:
                ray.cancel(ref)
            cluster.close()


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
    failures: int = 0
    """Negotiations of this session in which a player failed (its error is stored)."""
    requests: int = 0
    """Model requests of this session's negotiations (successful calls and failed attempts)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    """Cost of this session's negotiations (seats without prices count nothing)."""
    stopped: str | None = None
    """Why the run stopped before playing every pending negotiation (a budget), else None."""

    @property
    def remaining(self) -> int:
        """Still to play."""
        return self.total - self.skipped - self.done

    def count(self, played: Played) -> None:
        """Add one finished negotiation."""
        self.done += 1
        self.deals += played.row.status == "deal"
        self.failures += bool(played.extra.get("errors"))
        for data in played.extra.get("players", {}).values():
            self.requests += int(data.get("model_calls", 0)) + int(data.get("failed_attempts", 0))
            self.input_tokens += int(data.get("input_tokens", 0))
            self.output_tokens += int(data.get("output_tokens", 0))
            self.cost_usd += float(data.get("cost_usd") or 0.0)


ProgressCallback = Callable[[Progress], None]


@dataclass(frozen=True, slots=True)
class Budget:
    """What one session (one ``run``) may spend on models.

    The rule: before each negotiation starts, the requests (model calls, failed attempts
    included) and the cost of the negotiations this session has finished are added up; once
    either reaches its limit, no new negotiation starts, those in flight finish and are stored,
    and the run returns with ``Progress.stopped`` set. So a run overshoots by at most what the
    negotiations in flight spend. On a backend that plays seats (Ray) the unit is a task: the
    check is made as each task returns, no new task starts once the limit is reached, and the
    tasks in flight finish and are stored. A resumed run is a new session with its own budget:
    it plays on past the point where the last one stopped.
    """

    max_cost_usd: float | None = None
    max_requests: int | None = None

    def reached(self, progress: Progress) -> str | None:
        """Why no new negotiation may start, or None."""
        if self.max_cost_usd is not None and progress.cost_usd >= self.max_cost_usd:
            return f"the cost limit of ${self.max_cost_usd:g} was reached"
        if self.max_requests is not None and progress.requests >= self.max_requests:
            return f"the limit of {self.max_requests:,} model calls was reached"
        return None


NO_BUDGET = Budget()


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
        import uvloop  # noqa: F401
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


def _differences(recorded: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    return [
        # Secrets are not echoed: an error line may end up where a seat can read it.
        "secret: the stored and the asked secret differ"
        if name == "secret"
        else f"{name}: stored {recorded.get(name)!r}, asked {wanted.get(name)!r}"
        for name in sorted(set(recorded) | set(wanted))
        if recorded.get(name) != wanted.get(name)
    ]

"""A tournament's unit of work: the job (one negotiation, keyed the same on every run of the
same configuration), what a finished one carries (``Played``), and ``ChunkPlayer``, which plays
a chunk of jobs in whatever process it lands in: scripted pairs in the engine, seat players
(an LLM, a person) through the seats, each endpoint within its own concurrency.
"""

from __future__ import annotations

import contextlib
import functools
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from dealroom.engine.match import play
from dealroom.play.players import Player, ScriptedPlayer, close_players
from dealroom.play.registry import resolve_player
from dealroom.protocol import DEFAULT_RULES, AgentFactory, Role, Rules, Scenario, Tier
from dealroom.protocol.errors import DealroomError
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Seed
from dealroom.store import paid as paid_calls
from dealroom.store.results import SerializedRecord

Resolver = Callable[[str], Player]
"""Turns an agent spec into a player (default: ``dealroom.play.registry.resolve_player``). It
must be picklable (a module-level function, or an instance of a module-level class) for the
process and Ray backends."""


class TournamentError(DealroomError):
    """A tournament that cannot start: a bad configuration, or a store that disagrees with it."""

    kind = "tournament"


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

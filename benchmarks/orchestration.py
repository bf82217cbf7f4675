"""Orchestration efficiency: a tournament of LLM seats against a fake endpoint with fixed latency.

    python benchmarks/orchestration.py [--latency 1] [--concurrency 16] [--per-pair 4]

The model is a loopback OpenAI-compatible endpoint (``tests/fake_openai.py``) that answers every
chat completion after exactly ``--latency`` seconds with scripted tool calls (offer the list
price and wait; accept the other side's offer from wake ``--accept-from-wake`` on).
``llm:fake`` plays ``hardliner`` in both seats and all tiers
(``dealroom.play.tournament.Tournament.run_async``, at most ``--concurrency`` negotiations at
once, each through the MCP seats as ``dealroom match`` plays them, every result written to a
SQLite store).

The ideal wall time is the time the model calls alone would take at that concurrency: each
negotiation lasts (its model calls x latency), the LLM seat's calls being one after another, and
the negotiations are list-scheduled on ``--concurrency`` slots in the tournament's order.
Efficiency = ideal / actual (1.0: the harness adds nothing to the model's own latency).
"""

from __future__ import annotations

import argparse
import heapq
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

from dealroom.agents import resolve
from dealroom.agents.llm import LLMPlayer, LLMSettings, RetryPolicy
from dealroom.play.players import Player, ScriptedPlayer
from dealroom.play.runner import play_match
from dealroom.play.tournament import Job, Tournament, TournamentConfig
from dealroom.protocol.record import NegotiationRecord
from dealroom.store.results import ResultsStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fake_openai import negotiator, serve, with_latency

LLM = "llm:fake"
HOUSE = "hardliner"
TARGET = 0.9


def ideal_makespan(durations: list[float], slots: int) -> float:
    """Jobs started in order, each on the first free slot: when the last one ends."""
    free = [0.0] * slots
    end = 0.0
    for duration in durations:
        start = heapq.heappop(free)
        heapq.heappush(free, start + duration)
        end = max(end, start + duration)
    return end


@dataclass(frozen=True)
class Efficiency:
    """One measurement."""

    negotiations: int
    concurrency: int
    latency: float
    model_calls: int
    actual_s: float
    ideal_s: float
    deals: int
    cpu_s: float
    """CPU time of this process while playing (the endpoint's threads included)."""

    @property
    def efficiency(self) -> float:
        return self.ideal_s / self.actual_s


def run(
    *,
    latency: float = 1.0,
    concurrency: int = 16,
    per_pair: int = 4,
    accept_from_wake: int = 4,
) -> Efficiency:
    """Play the tournament once; the figures."""
    calls: dict[str, int] = {}
    order: list[str] = []
    settings = LLMSettings(retry=RetryPolicy(attempts=1, timeout_s=30 + 10 * latency))
    config = TournamentConfig(agents=(LLM, HOUSE), per_pair=per_pair)
    with serve(with_latency(negotiator(accept_from_wake=accept_from_wake), latency)) as fake:
        # One player per spec for the whole tournament, as a driver would (one HTTP client).
        llm = LLMPlayer.from_spec(LLM, base_url=fake.base_url, api_key="fake", settings=settings)
        seats: dict[str, Player] = {LLM: llm, HOUSE: ScriptedPlayer(resolve(HOUSE), HOUSE)}

        async def play_job(job: Job) -> NegotiationRecord:
            order.append(job.key)
            result = await play_match(
                job.scenario(), seats[job.buyer], seats[job.seller], seed=job.seed
            )
            if result.errors:
                raise RuntimeError(f"{job.key}: {result.errors}")
            players = result.extra["players"].values()
            calls[job.key] = sum(int(p.get("model_calls", 0)) for p in players)
            return result.record

        with tempfile.TemporaryDirectory() as tmp, ResultsStore(Path(tmp) / "llm.db") as store:
            tournament = Tournament(config, store)
            start, cpu = time.perf_counter(), time.process_time()
            progress = anyio.run(
                lambda: tournament.run_async(play_job, limit=concurrency),
                backend_options={"use_uvloop": True},
            )
            actual = time.perf_counter() - start
            cpu_s = time.process_time() - cpu
        if len(fake.requests) != sum(calls.values()):
            raise RuntimeError(f"{len(fake.requests)} requests, {sum(calls.values())} counted")
    ideal = ideal_makespan([calls[key] * latency for key in order], concurrency)
    return Efficiency(
        negotiations=progress.done,
        concurrency=concurrency,
        latency=latency,
        model_calls=sum(calls.values()),
        actual_s=actual,
        ideal_s=ideal,
        deals=progress.deals,
        cpu_s=cpu_s,
    )


def report(result: Efficiency) -> None:
    """Print the ratio and what it was measured on."""
    print(
        f"orchestration: {result.negotiations} LLM negotiations ({LLM} vs hardliner, both seats), "
        f"concurrency {result.concurrency}, model latency {result.latency:g} s"
    )
    print(
        f"  model calls {result.model_calls} ({result.model_calls / result.negotiations:.1f} per "
        f"negotiation), deals {result.deals}; CPU {result.cpu_s:.1f} s "
        f"({1000 * result.cpu_s / result.negotiations:.0f} ms per negotiation, "
        f"{1000 * result.cpu_s / result.model_calls:.0f} ms per model call)"
    )
    print(
        f"  wall time {result.actual_s:.2f} s, ideal {result.ideal_s:.2f} s: efficiency "
        f"{result.efficiency:.3f} (ideal / actual; target >= {TARGET:g}); actual / ideal "
        f"{result.actual_s / result.ideal_s:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model call")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--per-pair", type=int, default=4, help="negotiations per pair and tier")
    parser.add_argument("--accept-from-wake", type=int, default=4, help="model calls per seat")
    args = parser.parse_args()
    from dealroom._logging import configure_logging

    configure_logging("WARNING")
    report(
        run(
            latency=args.latency,
            concurrency=args.concurrency,
            per_pair=args.per_pair,
            accept_from_wake=args.accept_from_wake,
        )
    )


if __name__ == "__main__":
    main()

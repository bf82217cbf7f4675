"""Orchestration: an LLM round robin against a fake endpoint with a fixed latency.

    python benchmarks/orchestration.py [--negotiations 500] [--concurrency 16,64,256]
                                       [--latency 1]

The model is a loopback OpenAI-compatible endpoint (``tests/fake_openai.py``) **in its own
process** (so its CPU is not counted as the harness's), answering every chat completion
``--latency`` seconds after the request arrived (keep-alive, TCP_NODELAY) with scripted tool
calls (offer the list price and wait; accept the other side's offer from wake
``--accept-from-wake`` on). ``llm:fake`` plays ``hardliner`` in
both seats and all tiers, the way ``dealroom tournament --agents llm:fake,hardliner`` plays it:
``Tournament.run`` with the CLI's resolver, every negotiation through the seats and stored with
its usage in a SQLite store, at most ``concurrency`` negotiations in flight.

Harness CPU per model call is this process's CPU time over the model calls made. The ideal wall
time is what the model calls alone take at that concurrency: each negotiation lasts (its model
calls x latency), the LLM seat's calls being one after another, list-scheduled on
``concurrency`` slots in the tournament's order. Efficiency = ideal / actual.

Beside each run, the **model client's floor**: the CPU per call of the seat's chat-completions
client alone (``dealroom.agents._llm_chat``: the request body, aiohttp, ``json.loads``), making
a seat's first request (its briefing and tools) to the same endpoint at the same
concurrency, with no seat and no tournament; what the harness spends above it is the seat, the
room and the tournament. For comparison, the same floor of the Agents SDK's chat model (the
OpenAI client, httpx2, the SDK's converters), which the seat drove before.
"""

from __future__ import annotations

import argparse
import heapq
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
import openai
from agents.models.interface import ModelTracing

from agents import ModelSettings, OpenAIChatCompletionsModel
from dealroom.agents import PlayerOptions
from dealroom.agents._llm_chat import ChatCompletions, Sampling
from dealroom.agents._llm_sdk import function_tools
from dealroom.agents.lineup import SpecResolver
from dealroom.agents.llm import LLMSettings, RetryPolicy
from dealroom.play.registry import resolve
from dealroom.play.tournament import Tournament, TournamentConfig
from dealroom.protocol import DEFAULT_RULES, TIERS, model_seat
from dealroom.protocol.generator import scenario_at
from dealroom.server.room import Room
from dealroom.server.room_settings import House, RoomSettings
from dealroom.server.seat import RoomSeat
from dealroom.store.results import ResultsStore

TESTS = Path(__file__).resolve().parent.parent / "tests"
LLM = "llm:fake"
HOUSE = "hardliner"
CPU_TARGET_MS = 3.0
EFFICIENCY_TARGET = 0.95
ENDPOINT = """
import sys, threading
sys.path.insert(0, {tests!r})
from fake_openai import negotiator, serve, with_latency
brain = with_latency(negotiator(accept_from_wake={wake}), {latency})
with serve(brain, keep_alive=True) as fake:
    print(fake.base_url, flush=True)
    sys.stdin.read()  # until the driver closes it
"""


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
    """CPU time of the driver (the harness) while playing; the endpoint runs elsewhere."""
    floor_ms: float
    """CPU per call of the seat's model client alone, same endpoint and concurrency."""
    sdk_floor_ms: float
    """The same for the Agents SDK's chat model."""

    @property
    def efficiency(self) -> float:
        return self.ideal_s / self.actual_s

    @property
    def cpu_ms_per_call(self) -> float:
        return 1000 * self.cpu_s / self.model_calls


@dataclass
class Endpoint:
    """The fake endpoint, in its own process."""

    process: subprocess.Popen[str]
    base_url: str

    @classmethod
    def start(cls, latency: float, accept_from_wake: int) -> Endpoint:
        code = ENDPOINT.format(tests=str(TESTS), wake=accept_from_wake, latency=latency)
        process = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert process.stdout is not None
        return cls(process, process.stdout.readline().strip())

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


def run(
    endpoint: Endpoint | None = None,
    *,
    negotiations: int = 500,
    concurrency: int = 64,
    latency: float = 1.0,
    accept_from_wake: int = 4,
) -> Efficiency:
    """Play the round robin once, then measure the floor; the figures. Without ``endpoint``,
    one is started (with ``latency`` and ``accept_from_wake``) and stopped for this run."""
    if endpoint is None:
        endpoint = Endpoint.start(latency, accept_from_wake)
        try:
            return run(
                endpoint, negotiations=negotiations, concurrency=concurrency, latency=latency
            )
        finally:
            endpoint.stop()
    per_pair = max(1, math.ceil(negotiations / (2 * len(TIERS))))
    config = TournamentConfig(agents=(LLM, HOUSE), per_pair=per_pair)
    settings = LLMSettings(retry=RetryPolicy(attempts=1, timeout_s=30 + 10 * latency))
    options = PlayerOptions(base_url=endpoint.base_url, api_key="fake", settings=settings)
    with tempfile.TemporaryDirectory() as tmp, ResultsStore(Path(tmp) / "llm.db") as store:
        tournament = Tournament(config, store)
        start, cpu = time.perf_counter(), time.process_time()
        progress = tournament.run(SpecResolver(options), concurrency=concurrency)
        actual = time.perf_counter() - start
        cpu_s = time.process_time() - cpu
        calls = {
            row.key: sum(p.get("model_calls", 0) for p in row.extra["players"].values())
            for row in store.iter()
        }
        if failed := [row.key for row in store.iter() if row.extra.get("errors")]:
            raise RuntimeError(f"{len(failed)} negotiations failed, e.g. {failed[0]}")
    durations = [calls[job.key] * latency for job in config.jobs()]
    floor_calls = min(sum(calls.values()), 8 * concurrency)
    return Efficiency(
        negotiations=progress.done,
        concurrency=concurrency,
        latency=latency,
        model_calls=sum(calls.values()),
        actual_s=actual,
        ideal_s=ideal_makespan(durations, concurrency),
        deals=progress.deals,
        cpu_s=cpu_s,
        floor_ms=model_floor(endpoint.base_url, floor_calls, concurrency, settings),
        sdk_floor_ms=model_floor(endpoint.base_url, floor_calls, concurrency, settings, sdk=True),
    )


def model_floor(
    base_url: str, calls: int, concurrency: int, settings: LLMSettings, *, sdk: bool = False
) -> float:
    """ms of CPU per call of the seat's model client alone (``sdk``: of the Agents SDK's chat
    model): a seat's first request, ``calls`` times, ``concurrency`` at once, in the event loop
    the tournament uses."""
    room = Room(
        "floor",
        RoomSettings(
            scenarios=lambda n: scenario_at(0, n, "mid") if n == 0 else None,
            occupants={"seller": House(HOUSE, resolve(HOUSE))},
            rules=DEFAULT_RULES,
        ),
    )
    del settings
    spent = 0.0

    async def main() -> None:
        nonlocal spent
        seat = RoomSeat(room, "buyer")
        tools = model_seat.tools(DEFAULT_RULES)
        briefing = await seat.briefing()
        client = ChatCompletions("fake", base_url=base_url, api_key="fake")
        openai_client = openai.AsyncOpenAI(base_url=base_url, api_key="fake")
        sdk_model = OpenAIChatCompletionsModel(model="fake", openai_client=openai_client)
        sdk_tools = function_tools(tools)
        limiter = anyio.CapacityLimiter(concurrency)

        async def one() -> None:
            async with limiter:
                if not sdk:
                    chat = client.conversation(tools, Sampling())
                    chat.add_user(briefing)
                    await chat.respond()
                    return
                await sdk_model.get_response(
                    None,
                    [{"role": "user", "content": briefing}],
                    ModelSettings(),
                    list(sdk_tools),
                    None,
                    [],
                    ModelTracing.DISABLED,
                    previous_response_id=None,
                    conversation_id=None,
                    prompt=None,
                )

        try:
            cpu = time.process_time()
            async with anyio.create_task_group() as group:
                for _ in range(calls):
                    group.start_soon(one)
            spent = time.process_time() - cpu
        finally:
            await client.close()
            await openai_client.close()

    anyio.run(main, backend_options={"use_uvloop": True})
    return 1000 * spent / calls


def report(result: Efficiency) -> None:
    """Print the figures and what they were measured on."""
    print(
        f"orchestration: {result.negotiations} LLM negotiations ({LLM} vs {HOUSE}, both seats), "
        f"concurrency {result.concurrency}, model latency {result.latency:g} s"
    )
    cpu_met = result.cpu_ms_per_call <= CPU_TARGET_MS
    print(
        f"  model calls {result.model_calls} ({result.model_calls / result.negotiations:.1f} per "
        f"negotiation), deals {result.deals}; harness CPU {result.cpu_s:.1f} s: "
        f"{result.cpu_ms_per_call:.1f} ms per model call (target <= {CPU_TARGET_MS:g}: "
        f"{'met' if cpu_met else 'missed'}); the model client alone: {result.floor_ms:.1f} ms "
        f"(the Agents SDK's chat model alone: {result.sdk_floor_ms:.1f} ms)"
    )
    verdict = ""
    if result.concurrency == 64:
        verdict = ": met" if result.efficiency >= EFFICIENCY_TARGET else ": missed"
    print(
        f"  wall time {result.actual_s:.2f} s, ideal {result.ideal_s:.2f} s: efficiency "
        f"{result.efficiency:.3f} (ideal / actual; target >= {EFFICIENCY_TARGET:g} at 64{verdict})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--negotiations", type=int, default=500)
    parser.add_argument("--concurrency", default="16,64,256", help="comma-separated")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model call")
    parser.add_argument("--accept-from-wake", type=int, default=4, help="model calls per seat")
    args = parser.parse_args()
    from dealroom._logging import configure_logging

    configure_logging("WARNING")
    print(f"load average at the start: {os.getloadavg()[0]:.1f} (2 cores shared with other work)")
    endpoint = Endpoint.start(args.latency, args.accept_from_wake)
    try:
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            report(
                run(
                    endpoint,
                    negotiations=args.negotiations,
                    concurrency=concurrency,
                    latency=args.latency,
                )
            )
            print(f"  load average: {os.getloadavg()[0]:.1f}")
    finally:
        endpoint.stop()


if __name__ == "__main__":
    main()

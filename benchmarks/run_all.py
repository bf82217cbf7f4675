"""Every benchmark, one after another, then every figure against its target.

    bash benchmarks/setup_negmas.sh      # once, for the side-by-side with NegMAS
    python benchmarks/run_all.py [--quick]

Runs: engine throughput side by side with NegMAS (``negmas_compare.py``), Gymnasium
``dealroom/Bargain-v0`` steps per second (``gym_steps.py``), stdio start-up against a bare MCP
server and the size of ``tools/list`` (``stdio_startup.py``), the 15,000-negotiation
tournament (``tournament.py``), MCP tool-call latency in memory and over loopback HTTP with 200
sessions (``mcp_latency.py``), the same session load on one process and on N workers behind a
front (``mcp_cluster.py``), memory per idle room (``memory.py``) and orchestration efficiency
of LLM seats against a fake endpoint (``orchestration.py``), and the honesty extractor's
precision and recall on its labelled corpus and held-out set (``honesty.py``). Each script also
runs alone, with more options, and each runs here in a fresh process of its own, as alone.
``--quick`` shortens the timed phases (about half the time; noisier figures).

Wall-clock figures depend on what else the machine runs: the load average is printed at the
start and the end, and the engine comparison is made on CPU time as well.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import anyio

import engine
import gym_steps
import honesty
import mcp_cluster
import mcp_latency
import memory
import negmas_compare
import orchestration
import stdio_startup
import tournament
from dealroom._logging import configure_logging


@dataclass(frozen=True)
class Figure:
    """One measured figure and its target."""

    name: str
    value: float | None
    target: str
    met: bool | None
    unit: str = ""
    note: str = ""

    def line(self) -> str:
        value = "not measured" if self.value is None else f"{self.value:,.2f}{self.unit}"
        verdict = {True: "met", False: "MISSED", None: "-"}[self.met]
        return f"  {self.name:<44} {value:>16}   target {self.target:<10} {verdict:<7} {self.note}"


def machine() -> str:
    one, five, _ = os.getloadavg()
    return (
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, load average "
        f"{one:.1f} (1 min) / {five:.1f} (5 min)"
    )


def section(title: str) -> None:
    print()
    print(f"== {title} " + "=" * max(0, 90 - len(title)))


def engine_vs_negmas(quick: bool) -> list[Figure]:
    comparison = negmas_compare.compare(seconds=3.0 if quick else 6.0)
    engine.report(comparison.dealroom, "boulware (buyer) vs conceder (seller), 300 scenarios")
    negmas_compare.report(comparison)
    ratio = comparison.ratio_cpu
    theirs = comparison.negmas
    note = f"dealroom {comparison.dealroom.cpu_rate:,.0f}/s"
    note += "" if theirs is None else f", NegMAS {theirs['cpu_rate']:,.0f}/s"
    bare = comparison.bare_rate
    if bare is not None and theirs is not None:
        note += f"; bare loop {bare:,.0f}/s ({bare / theirs['cpu_rate']:.0f}x)"
    target = negmas_compare.TARGET_RATIO
    met = None if ratio is None else ratio >= target
    return [Figure("engine vs NegMAS (per CPU second)", ratio, f">= {target:g}x", met, "x", note)]


def gymnasium_steps(quick: bool) -> list[Figure]:
    figures = gym_steps.measure(seconds=3.0 if quick else 6.0)
    gym_steps.report(figures)
    note = f"{figures.steps_per_episode:.1f} steps/episode, {figures.wall_rate:,.0f}/wall s"
    target = gym_steps.TARGET
    met = figures.cpu_rate >= target
    name = "Gymnasium steps per CPU second (one core)"
    return [Figure(name, figures.cpu_rate, f">= {target:,.0f}", met, "/s", note)]


def stdio_start(quick: bool) -> list[Figure]:
    figures = stdio_startup.measure(runs=6 if quick else 12)
    stdio_startup.report(figures)
    note = f"{figures.wall_ratio:.2f}x on wall time; dealroom serve vs a bare MCP server"
    ratio, target = figures.cpu_ratio, stdio_startup.TARGET_RATIO
    size, limit = figures.tools_bytes, stdio_startup.TARGET_TOOLS_BYTES
    return [
        Figure(
            "stdio start-up ratio (CPU to initialize)",
            ratio,
            f"<= {target:g}x",
            ratio <= target,
            "x",
            note,
        ),
        Figure(
            "tools/list reply size",
            size / 1000,
            f"<= {limit / 1000:g} KB",
            size <= limit,
            " KB",
            "8 tools, every output schema kept",
        ),
    ]


def tournament_throughput(quick: bool) -> list[Figure]:
    options = tournament.parser().parse_args(["--total", "3000" if quick else "15000"])
    played = tournament.run(options)
    note = f"{played['negotiations']:,.0f} negotiations"
    return [Figure("tournament negotiations/s (all CPUs)", played["rate"], "-", None, "/s", note)]


def mcp_latencies(quick: bool) -> list[Figure]:
    options = mcp_latency.parser().parse_args(
        ["--calls", "1000", "--seconds", "10", "--rates", "0.25,1"] if quick else []
    )
    try:
        latencies = anyio.run(mcp_latency.main, options)
    finally:
        mcp_latency.client_validation(True)
    p50, _ = mcp_latency.quantiles_ms(latencies["in memory"])
    figures = [Figure("in-memory tool call p50", p50, "< 1 ms", p50 < 1.0, " ms")]
    for label, samples in latencies.items():  # every open-loop row at full session count
        if f"{options.sessions} sessions" in label and "call/s each" in label:
            _, p99 = mcp_latency.quantiles_ms(samples)
            rate = label.split(", ")[-1]
            name = f"HTTP p99, {options.sessions} sessions, {rate}"
            figures.append(Figure(name, p99, "< 50 ms", p99 < 50.0, " ms"))
    return figures


def cluster_scaling(quick: bool) -> list[Figure]:
    options = mcp_cluster.parser().parse_args(["--seconds", "5"] if quick else [])
    rows = anyio.run(mcp_cluster.main, options)
    single, cluster = mcp_cluster.closed_loop(rows)
    ratio = cluster.calls_per_s / single.calls_per_s
    errors = sum(row.errors for row in rows)
    note = (
        f"{options.workers} workers {cluster.calls_per_s:,.0f} calls/s vs 1 process "
        f"{single.calls_per_s:,.0f} (closed loop, {options.sessions} sessions, {os.cpu_count()} "
        f"CPUs shared with the load generator); {errors} failed calls"
    )
    name = "HTTP beyond one process (N workers / 1)"
    return [Figure(name, ratio, "built, measured", errors == 0, "x", note)]


def room_memory(quick: bool) -> list[Figure]:
    rooms = memory.run(2000 if quick else 5000)
    memory.report(rooms)
    worst = max(rooms, key=lambda r: r.rss_per_room)
    note = f"{worst.kind}; {min(r.max_rooms_per_gib for r in rooms):,} rooms in 1 GiB"
    met = worst.rss_per_room <= memory.TARGET_BYTES
    kb = worst.rss_per_room / 1000
    return [Figure("memory per idle room (resident)", kb, "<= 100 KB", met, " KB", note)]


def orchestration_efficiency(quick: bool) -> list[Figure]:
    result = orchestration.run(negotiations=60 if quick else 500, concurrency=64)
    orchestration.report(result)
    note = f"concurrency {result.concurrency}, latency {result.latency:g} s"
    target = orchestration.EFFICIENCY_TARGET
    cpu_target = orchestration.CPU_TARGET_MS
    return [
        Figure(
            "orchestration efficiency (ideal / actual)",
            result.efficiency,
            f">= {target:g}",
            result.efficiency >= target,
            "",
            note,
        ),
        Figure(
            "harness CPU per model call",
            result.cpu_ms_per_call,
            f"<= {cpu_target:g} ms",
            result.cpu_ms_per_call <= cpu_target,
            " ms",
            note,
        ),
    ]


def honesty_extractor(quick: bool) -> list[Figure]:
    corpus = honesty.evaluate(honesty.load())
    heldout = honesty.evaluate(honesty.load(honesty.HELDOUT))
    honesty.report(corpus, "rule-based extractor, corpus")
    honesty.report(heldout, "held-out (never tuned on)")
    figures: list[Figure] = []
    for name, evaluation in (("corpus", corpus), ("held-out", heldout)):
        s = evaluation.overall
        note = f"{evaluation.messages} messages, {s.hits + s.misses} claims"
        for measure, value in (("precision", s.precision), ("recall", s.recall)):
            target = f">= {honesty.TARGET:g}" if name == "corpus" else "-"
            met = (value or 0) >= honesty.TARGET if name == "corpus" else None
            figures.append(Figure(f"honesty {measure} ({name})", value, target, met, "", note))
    return figures


SECTIONS: list[tuple[str, str, Callable[[bool], list[Figure]]]] = [
    ("engine throughput, side by side with NegMAS", "engine vs NegMAS", engine_vs_negmas),
    ("Gymnasium steps, linear policy vs linear", "Gymnasium steps/s", gymnasium_steps),
    ("stdio start-up and tools/list size", "stdio start-up", stdio_start),
    ("tournament throughput", "tournament negotiations/s", tournament_throughput),
    ("MCP tool-call latency", "MCP tool-call latency", mcp_latencies),
    ("HTTP beyond one process", "HTTP beyond one process", cluster_scaling),
    ("memory per idle room", "memory per idle room", room_memory),
    (
        "orchestration efficiency (LLM seats, fake endpoint)",
        "orchestration efficiency",
        orchestration_efficiency,
    ),
    ("honesty extractor on its labelled corpus", "honesty extractor", honesty_extractor),
]


def isolated(run: Callable[[bool], list[Figure]], quick: bool) -> list[Figure]:
    """``run(quick)`` in a fresh Python process: each benchmark starts from a clean heap, event
    loop and garbage collector, as it does alone, whatever the benchmarks before it left."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(_configured, run, quick).result()


def _configured(run: Callable[[bool], list[Figure]], quick: bool) -> list[Figure]:
    configure_logging("WARNING")
    try:
        return run(quick)
    finally:
        sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timed phases")
    args = parser.parse_args()
    configure_logging("WARNING")
    started = time.perf_counter()
    print(f"dealroom benchmarks: {machine()}")
    figures: list[Figure] = []
    failed = 0
    for title, name, run in SECTIONS:
        section(title)
        try:
            figures += isolated(run, args.quick)
        except Exception as exc:  # one broken benchmark must not hide the others' figures
            failed += 1
            traceback.print_exc()
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:120]
            figures.append(Figure(name, None, "-", None, note=f"failed: {reason}"))
        sys.stdout.flush()

    section("summary")
    for figure in figures:
        print(figure.line())
    print(f"  ({machine()}; {time.perf_counter() - started:.0f} s in all)")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()

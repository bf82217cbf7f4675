"""Tournament throughput: a ~15,000-negotiation round robin of every registered scripted agent.

    python benchmarks/tournament.py [--total 15000] [--concurrency N] [--keep FILE.db]

Every registered agent meets every other in both seats, in all three tiers, with ``per_pair``
chosen so the total is about ``--total``; results go to a fresh SQLite store as in
``dealroom tournament``. Prints wall time, negotiations per second, the time to build the
report from the store, and peak resident memory of the driver and of its worker processes.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

from dealroom.agents import entries
from dealroom.analysis.report import build_report, format_report
from dealroom.play.backends import ProcessBackend, SerialBackend
from dealroom.play.tournament import Tournament, TournamentConfig
from dealroom.protocol import TIERS
from dealroom.store.results import ResultsStore


def _peak_mib(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # kilobytes on Linux


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def load_note() -> str:
    """The machine's load: wall time means little on a busy machine; CPU time still does."""
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} over 1 / 5 min"


def parser() -> argparse.ArgumentParser:
    """The command line (``run_all`` parses its own defaults with it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", type=int, default=15_000)
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="write the store here (default: a temp file)")
    parser.add_argument("--report", action="store_true", help="print the report as well")
    return parser


def run(args: argparse.Namespace) -> dict[str, float]:
    """Play, store and report once; print the figures and return the main ones."""
    agents = tuple(entry.name for entry in entries())
    pairs = len(agents) * (len(agents) - 1)
    per_pair = max(1, round(args.total / (pairs * len(TIERS))))
    config = TournamentConfig(agents=agents, per_pair=per_pair, seed=args.seed)
    total = len(config.jobs())
    backend = ProcessBackend(args.concurrency) if args.concurrency > 1 else SerialBackend()

    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "bench.db"
        if path.exists():
            sys.exit(f"{path} exists; remove it or choose another --keep")
        print(
            f"tournament: {len(agents)} agents ({', '.join(agents)}), {pairs} ordered pairs x "
            f"{len(TIERS)} tiers x {per_pair} = {total:,} negotiations"
        )
        print(
            f"  machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, "
            f"concurrency {args.concurrency}"
        )
        with ResultsStore(path) as store:
            start = time.perf_counter()
            progress = Tournament(config, store).run(backend=backend)
            played = time.perf_counter() - start
            peak_play = _peak_mib(resource.RUSAGE_SELF)
            cpu_driver, cpu_workers = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
            size = path.stat().st_size + Path(f"{path}-wal").stat().st_size
            start = time.perf_counter()
            report = build_report((row.record for row in store.iter()), config=config.as_dict())
            reported = time.perf_counter() - start
        print(
            f"  played {progress.done:,} in {played:.1f} s: {progress.done / played:,.0f} "
            f"negotiations/s, deal rate {progress.deals / progress.done:.1%}"
        )
        print(f"  CPU time: workers {cpu_workers:.1f} s, driver {cpu_driver:.1f} s ({load_note()})")
        print(
            f"  store {size / 2**20:,.1f} MiB; report (1,000 bootstrap resamples) "
            f"in {reported:.1f} s"
        )
        print(
            f"  peak memory: driver {peak_play:,.0f} MiB while playing, "
            f"{_peak_mib(resource.RUSAGE_SELF):,.0f} MiB with the report; largest worker "
            f"{_peak_mib(resource.RUSAGE_CHILDREN):,.0f} MiB"
        )
        if args.report:
            print()
            print(format_report(report))
    return {
        "negotiations": progress.done,
        "seconds": played,
        "rate": progress.done / played,
        "cpu_s": cpu_workers + cpu_driver,
        "report_s": reported,
    }


def main() -> None:
    run(parser().parse_args())


if __name__ == "__main__":
    main()

"""HTTP beyond one process: the same session load on one server process and on N workers behind
a front (``dealroom serve --transport http --workers N``).

    python benchmarks/mcp_cluster.py [--workers 2] [--sessions 200] [--seconds 10] [--rate 1]

Each configuration gets ``--sessions`` clients, each in its own room against a house agent,
calling with ``mcp_latency``'s load generator (its agent's mix of tools, a raw JSON-RPC client):
first open loop at ``--rate`` calls per second each, then closed loop (every client back to
back: the saturation throughput). Client-observed calls per second and p50/p99 per
configuration, the CPU per call of the server (every server process together, front included,
read from /proc while the load runs) and of the load generator, and the ratio of the closed-loop
throughputs. The load generator is one process on the same machine: on a machine with few cores
it takes CPU from the server processes, and it can be what saturates first.
"""

from __future__ import annotations

import argparse
import gc
import os
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2

from mcp_latency import concurrent, create_rooms, http_server, quantiles_ms


@dataclass(frozen=True)
class Row:
    """One configuration under one load."""

    workers: int
    mode: str
    calls_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    cpu_ms_per_call: tuple[float, float] | None
    """Server CPU per call: the process serving the public address (one server, or the
    front), and its workers."""
    client_cpu_ms_per_call: float

    def line(self) -> str:
        where = "1 process" if self.workers == 1 else f"{self.workers} workers + front"
        return (
            f"  {where:<20} {self.mode:<16} {self.calls_per_s:8,.0f} calls/s   "
            f"p50 {self.p50_ms:7.2f} ms   p99 {self.p99_ms:8.2f} ms   {self.errors} failed calls"
            + f"   CPU/call: {self.cpu()}, client {self.client_cpu_ms_per_call:.2f} ms"
        )

    def cpu(self) -> str:
        """The server's CPU per call, in words."""
        if self.cpu_ms_per_call is None:
            return "server not measured"
        top, workers = self.cpu_ms_per_call
        if self.workers == 1:
            return f"server {top:.2f}"
        return f"front {top:.2f} + workers {workers:.2f}"


def server_cpu_s() -> tuple[float, float] | None:
    """CPU seconds used so far by the processes this one started (a server, or a front) and by
    theirs (a front's workers), from Linux /proc; None where there is no /proc."""
    tick = os.sysconf("SC_CLK_TCK")

    def cpu(pid: int) -> tuple[float, list[int]]:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:  # it just exited
            return 0.0, []
        return (int(fields[11]) + int(fields[12])) / tick, [int(c) for c in children]

    def tree(pid: int) -> float:
        own, children = cpu(pid)
        return own + sum(tree(child) for child in children)

    me = os.getpid()
    mine = Path(f"/proc/{me}/task/{me}/children")
    if not mine.exists():
        return None
    top = [cpu(int(child)) for child in mine.read_text().split()]
    return sum(own for own, _ in top), sum(tree(c) for _, cs in top for c in cs)


def _factory() -> Callable[..., httpx2.AsyncClient]:
    tls = ssl.create_default_context()

    def factory(**kwargs: Any) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(verify=tls, timeout=httpx2.Timeout(60.0), **kwargs)

    return factory


async def measure(workers: int, sessions: int, seconds: float, rate: float) -> list[Row]:
    """Both loads on one configuration (its own fresh server and store)."""
    factory = _factory()
    rows: list[Row] = []
    async with http_server("--workers", str(workers)) as url, factory() as admin:
        tokens = await create_rooms(admin, url, sessions)
        for each in (rate, None):
            samples: list[float] = []
            before, mine = server_cpu_s(), time.process_time()
            errors = await concurrent(url, tokens, factory, samples, seconds, each or 0.0)
            after, mine = server_cpu_s(), time.process_time() - mine
            p50, p99 = quantiles_ms(samples)
            mode = "closed loop" if each is None else f"{each:g} call/s each"
            calls = max(len(samples), 1)
            per_call = None
            if before is not None and after is not None:
                per_call = (
                    (after[0] - before[0]) * 1000 / calls,
                    (after[1] - before[1]) * 1000 / calls,
                )
            rate_seen = len(samples) / seconds
            row = Row(workers, mode, rate_seen, p50, p99, errors, per_call, mine * 1000 / calls)
            print(row.line(), flush=True)
            rows.append(row)
    return rows


async def main(args: argparse.Namespace) -> list[Row]:
    one, five, _ = os.getloadavg()
    print(
        f"HTTP beyond one process: {args.sessions} sessions, {os.cpu_count()} CPUs, "
        f"load average {one:.1f} / {five:.1f} (1 / 5 min)"
    )
    # The load generator's own garbage-collection pauses would show up as server latency.
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    rows = await measure(1, args.sessions, args.seconds, args.rate)
    rows += await measure(args.workers, args.sessions, args.seconds, args.rate)
    single, cluster = closed_loop(rows)
    print(
        f"  closed loop: {cluster.calls_per_s / single.calls_per_s:.2f}x the calls/s of one "
        f"process with {args.workers} workers"
    )
    return rows


def closed_loop(rows: list[Row]) -> tuple[Row, Row]:
    """The closed-loop rows of one process and of the cluster."""
    loops = [r for r in rows if r.mode == "closed loop"]
    return loops[0], loops[-1]


def parser() -> argparse.ArgumentParser:
    """The command line (``run_all`` parses its own defaults with it)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workers", type=int, default=max(2, os.cpu_count() or 2))
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=1.0, help="calls per second per session")
    return parser


if __name__ == "__main__":
    anyio.run(main, parser().parse_args())

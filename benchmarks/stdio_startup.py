"""stdio start-up and the size of ``tools/list``, as an MCP host sees them.

    python benchmarks/stdio_startup.py [--runs 10]

Each run spawns a server process, sends ``initialize`` on stdin, and times the reply (spawn to
initialize reply, wall) and the process's CPU time until then (user + system, read from /proc
when the reply arrives). ``dealroom serve`` (stdio house mode against ``boulware``) and a bare
MCP SDK server with one tool (``_bare_mcp_server.py``) are started the same way (``python -c`` and
``python FILE``) and alternate run by run, so the two see the same machine load; the ratios of
their medians are the figures. For ``dealroom serve`` it also lists the tools and counts the
bytes of the ``tools/list`` reply as written on the wire.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

TARGET_RATIO = 1.2
"""dealroom serve's start-up, at most this many times the bare server's (issue 14)."""
TARGET_TOOLS_BYTES = 15_000
"""The tools/list reply, at most this many bytes with structured output kept (issue 14)."""

HERE = Path(__file__).resolve().parent
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "stdio-startup-benchmark", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


@dataclass(frozen=True)
class Run:
    """One start of one server."""

    wall_s: float
    """Spawn to the initialize reply."""
    cpu_s: float
    """The process's CPU time, spawn to the initialize reply (to exit where /proc is missing)."""
    tools_bytes: int | None = None
    tools: int | None = None


def _line(message: dict[str, object]) -> bytes:
    return (json.dumps(message) + "\n").encode()


_WRITING_BYTE_CODE = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
"""The servers' environment: Python writes byte code, as it does by default, so that the timed
starts read it as an MCP host's second launch does. With PYTHONDONTWRITEBYTECODE set (some
containers set it) every start compiled dealroom's sources again (the installed mcp has its
byte code from pip): 0.3G of 3.6G instructions, and 1.34x where 1.15x is what users get."""


def start(command: list[str], *, list_tools: bool) -> Run:
    """Spawn ``command``, time its initialize reply, optionally list its tools, close stdin."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_WRITING_BYTE_CODE,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(_line(INITIALIZE))
    process.stdin.flush()
    reply = process.stdout.readline()
    wall = time.perf_counter() - started
    cpu = _cpu_so_far(process.pid)
    if b'"result"' not in reply:
        process.kill()
        raise RuntimeError(f"{command[-1]}: no initialize result: {reply[:200]!r}")
    tools_bytes = tools = None
    if list_tools:
        process.stdin.write(_line(INITIALIZED) + _line(LIST_TOOLS))
        process.stdin.flush()
        listed = process.stdout.readline()
        tools_bytes = len(listed.rstrip(b"\n"))
        tools = len(json.loads(listed)["result"]["tools"])
    process.stdin.close()
    _, status, usage = os.wait4(process.pid, 0)
    process.stdout.close()
    process.returncode = os.waitstatus_to_exitcode(status)
    return Run(wall, usage.ru_utime + usage.ru_stime if cpu is None else cpu, tools_bytes, tools)


def _cpu_so_far(pid: int) -> float | None:
    """The CPU time (user + system) process ``pid`` has used so far, from /proc (Linux; in
    clock ticks, 10 ms); None elsewhere (the time to exit is used instead)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class StartupFigures:
    """Medians over the runs, and the tools/list size."""

    dealroom: list[Run]
    bare: list[Run]

    def median(self, runs: list[Run], field: str) -> float:
        return statistics.median(getattr(r, field) for r in runs)

    @property
    def wall_ratio(self) -> float:
        return self.median(self.dealroom, "wall_s") / self.median(self.bare, "wall_s")

    @property
    def cpu_ratio(self) -> float:
        return self.median(self.dealroom, "cpu_s") / self.median(self.bare, "cpu_s")

    @property
    def tools_bytes(self) -> int:
        sizes = {r.tools_bytes for r in self.dealroom}
        assert len(sizes) == 1, sizes
        size = sizes.pop()
        assert size is not None
        return size


def measure(runs: int = 10) -> StartupFigures:
    """``runs`` starts of each server, alternating."""
    with tempfile.TemporaryDirectory() as tmp:
        dealroom = [
            sys.executable,
            "-c",
            "import sys; from dealroom.cli import main; sys.exit(main())",
            "serve",
            "--results",
            str(Path(tmp) / "results.db"),
        ]
        bare = [sys.executable, str(HERE / "_bare_mcp_server.py")]
        start(dealroom, list_tools=True)  # warm the file cache and byte code for both
        start(bare, list_tools=False)
        ours: list[Run] = []
        theirs: list[Run] = []
        for _ in range(runs):
            ours.append(start(dealroom, list_tools=True))
            theirs.append(start(bare, list_tools=False))
    return StartupFigures(ours, theirs)


def report(figures: StartupFigures) -> None:
    """Print the medians and the ratios."""
    for label, runs in (("dealroom serve", figures.dealroom), ("bare MCP server", figures.bare)):
        wall = figures.median(runs, "wall_s") * 1000
        cpu = figures.median(runs, "cpu_s") * 1000
        print(f"  {label:<16} spawn to initialize reply {wall:7.0f} ms wall, {cpu:7.0f} ms CPU")
    print(
        f"  ratio            {figures.wall_ratio:.2f}x wall, {figures.cpu_ratio:.2f}x CPU "
        f"(target <= {TARGET_RATIO:g}x, on CPU: the runs alternate, but wall time also "
        "measures what else the machine runs)"
    )
    tools = figures.dealroom[0].tools
    print(
        f"  tools/list       {figures.tools_bytes:,} bytes for {tools} tools "
        f"(target <= {TARGET_TOOLS_BYTES:,})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="starts of each server")
    args = parser.parse_args()
    one, five, _ = os.getloadavg()
    print(f"load average {one:.1f} / {five:.1f}")
    report(measure(args.runs))


if __name__ == "__main__":
    main()

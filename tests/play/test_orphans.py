"""A killed driver leaves no process behind (issue 16): pool workers, a local Ray cluster, and
each mechanism on its own (parent-death signal, watcher thread, reaper)."""

from __future__ import annotations

import importlib.util
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from dealroom.cli import main
from dealroom.play import _orphans
from dealroom.play.tournament import TournamentConfig
from dealroom.store.results import ResultsStore

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="reads the process table from /proc"
)

AGENTS = "boulware,conceder,linear"
CODE = "import sys; from dealroom.cli import main; sys.exit(main())"


def table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every process, read from /proc (independently of the code
    under test)."""
    rows: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
            rows[int(entry.name)] = (int(ppid), state)
    return rows


def descendants(root: int) -> set[int]:
    rows = table()
    found, todo = set[int](), [root]
    while todo:
        parent = todo.pop()
        for pid, (ppid, _) in rows.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                todo.append(pid)
    return found


def running(pids: set[int]) -> set[int]:
    """Those of ``pids`` still running (a zombie has ended; only its parent has not reaped it)."""
    rows = table()
    return {pid for pid in pids if pid in rows and rows[pid][1] != "Z"}


def name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.05)


def stored(path: Path) -> int:
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM negotiations").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def start_tournament(out: Path, *extra: str) -> subprocess.Popen[bytes]:
    argv = ["tournament", "--agents", AGENTS, "--per-pair", "60", "--out", str(out), *extra]
    return subprocess.Popen(
        [sys.executable, "-c", CODE, *argv, "--concurrency", "2"], stderr=subprocess.DEVNULL
    )


def kill_when(
    driver: subprocess.Popen[bytes], ready: Callable[[], bool], timeout: float
) -> set[int]:
    """Wait until ``ready()``, note the driver's descendants, SIGKILL the driver alone; return
    the descendants it had."""
    try:
        wait_for(lambda: driver.poll() is not None or ready(), timeout, "the run to get going")
        assert driver.poll() is None, "the run ended before it could be killed"
        family = descendants(driver.pid)
        driver.send_signal(signal.SIGKILL)
    finally:
        if driver.poll() is None:
            driver.kill()
        driver.wait(timeout=30)
    return family


def test_pool_workers_end_with_a_killed_driver_and_resume_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "t.db"
    driver = start_tournament(out)
    workers = kill_when(
        driver, lambda: stored(out) >= 100 and len(descendants(driver.pid)) >= 2, 90
    )
    assert len(workers) >= 2
    killed_at = stored(out)
    wait_for(lambda: not running(workers), 5, f"workers {running(workers)} to end")
    assert stored(out) >= killed_at  # nothing stored was lost
    argv = ["tournament", "--agents", AGENTS, "--per-pair", "60", "--out", str(out)]
    assert main([*argv, "--resume", "--concurrency", "2"]) == 0
    config = TournamentConfig(agents=tuple(AGENTS.split(",")), per_pair=60)
    with ResultsStore(out) as store:
        assert {row.key for row in store.iter()} == {job.key for job in config.jobs()}


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs ray")
@pytest.mark.slow
def test_a_local_ray_cluster_ends_with_a_killed_driver(tmp_path: Path) -> None:
    out = tmp_path / "t.db"
    driver = start_tournament(out, "--backend", "ray")

    def ray_workers_up() -> bool:
        return "raylet" in map(name, descendants(driver.pid)) and stored(out) > 0

    cluster = kill_when(driver, ray_workers_up, 180)
    assert len(cluster) >= 4  # at least the GCS, the raylet, its agents and workers
    wait_for(lambda: not running(cluster), 10, f"Ray processes {running(cluster)} to end")


def child(code: str) -> subprocess.Popen[str]:
    """A Python child running ``code``; it prints a line once it is ready."""
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True
    )


# A middle process that starts a grandchild running GRANDCHILD, prints the grandchild's pid once
# the grandchild is ready, then waits to be killed.
MIDDLE = """
    import subprocess, sys, threading
    grandchild = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdout=subprocess.PIPE)
    grandchild.stdout.readline()
    print(grandchild.pid, flush=True)
    threading.Event().wait()
"""


def orphan_after_killing_its_parent(grandchild_code: str) -> int:
    middle = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(MIDDLE), textwrap.dedent(grandchild_code)],
        stdout=subprocess.PIPE,
        text=True,
    )
    with middle:
        assert middle.stdout is not None
        pid = int(middle.stdout.readline())
        middle.send_signal(signal.SIGKILL)
    return pid


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's prctl")
def test_the_parent_death_signal_alone_ends_an_orphan() -> None:
    pid = orphan_after_killing_its_parent("""
        import signal, threading
        from dealroom.play._orphans import parent_death_signal
        assert parent_death_signal(signal.SIGTERM)
        print("ready", flush=True)
        threading.Event().wait()
    """)
    wait_for(lambda: not running({pid}), 5, "the orphan to end")


def test_the_watcher_thread_alone_ends_an_orphan() -> None:
    pid = orphan_after_killing_its_parent("""
        import os, threading
        from dealroom.play._orphans import watch
        watch(os.getppid())
        print("ready", flush=True)
        threading.Event().wait()
    """)
    wait_for(lambda: not running({pid}), 5, "the orphan to end")


def test_a_worker_whose_driver_is_already_gone_ends_at_once() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=30)
    late = child(f"""
        from dealroom.play._orphans import end_with_driver
        end_with_driver({gone.pid})
        print("survived", flush=True)
    """)
    out, _ = late.communicate(timeout=30)
    assert late.returncode == -signal.SIGTERM and "survived" not in out


def test_the_reaper_ends_what_start_started_when_the_driver_is_killed() -> None:
    driver = child("""
        import subprocess, sys, threading
        from dealroom.play._orphans import fate_shared
        sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
        tree = [sys.executable, "-c",
                f"import subprocess, time; subprocess.Popen({sleeper!r}); time.sleep(600)"]
        with fate_shared(lambda: subprocess.Popen(tree), lambda: None):
            print("ready", flush=True)
            threading.Event().wait()
    """)
    assert driver.stdout is not None
    driver.stdout.readline()
    wait_for(lambda: len(descendants(driver.pid)) >= 3, 30, "the tree and the reaper")
    family = descendants(driver.pid)
    with driver:
        driver.kill()
    wait_for(lambda: not running(family), 10, f"{running(family)} to end")


def test_leaving_fate_shared_ends_what_stop_left_running() -> None:
    started: list[subprocess.Popen[bytes]] = []
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    with _orphans.fate_shared(lambda: started.append(subprocess.Popen(sleeper)), lambda: None):
        assert started[0].poll() is None
    assert started[0].wait(timeout=10) == -signal.SIGTERM

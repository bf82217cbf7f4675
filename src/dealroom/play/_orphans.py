"""Worker processes end with their driver, however it ends (a crash or ``kill -9`` included).

A pool worker blocks on a pipe from its driver; if the driver is killed, nothing closes that
pipe on the worker's side and the worker would sleep there forever, re-parented to init (and
with LLM seats, keep its connections open). So each worker, as it starts, calls
``end_with_driver``:

- on Linux, the kernel's parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGTERM)``): the worker
  gets SIGTERM the moment the process that started it exits (the driver, or the fork server,
  which exits when the driver does);
- everywhere, a daemon thread that checks every ``POLL_S`` seconds whether the driver is still
  there and the worker still has the parent it started with, and ends the worker if not (the
  portable fallback, and a second line on Linux).

Processes the driver does not start itself need a third party. A local Ray cluster's processes
are started by Ray (the GCS and the raylet by the driver, the raylet's agents and workers by the
raylet); Ray ends most of them when the driver dies, but its dashboard and runtime-env agents
linger for a minute or more (they wait on the dead GCS first). So when dealroom starts a local
cluster it also starts a ``reaper``: a small process (``python -m dealroom.play._orphans``) that
reads a pipe from the driver. The driver writes the pids of the cluster's processes to it; every
``POLL_S`` seconds the reaper adds their new descendants to the set it tracks and drops those
that have ended, and when the pipe closes (the driver ended the cluster, or died) it ends every
process still in the set: SIGTERM, then SIGKILL after ``GRACE_S``.

Nothing is lost: only the driver writes the store, so a worker that ends loses at most the
negotiations it was playing, which were never stored and are played again by ``--resume``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterable
from pathlib import Path

POLL_S = 0.5
"""How often the watcher thread looks for its driver."""

GRACE_S = 2.0
"""How long a worker that was asked to end (SIGTERM to itself) has before it is ended at once."""

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def end_with_driver(driver: int) -> None:
    """End this process soon after process ``driver`` ends (call it first thing in a worker).

    A no-op on Windows, where a worker's pipe from a dead driver breaks by itself (and where
    ``os.kill(pid, 0)`` would send a Ctrl-C instead of probing)."""
    if sys.platform == "win32":
        return
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        parent_death_signal(signal.SIGTERM)
    if _orphaned(driver, parent):  # the driver ended before the signal was armed
        _end()
    watch(driver, parent)


def parent_death_signal(signum: int) -> bool:
    """Ask Linux to send ``signum`` to this process when its parent exits; False if unavailable."""
    path = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(path, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def watch(driver: int, parent: int | None = None, *, poll_s: float = POLL_S) -> threading.Thread:
    """Start the daemon thread that ends this process once ``driver`` (or ``parent``) is gone."""
    parent = os.getppid() if parent is None else parent

    def run() -> None:
        while not _orphaned(driver, parent):
            time.sleep(poll_s)
        _end()

    thread = threading.Thread(target=run, name="dealroom-orphan-watch", daemon=True)
    thread.start()
    return thread


def _orphaned(driver: int, parent: int) -> bool:
    return os.getppid() != parent or not _alive(driver)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user's process
        return True
    return True


def _end() -> None:
    """SIGTERM to this process (its handlers run, coverage's included), then exit at once."""
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(GRACE_S)
    os._exit(1)


@contextlib.contextmanager
def reaper() -> Generator[subprocess.Popen[bytes]]:
    """Start a reaper for this process's cluster; hand it pids with ``reap``. On leaving (or
    when this process dies) it ends every handed process and its descendants still running."""
    process = subprocess.Popen(
        [sys.executable, "-m", "dealroom.play._orphans"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,  # the driver's stdout may be a protocol stream
        start_new_session=True,  # not in the terminal's process group: Ctrl-C leaves it alone
    )
    try:
        yield process
    finally:
        assert process.stdin is not None
        with contextlib.suppress(OSError):
            process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=GRACE_S + 3 * POLL_S + 5)


def reap(process: subprocess.Popen[bytes], pids: Iterable[int]) -> None:
    """Hand ``pids`` (and, from now on, their descendants) to the reaper ``process``."""
    assert process.stdin is not None
    process.stdin.write(b"".join(b"%d\n" % pid for pid in pids))
    process.stdin.flush()


@contextlib.contextmanager
def fate_shared(start: Callable[[], object], stop: Callable[[], object]) -> Generator[None]:
    """Call ``start`` (which starts processes, e.g. a local Ray cluster), ``stop`` on leaving;
    whatever ``start`` started ends with this process, however it ends.

    The processes handed to the reaper are the children this process gained during ``start``
    (and, as they come, their descendants): start nothing else in other threads meanwhile."""
    with reaper() as process:
        before = _children(os.getpid())
        start()
        try:
            reap(process, _children(os.getpid()) - before - {process.pid})
            yield
        finally:
            stop()


def _children(pid: int) -> set[int]:
    return {child for child, parent in _processes() if parent == pid}


def _reap_main() -> None:
    """The reaper: follow the pids read from stdin, end them when stdin closes."""
    roots: set[int] = set()
    tracked: set[int] = set()
    lock = threading.Lock()
    closed = threading.Event()

    def read() -> None:
        for line in sys.stdin.buffer:
            with lock:
                roots.add(int(line))
        closed.set()

    threading.Thread(target=read, daemon=True).start()
    # Tracked processes stay tracked while they run, even once re-parented: a scan that ends
    # after the driver's death (the raylet's agents already orphaned) must not drop them.
    while not closed.wait(POLL_S):
        with lock:
            tracked = _family(roots | tracked)
    with lock:
        tracked = _family(roots | tracked)
    _end_all(tracked)


def _family(roots: set[int]) -> set[int]:
    """``roots`` and their descendants, those still running (an ended pid is dropped at the next
    scan, so a pid reused later is not taken for it)."""
    children: dict[int, list[int]] = {}
    for pid, ppid in _processes():
        children.setdefault(ppid, []).append(pid)
    alive = {pid for pids in children.values() for pid in pids}
    found, todo = set[int](), [pid for pid in roots if pid in alive]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(children.get(pid, ()))
    return found


def _processes() -> list[tuple[int, int]]:
    """(pid, parent pid) of every process: from /proc on Linux, else from ``ps``."""
    proc = Path("/proc")
    if (proc / "self" / "stat").exists():
        rows: list[tuple[int, int]] = []
        for entry in proc.iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    stat = (entry / "stat").read_text()
                    fields = stat[stat.rindex(")") + 2 :].split()
                    if fields[0] != "Z":  # a zombie has ended already
                        rows.append((int(entry.name), int(fields[1])))
        return rows
    out = subprocess.run(
        ["ps", "-A", "-o", "pid=", "-o", "ppid=", "-o", "stat="],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [
        (int(pid), int(ppid))
        for pid, ppid, state, *_ in (line.split() for line in out.splitlines())
        if not state.startswith("Z")
    ]


def _end_all(pids: set[int]) -> None:
    """SIGTERM to each of ``pids``, then SIGKILL to those still running after ``GRACE_S``."""
    if not pids:
        return
    _signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while (left := pids & {pid for pid, _ in _processes()}) and time.monotonic() < deadline:
        time.sleep(0.05)
    _signal_all(left, signal.SIGKILL)


def _signal_all(pids: Iterable[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


if __name__ == "__main__":
    _reap_main()

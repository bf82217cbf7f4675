"""``dealroom serve --transport http --workers N``: the front process and the worker entry point.

The front checks the store, starts N workers (each this package's ``run_http`` on a private Unix
socket, handed its job on standard input) and serves the public address
(``dealroom.server.cluster``). A worker reads its job (the parsed command line, its index and
socket), stops by itself when the front's pipe closes, and serves until then.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import structlog

from dealroom._logging import configure_logging
from dealroom.cli import UsageError
from dealroom.cli._common import ADMIN_TOKEN_ENV, found_in, usage_error
from dealroom.cli._serving import (
    close_store,
    default_results_path,
    has_uvloop,
    open_writer,
    run_http,
    say_ready,
)
from dealroom.store.results import StoreError

if TYPE_CHECKING:
    from dealroom.server.cluster_workers import WorkerSpec

SOCKETS_PREFIX = "dealroom-w"
"""The front's directory of worker sockets: ``$TMPDIR/dealroom-w<front pid>-<random>`` (short:
a Unix socket's path is at most 107 bytes, and ``$TMPDIR`` may be long)."""

WORKER_COMMAND = (sys.executable, "-c", "from dealroom.cli._cluster import worker; worker()")


@dataclass(frozen=True, slots=True)
class WorkerJob:
    """What a worker is told on standard input: the command line, its index, its socket."""

    args: argparse.Namespace
    index: int
    socket: str


def run_cluster(args: argparse.Namespace) -> int:
    """Serve the front and its workers until interrupted."""
    from dealroom.server.cluster import serve_cluster
    from dealroom.server.cluster_owners import stray_journals
    from dealroom.server.cluster_workers import WorkerFailed, Workers
    from dealroom.server.mcp_http import ListenFailed

    args.results = args.results or default_results_path()
    if not os.environ.get(ADMIN_TOKEN_ENV):
        sys.stderr.write(
            f"dealroom: {ADMIN_TOKEN_ENV} is not set: the admin API (room creation) is disabled\n"
        )
    # Created (WAL) and its spool stored once, here, before the workers open it side by side.
    close_store(open_writer(args.results))
    stray = stray_journals(args.results, args.workers)
    if stray:
        raise usage_error(
            f"{args.results}.rooms holds open rooms of worker {stray[-1]}: "
            f"start with --workers {stray[-1] + 1} or more"
        )
    _check_owners(args.results, args.workers)
    _remove_stale_sockets()
    sockets = tempfile.mkdtemp(prefix=f"{SOCKETS_PREFIX}{os.getpid()}-")  # 0700: this user's
    specs = worker_specs(args, Path(sockets))
    try:
        anyio.run(
            lambda: serve_cluster(
                Workers(specs),
                host=args.host,
                port=args.port,
                on_ready=lambda: say_ready(args.host, args.port),
            ),
            backend_options={"use_uvloop": has_uvloop()},
        )
    except BaseException as exc:
        failed = found_in(exc, (WorkerFailed, ListenFailed))
        if failed is None:
            raise
        raise usage_error(str(failed)) from None
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
    return 0


def _remove_stale_sockets() -> None:
    """Remove the socket directories of fronts that are gone (killed with SIGKILL, a front
    leaves its directory behind): each is named after its front's process id. Another front
    may be removing the same ones at once: a directory gone meanwhile is no error."""
    for directory in Path(tempfile.gettempdir()).glob(f"{SOCKETS_PREFIX}*-*"):
        pid = directory.name.removeprefix(SOCKETS_PREFIX).split("-", 1)[0]
        try:
            mine = directory.stat().st_uid == os.geteuid()
        except OSError:
            continue
        if pid.isdigit() and mine and not _alive(int(pid)):
            shutil.rmtree(directory, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _check_owners(store: Path, workers: int) -> None:
    """Refuse, in one line, a start on a store whose rooms another process serves (a running
    server or cluster): each worker's journal directory is owned by one process at a time.
    Taken and let go here, before any worker starts (each worker then takes its own)."""
    from dealroom.server.cluster_owners import journal_directory, owning

    with contextlib.ExitStack() as owned:
        for index in range(workers):
            try:
                owned.enter_context(owning(journal_directory(store, index)))
            except OSError as exc:
                raise usage_error(str(exc)) from None


def worker_specs(args: argparse.Namespace, sockets: Path) -> list[WorkerSpec]:
    """How to start each of ``args.workers`` workers, their sockets in ``sockets``."""
    from dealroom.server.cluster_workers import WorkerSpec

    specs: list[WorkerSpec] = []
    for index in range(args.workers):
        socket = str(sockets / f"w{index}.sock")
        job = pickle.dumps(WorkerJob(args, index, socket))
        specs.append(WorkerSpec(command=WORKER_COMMAND, job=job, socket=socket))
    return specs


def worker() -> None:
    """A worker process: its job from standard input, then ``run_http`` on its socket."""
    job: WorkerJob = pickle.load(sys.stdin.buffer)  # our own front wrote it
    configure_logging(job.args.log_level)
    structlog.contextvars.bind_contextvars(worker=job.index)
    threading.Thread(target=_stop_with_front, daemon=True).start()
    try:
        code = run_http(job.args, (job.index, job.socket))
    except (UsageError, StoreError, OSError) as exc:
        sys.stderr.write(f"dealroom: error: worker {job.index}: {exc}\n")
        code = 2
    sys.exit(code)


def _stop_with_front() -> None:
    """Wait for the front's pipe to close (the front stopped or died), then stop gracefully.

    ``os.read`` on the descriptor, not the buffered ``sys.stdin``: a daemon thread blocked in a
    buffered read holds its lock, and a worker that exits meanwhile (it could not start) dies
    at interpreter shutdown with "Fatal Python error" instead of its one line."""
    with contextlib.suppress(OSError):
        while os.read(0, 1 << 16):
            pass
    os.kill(os.getpid(), signal.SIGTERM)

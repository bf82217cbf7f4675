"""Where a tournament's jobs run, each backend yielding every job with its result as it
finishes, in any order:

    SerialBackend    scripted jobs in the driver's process, one at a time
    ProcessBackend   scripted jobs in worker processes, in chunks (they are CPU-bound)
    RayBackend       every job as tasks on a Ray cluster (``pip install dealroom[ray]``); seat
                     jobs run concurrently inside each task and are stored as their chunk returns

The process and Ray backends are the same loop (``_in_flight``): at most a few chunks per worker
submitted, results yielded a chunk at a time, nothing new submitted once ``stop()`` is true.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import multiprocessing
import multiprocessing.context
import os
import signal
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from dealroom.play._orphans import end_with_driver, fate_shared
from dealroom.play.jobs import ChunkPlayer, Job, Played
from dealroom.store.results import SerializedRecord

H = TypeVar("H", bound=Hashable)

Stop = Callable[[], bool]
"""Asked before each new piece of work starts: true once the run must start nothing more."""


def never() -> bool:
    """The default ``Stop``: play everything."""
    return False


class Backend(Protocol):
    """Runs jobs and yields each with its serialised record as it finishes, in any order."""

    plays_seats: bool
    """True if it also runs seat jobs (else the driver plays them in its event loop)."""

    def run(
        self, jobs: Sequence[Job], player: ChunkPlayer, stop: Stop = never
    ) -> Iterator[tuple[Job, Played]]:
        """Play every job. Once ``stop()`` is true no new work starts, and the work already
        started is still yielded (a budget stop loses nothing that was paid for). Closing the
        iterator early stops the work still queued."""
        ...


class SerialBackend:
    """Plays scripted jobs one after another in the calling process."""

    plays_seats = False

    def run(
        self, jobs: Sequence[Job], player: ChunkPlayer, stop: Stop = never
    ) -> Iterator[tuple[Job, Played]]:
        """Play every job, in order."""
        for job in jobs:
            if stop():
                return
            yield job, Played(SerializedRecord.of(player.play(job)))


def _in_flight(
    chunks: Iterator[list[Job]],
    submit: Callable[[list[Job]], H],
    finished: Callable[[list[H]], Iterable[H]],
    result: Callable[[H], list[Played]],
    *,
    limit: int,
    stop: Stop,
    running: dict[H, list[Job]],
) -> Iterator[tuple[Job, Played]]:
    """The bounded in-flight loop of the process and Ray backends: keep up to ``limit`` chunks
    submitted (none new once ``stop()`` is true), and yield each finished chunk's jobs with
    their results. ``running`` is the caller's, so that it can cancel what is left."""
    while True:
        while len(running) < limit and not stop() and (chunk := next(chunks, None)):
            running[submit(chunk)] = chunk
        if not running:
            return
        for handle in finished(list(running)):
            yield from zip(running.pop(handle), result(handle), strict=True)


def chunked(jobs: Sequence[Job], workers: int, size: int | None = None) -> list[list[Job]]:
    """Jobs in chunks: big enough to amortise the round trip, small enough to balance load."""
    if size is None:
        size = max(1, min(50, len(jobs) // (workers * 8)))
    return [list(jobs[i : i + size]) for i in range(0, len(jobs), size)]


def _context() -> multiprocessing.context.BaseContext:
    # Fork is fast and needs no ``if __name__ == "__main__"`` guard in the user's script, but is
    # unsafe in a process that runs threads (an event loop's workers, Ray's): use forkserver then.
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _start_worker(driver: int) -> None:
    # Ctrl-C reaches the whole process group: only the driver handles it (and stops the pool).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_with_driver(driver)  # and a killed driver leaves no worker behind


@dataclass(frozen=True, slots=True)
class ProcessBackend:
    """Plays chunks of scripted jobs in ``workers`` processes; at most a few chunks per worker
    queued."""

    workers: int
    chunk_size: int | None = None
    plays_seats = False

    def run(
        self, jobs: Sequence[Job], player: ChunkPlayer, stop: Stop = never
    ) -> Iterator[tuple[Job, Played]]:
        """Play every job; results arrive a chunk at a time."""
        chunks = iter(chunked(jobs, self.workers, self.chunk_size))
        pool = ProcessPoolExecutor(
            self.workers,
            mp_context=_context(),
            initializer=_start_worker,
            initargs=(os.getpid(),),
        )
        running: dict[Future[list[Played]], list[Job]] = {}
        try:
            yield from _in_flight(
                chunks,
                lambda chunk: pool.submit(player, chunk),
                lambda futures: wait(futures, return_when=FIRST_COMPLETED)[0],
                lambda future: future.result(),
                limit=3 * self.workers,
                stop=stop,
                running=running,
            )
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _play_chunk(player: ChunkPlayer, jobs: list[Job]) -> list[Played]:
    return player(jobs)


@dataclass(frozen=True, slots=True)
class RayBackend:
    """Plays chunks of jobs as Ray tasks. Connects to ``address`` (None: the running Ray, or a
    new local one with ``num_cpus``); a Ray it started itself is shut down at the end. Seat jobs
    run ``ChunkPlayer.concurrency`` at a time inside each task, in chunks of that size, within
    each endpoint's limit per task (each task one driver of the endpoints, with its own players
    and event loop: an endpoint may see tasks in flight x its limit), and are stored as their
    chunk returns."""

    address: str | None = None
    num_cpus: int | None = None
    chunk_size: int | None = None
    plays_seats = True

    def run(
        self, jobs: Sequence[Job], player: ChunkPlayer, stop: Stop = never
    ) -> Iterator[tuple[Job, Played]]:
        """Play every job; results arrive a chunk at a time."""
        import ray as ray_module  # optional dependency: imported only when this backend runs

        ray: Any = ray_module  # Ray's annotations leave much of its API Unknown: used as Any

        cluster = contextlib.ExitStack()
        if not ray.is_initialized():  # a Ray started here ends here, or with this process

            def start() -> None:
                ray.init(
                    address=self.address,
                    num_cpus=self.num_cpus,
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level=logging.ERROR,  # no start-up chatter on the driver's stderr
                )

            cluster.enter_context(fate_shared(start, ray.shutdown))
        running: dict[Any, list[Job]] = {}
        try:
            workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
            remote = ray.remote(_play_chunk)
            player_ref = ray.put(player)
            scripted = [job for job in jobs if player.is_scripted(job)]
            seated = [job for job in jobs if not player.is_scripted(job)]
            chunks = itertools.chain(
                chunked(scripted, workers, self.chunk_size),
                chunked(seated, workers, self.chunk_size or player.concurrency),
            )
            yield from _in_flight(
                chunks,
                lambda chunk: remote.remote(player_ref, chunk),
                lambda refs: ray.wait(refs, num_returns=1)[0],
                ray.get,
                limit=3 * workers,
                stop=stop,
                running=running,
            )
        finally:
            for ref in running:
                ray.cancel(ref)
            cluster.close()

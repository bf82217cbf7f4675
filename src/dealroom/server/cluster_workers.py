"""The worker processes of a cluster (``dealroom.server.cluster``): start them, wait until each
answers, restart one that dies, stop them all.

Each worker is a command (the CLI's: a complete room server on a Unix socket) given its job on
standard input. The front keeps that pipe open for the worker's whole life: a worker reads
end-of-file only when the front is gone (killed, even with SIGKILL) and then stops by itself, so
no worker outlives its front. Workers run in their own session: an interrupt typed at the
terminal reaches the front only, which stops them in order.

A worker that exits while the cluster serves is logged as an error and, after ``restart_s``,
started again: it replays its own room journals (``journal_directory``), so its rooms go on
with the tokens their clients hold. Until then its rooms answer 502 and the others play on.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

import aiohttp
import anyio
import anyio.abc
import structlog

from dealroom.protocol.errors import DealroomError

log = structlog.stdlib.get_logger(__name__)

READY_S = 60.0
"""Longest a worker may take from its start to answering its health check."""
RESTART_MAX_S = 30.0
"""Longest wait before trying again to start a worker that failed to start."""
STOP_S = 15.0
"""Longest a stopping worker may take (its requests in flight get the server's shutdown
grace) before it is killed."""


HEALTH_URL = "http://127.0.0.1:1/healthz"
"""A worker's health check (the socket is the address; the Host passes its loopback check)."""


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """How to start one worker: its command, the job written to its standard input, and the
    Unix socket it serves on."""

    command: Sequence[str]
    job: bytes
    socket: str


class WorkerFailed(DealroomError):
    """A worker could not be started (it exited, or did not answer in time)."""

    kind = "worker_failed"


class Workers:
    """The cluster's worker processes, by index."""

    def __init__(self, specs: Sequence[WorkerSpec], *, restart_s: float | None = 1.0) -> None:
        self.specs = tuple(specs)
        self.restart_s = restart_s
        """Seconds before a dead worker is started again; None: it stays down."""
        self._processes: list[anyio.abc.Process | None] = [None] * len(self.specs)
        self._up = [False] * len(self.specs)
        self._stopping = False

    @property
    def sockets(self) -> list[str]:
        """Each worker's socket, by index."""
        return [spec.socket for spec in self.specs]

    def alive(self, index: int) -> bool:
        """Worker ``index`` has answered its health check and has not exited since."""
        return self._up[index]

    def pid(self, index: int) -> int | None:
        """Worker ``index``'s process id (None before it starts)."""
        process = self._processes[index]
        return None if process is None else process.pid

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Start every worker, report started once all answer, then watch them until
        cancelled; then stop them all. Raises WorkerFailed if one cannot be started."""
        try:
            for index in range(len(self.specs)):  # all start at once, then each is awaited
                await self._spawn(index)
            for index in range(len(self.specs)):
                await self._ready(index)
            task_status.started()
            async with anyio.create_task_group() as group:
                for index in range(len(self.specs)):
                    group.start_soon(self._watch, index)
        finally:
            with anyio.CancelScope(shield=True):
                await self.stop()

    async def _spawn(self, index: int) -> None:
        spec = self.specs[index]
        process = await anyio.open_process(
            list(spec.command),
            stdin=subprocess.PIPE,
            stdout=None,
            stderr=None,
            start_new_session=True,
        )
        self._processes[index] = process
        assert process.stdin is not None
        await process.stdin.send(spec.job)  # the pipe stays open: closed, the worker stops

    async def _ready(self, index: int) -> None:
        process = self._processes[index]
        assert process is not None
        await _until_ready(index, process, self.specs[index].socket)
        self._up[index] = True
        log.info("worker started", worker=index, pid=process.pid)

    async def _watch(self, index: int) -> None:
        delay = self.restart_s
        while True:
            process = self._processes[index]
            assert process is not None
            code = await process.wait()
            self._up[index] = False
            if process.stdin is not None:
                await process.stdin.aclose()
            if self._stopping:
                return
            log.error(
                "worker exited: its rooms are unavailable until it is back",
                worker=index,
                code=code,
                restart_s=delay,
            )
            if delay is None:
                return
            await anyio.sleep(delay)
            try:
                await self._spawn(index)
                await self._ready(index)
                delay = self.restart_s
            except WorkerFailed as exc:
                log.error("worker could not be restarted", worker=index, error=str(exc))
                self._kill(index)
                delay = min(delay * 2, RESTART_MAX_S)  # a worker that cannot start: back off

    def _kill(self, index: int) -> None:
        process = self._processes[index]
        if process is not None and process.returncode is None:
            process.kill()

    async def stop(self) -> None:
        """Stop every worker: close its pipe and terminate it; kill it after ``STOP_S``."""
        self._stopping = True
        for process in self._processes:
            if process is not None and process.returncode is None:
                process.terminate()
        for index, process in enumerate(self._processes):
            if process is None:
                continue
            with anyio.move_on_after(STOP_S) as waited:
                await process.wait()
            if waited.cancelled_caught:
                log.warning("worker did not stop in time: killed", worker=index)
                process.kill()
                await process.wait()
            if process.stdin is not None:
                await process.stdin.aclose()
            self._up[index] = False


async def _until_ready(index: int, process: anyio.abc.Process, socket: str) -> None:
    """Poll the worker's health check until it answers 200; WorkerFailed if it exits first
    or takes longer than ``READY_S``."""
    connector = aiohttp.UnixConnector(path=socket)
    async with aiohttp.ClientSession(connector=connector) as http:
        with anyio.move_on_after(READY_S):
            while process.returncode is None:
                try:
                    async with http.get(HEALTH_URL) as response:
                        if response.status == 200:
                            return
                except (aiohttp.ClientError, OSError):
                    pass
                await anyio.sleep(0.05)
            raise WorkerFailed(f"worker {index} exited with {process.returncode} before serving")
    raise WorkerFailed(f"worker {index} did not answer within {READY_S:g} s")

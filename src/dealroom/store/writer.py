"""Writing finished negotiations: exactly once, off the event loop, never lost to a failed write.

A server hands each finished negotiation to a ``ResultWriter`` (``put``, synchronous, cheap)
and then ``flush``es: in a worker thread the row is first spooled (``Spool``: one fsync'd file),
then inserted into the store, then its spool file is removed. A row the store refuses (a full
disk, a file locked by another process past the store's busy timeout) stays pending, in memory
and in the spool, and is tried again with backoff (``retry_forever``), when the server stops
(``close``) and when it starts again (``recover``). Rows are keyed, and the store keeps the
first row of a key, so however often a row is tried it is stored once.

A row's extra can be replaced after it was put (``amend``: a conversation's last reply that came
after the negotiation was recorded): in place while nothing has written the row yet, else by an
update once the row is in the store. An amendment is held in memory only: if the process dies
before it lands, the row stays as it was first put.

``durable(key)``: the row is in the store or in the spool, so it survives the process. A row
that could be neither (the disk is full for the spool too) is held in memory until it can; a
server that stops while that lasts logs the row's JSON as its last resort.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import anyio
import structlog

from dealroom.store.results import ResultsStore, StoreError
from dealroom.store.spool import PendingRow, Spool

log = structlog.stdlib.get_logger(__name__)

WriteError = (sqlite3.Error, OSError, StoreError)
"""What a failed write raises (a full disk, a locked or read-only file)."""


@dataclass(slots=True)
class _Entry:
    row: PendingRow
    spooled: bool = False
    tried: bool = False


class ResultWriter:
    """The results store of a server, with the rows it has not been able to store yet."""

    def __init__(
        self,
        store: ResultsStore,
        spool: Spool | None = None,
        *,
        retry_s: tuple[float, float] = (1.0, 30.0),
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.spool = spool
        self._retry_s = retry_s
        self._timer = timer
        self._pending: dict[str, _Entry] = {}
        self._amended: dict[str, Mapping[str, Any]] = {}
        """Extras to set on rows once they are stored (``amend``)."""
        self._amend_failed: set[str] = set()
        """Keys whose amendment failed and was logged (only ``_set_extras`` touches it: under
        the store lock, or at close)."""
        self._spool_lock = anyio.Lock()
        self._store_lock = anyio.Lock()
        self._delay = retry_s[0]
        self._next_try = 0.0
        self._failing: str | None = None

    @classmethod
    def beside(cls, store: ResultsStore) -> ResultWriter:
        """A writer spooling next to the store's file (``<store>.pending/``)."""
        return cls(store, Spool.beside(store.path))

    # -- what is pending ------------------------------------------------------------------------

    def put(self, row: PendingRow) -> None:
        """Take one finished negotiation (idempotent: a key already pending is kept as is)."""
        if row.key not in self._pending:
            self._pending[row.key] = _Entry(row)

    def amend(self, key: str, extra: Mapping[str, Any]) -> None:
        """Replace the extra of the row put under ``key``: in the pending row while nothing has
        written it yet, else in the store once the row is there (the next ``flush`` after)."""
        entry = self._pending.get(key)
        writing = self._spool_lock.locked() or self._store_lock.locked()
        if entry is None or entry.spooled or entry.tried or writing:  # stored, or on its way
            self._amended[key] = extra
        else:
            entry.row = replace(entry.row, extra=extra)
            self._amended.pop(key, None)

    def pending(self) -> tuple[str, ...]:
        """Keys not in the store yet, oldest first."""
        return tuple(self._pending)

    def has_pending(self, key_prefix: str) -> bool:
        """True while a row (or an amendment of one) whose key starts with ``key_prefix`` is
        not in the store yet."""
        return any(key.startswith(key_prefix) for key in self._pending) or any(
            key.startswith(key_prefix) for key in self._amended
        )

    def durable(self, key: str) -> bool:
        """True when the row survives the process: stored, or spooled."""
        entry = self._pending.get(key)
        return entry is None or entry.spooled

    # -- writing --------------------------------------------------------------------------------

    async def flush(self) -> None:
        """Spool new rows and store pending ones, in a worker thread; bounded by the store's
        busy timeout. A row never tried is tried now; the others once their backoff is over."""
        if self.spool is not None and any(not e.spooled for e in self._pending.values()):
            async with self._spool_lock:
                fresh = [e for e in self._pending.values() if not e.spooled]  # after the wait
                spooled = await anyio.to_thread.run_sync(self._spool_rows, fresh)
            for entry in fresh:
                entry.spooled = entry.row.key in spooled
        await self._store_pending()
        if self._amended:
            await self._amend_stored()

    async def _store_pending(self) -> None:
        untried = any(not e.tried for e in self._pending.values())
        if not self._pending or not (untried or self._timer() >= self._next_try):
            return
        if self._store_lock.locked() and all(e.spooled for e in self._pending.values()):
            return  # durable already; the write under way (or the next retry) stores them
        async with self._store_lock:
            batch = list(self._pending.values())
            if batch:
                stored, error = await anyio.to_thread.run_sync(self._store_rows, batch)
                self._settle(batch, stored, error)

    async def _amend_stored(self) -> None:
        """Set the amended extras of rows now in the store (bounded as ``flush``)."""
        async with self._store_lock:
            due = self._amendments_due()
            if due:
                done = await anyio.to_thread.run_sync(self._set_extras, due)
                for key in done:
                    if self._amended.get(key) is due[key]:  # not amended again meanwhile
                        del self._amended[key]

    async def retry_forever(self, interval: float = 1.0) -> None:
        """Forever: flush every ``interval`` seconds (the backoff decides what is tried)."""
        while True:
            await anyio.sleep(interval)
            await self.flush()

    def recover(self) -> int:
        """At start, before serving: store what an earlier process left in the spool. Returns
        how many rows it stored (rows it cannot store yet stay pending)."""
        if self.spool is None:
            return 0
        loaded = self.spool.load()
        for row in loaded:
            self._pending.setdefault(row.key, _Entry(row, spooled=True))
        batch = list(self._pending.values())
        stored, error = self._store_rows(batch)
        self._settle(batch, stored, error)
        if loaded:
            log.info("spooled results recovered", spooled=len(loaded), stored=len(stored))
        return len(stored)

    def close(self) -> None:
        """When the server stops: a last try at everything pending (synchronous). A row still
        in neither the store nor the spool is logged with its JSON: the log is all that is
        left of it."""
        batch = list(self._pending.values())
        fresh = [e for e in batch if not e.spooled]
        if fresh and self.spool is not None:
            spooled = self._spool_rows(fresh)
            for entry in fresh:
                entry.spooled = entry.row.key in spooled
        stored, error = self._store_rows(batch)
        self._settle(batch, stored, error)
        for key in self._set_extras(self._amendments_due()):
            del self._amended[key]
        for key in self._amended:
            log.warning("result stored without its amendment", key=key)
        for entry in self._pending.values():
            if not entry.spooled:
                log.error(
                    "result not written anywhere at shutdown",
                    key=entry.row.key,
                    row=entry.row.to_json(),
                )
        if self._pending:
            log.warning("results left pending at shutdown", pending=len(self._pending))

    # -- in the worker thread -------------------------------------------------------------------

    def _spool_rows(self, entries: Iterable[_Entry]) -> set[str]:
        assert self.spool is not None
        spooled: set[str] = set()
        for entry in entries:
            try:
                self.spool.write(entry.row)
            except OSError as exc:
                log.warning("cannot spool a result", key=entry.row.key, error=str(exc))
                break  # the disk is full or read-only: the next rows would fail alike
            spooled.add(entry.row.key)
        return spooled

    def _store_rows(self, entries: Iterable[_Entry]) -> tuple[list[str], str | None]:
        stored: list[str] = []
        for entry in entries:
            row = entry.row
            try:
                self.store.add_serialized(row.key, row.row, run=row.run, extra=row.extra)
            except WriteError as exc:
                return stored, f"{type(exc).__name__}: {exc}"
            stored.append(row.key)
            if self.spool is not None:
                try:
                    self.spool.remove(row.key)
                except OSError as exc:  # stored all the same; the next start skips it
                    log.warning("cannot remove a spool file", key=row.key, error=str(exc))
        return stored, None

    def _amendments_due(self) -> dict[str, Mapping[str, Any]]:
        """The amendments of rows that are in the store now."""
        return {k: v for k, v in self._amended.items() if k not in self._pending}

    def _set_extras(self, extras: Mapping[str, Mapping[str, Any]]) -> list[str]:
        """Set each stored row's extra; the keys done (a key with no stored row is done: it
        was never put, and there is nothing to amend). A failed write leaves the rest."""
        done: list[str] = []
        for key, extra in extras.items():
            try:
                if not self.store.set_extra(key, extra):
                    log.warning("amendment of a result that is not stored", key=key)
            except WriteError as exc:
                if key not in self._amend_failed:  # once per row, not once per retry
                    self._amend_failed.add(key)
                    log.warning("cannot amend a stored result yet", key=key, error=str(exc))
                break
            self._amend_failed.discard(key)
            done.append(key)
        return done

    # -- back on the caller's side --------------------------------------------------------------

    def _settle(self, batch: list[_Entry], stored: list[str], error: str | None) -> None:
        for entry in batch:
            entry.tried = True
        for key in stored:
            self._pending.pop(key, None)
        if error is None:
            if self._failing is not None:
                log.info("results store writable again", stored=len(stored))
            self._failing, self._delay, self._next_try = None, self._retry_s[0], 0.0
            return
        if self._failing is None:  # once per failure, not once per retry
            log.error("cannot write results; kept pending", error=error, pending=len(batch))
        self._failing = error
        self._next_try = self._timer() + self._delay
        self._delay = min(self._delay * 2, self._retry_s[1])

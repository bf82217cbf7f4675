"""The results store: one SQLite file (WAL), one row per finished negotiation (and one per
finished market, in a table of its own).

A row is written, and committed, as each negotiation finishes. Rows have a caller-chosen
``key`` (deterministic for tournaments, e.g. ``run/pairing/tier/index``): writing a key twice
keeps the first row, so a resumed run never duplicates a negotiation. Readers may open the file
while a writer is running. The file, its WAL and its shared-memory index are private to their
owner (0600, ``dealroom.store.private``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from dealroom.protocol.errors import DealroomError
from dealroom.protocol.market_referee import MarketRecord
from dealroom.protocol.record import NegotiationRecord
from dealroom.store.private import FILE_MODE, narrow, open_private

SCHEMA = """
CREATE TABLE IF NOT EXISTS negotiations (
    key          TEXT PRIMARY KEY,
    run          TEXT NOT NULL,
    buyer        TEXT NOT NULL,
    seller       TEXT NOT NULL,
    scenario_id  TEXT NOT NULL,
    tier         TEXT NOT NULL,
    status       TEXT NOT NULL,
    end_reason   TEXT NOT NULL,
    price        TEXT,
    record       TEXT NOT NULL,
    extra        TEXT NOT NULL DEFAULT '{}',
    finished_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS negotiations_run ON negotiations (run);
CREATE TABLE IF NOT EXISTS runs (
    run     TEXT PRIMARY KEY,
    config  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS markets (
    key          TEXT PRIMARY KEY,
    run          TEXT NOT NULL,
    seller       TEXT NOT NULL,
    buyers       TEXT NOT NULL,
    market_id    TEXT NOT NULL,
    tier         TEXT NOT NULL,
    status       TEXT NOT NULL,
    end_reason   TEXT NOT NULL,
    price        TEXT,
    record       TEXT NOT NULL,
    finished_at  TEXT NOT NULL,
    extra        TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS markets_run ON markets (run);
"""


PACE_ROWS = 50
"""A run's pace is read from its newest this many stored negotiations."""


@dataclass(frozen=True, slots=True)
class RunProgress:
    """How far a run is, from one read of the store (one SQL statement: one snapshot)."""

    stored: int
    deals: int
    last_at: float | None
    """When its newest negotiation was stored (epoch seconds, to the second); None if none."""
    pace_s: float | None
    """Mean seconds between its newest ``PACE_ROWS`` stored negotiations; None below two."""


class StoreError(DealroomError):
    """The file is not a dealroom results store, cannot be opened, or holds a row that cannot
    be read (a corrupted file, or a record that is not valid)."""

    kind = "store"


@dataclass(frozen=True, slots=True)
class StoredNegotiation:
    """One row: the record plus what was stored beside it (usage, errors, metadata)."""

    key: str
    run: str
    record: NegotiationRecord
    extra: Mapping[str, Any]
    finished_at: str


@dataclass(frozen=True, slots=True)
class SerializedRecord:
    """A record as the store writes it: its JSON and the columns kept beside it. Cheap to send
    between processes (a pickled record costs several times more)."""

    buyer: str
    seller: str
    scenario_id: str
    tier: str
    status: str
    end_reason: str
    price: str | None
    record_json: str

    @classmethod
    def of(cls, record: NegotiationRecord) -> SerializedRecord:
        """Serialise a record."""
        outcome = record.outcome
        return cls(
            buyer=record.buyer,
            seller=record.seller,
            scenario_id=record.scenario.id,
            tier=record.scenario.tier,
            status=outcome.status,
            end_reason=outcome.end_reason,
            price=None if outcome.price is None else str(outcome.price),
            record_json=record.model_dump_json(),
        )


def _created(path: Path, options: dict[str, Any], busy_s: float) -> sqlite3.Connection:
    """A connection to the store at ``path``, created (0600) if new, in WAL mode with its schema.

    Two processes opening a new file at once (the workers of a cluster) can meet SQLite's lock
    while one switches the file to WAL, where SQLite answers "database is locked" at once
    instead of waiting ``busy_s`` (its busy handler is not called there): such a clash is
    retried until ``busy_s`` is spent, as any other lock is waited for.
    """
    os.close(open_private(path, truncate=False))  # SQLite gives its WAL and index this mode
    deadline = time.monotonic() + busy_s
    while True:
        db = sqlite3.connect(path, **options)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(SCHEMA)
            if not _has_market_extra(db):  # a store from before model sellers
                db.execute("ALTER TABLE markets ADD COLUMN extra TEXT NOT NULL DEFAULT '{}'")
            for suffix in ("-wal", "-shm"):  # left wider by an earlier version
                narrow(Path(f"{path}{suffix}"), FILE_MODE)
            return db
        except sqlite3.OperationalError as exc:
            db.close()
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(0.02)


def _has_market_extra(db: sqlite3.Connection) -> bool:
    """True if the markets table has its ``extra`` column (added with model sellers)."""
    return any(row[1] == "extra" for row in db.execute("PRAGMA table_info(markets)"))


class ResultsStore:
    """A SQLite results store. Use as a context manager, or call ``close()``.

    One connection, usable from any thread (a server writes from worker threads, so that a slow
    or locked file never blocks its event loop); calls are serialised by a lock.
    """

    def __init__(self, path: str | Path, *, create: bool = True, busy_s: float = 30.0) -> None:
        """Open (and with ``create``, create) a store. ``create=False`` only reads: it never
        writes to a file that is not already a dealroom results store. ``busy_s``: how long a
        call waits for another process's lock on the file before it fails."""
        self.path = Path(path)
        self._lock = threading.RLock()
        options: dict[str, Any] = {
            "timeout": busy_s,
            "isolation_level": None,
            "check_same_thread": False,
        }
        try:
            if create:
                self._db = _created(self.path, options, busy_s)
            else:
                uri = f"{self.path.resolve().as_uri()}?mode=ro"
                self._db = sqlite3.connect(uri, uri=True, **options)
                tables = {
                    name
                    for (name,) in self._db.execute(
                        "SELECT name FROM sqlite_master WHERE type = 'table'"
                    )
                }
                if not {"negotiations", "runs"} <= tables:
                    self._db.close()
                    raise StoreError(f"{self.path}: not a dealroom results store")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a results store ({exc})") from None

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

    def add(
        self,
        key: str,
        record: NegotiationRecord,
        *,
        run: str = "",
        extra: Mapping[str, Any] | None = None,
    ) -> bool:
        """Write one finished negotiation and commit. False if the key was already stored."""
        return self.add_serialized(key, SerializedRecord.of(record), run=run, extra=extra)

    def add_serialized(
        self,
        key: str,
        row: SerializedRecord,
        *,
        run: str = "",
        extra: Mapping[str, Any] | None = None,
    ) -> bool:
        """``add`` for a record serialised elsewhere (e.g. in the worker process that played it)."""
        with self._lock:
            return self._insert(key, row, run, extra)

    def _insert(
        self, key: str, row: SerializedRecord, run: str, extra: Mapping[str, Any] | None
    ) -> bool:
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO negotiations (key, run, buyer, seller, scenario_id, tier, "
            "status, end_reason, price, record, extra, finished_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                run,
                row.buyer,
                row.seller,
                row.scenario_id,
                row.tier,
                row.status,
                row.end_reason,
                row.price,
                row.record_json,
                json.dumps(dict(extra or {}), sort_keys=True),
                datetime.now(UTC).isoformat(timespec="seconds"),
            ),
        )
        return cursor.rowcount == 1

    def set_extra(self, key: str, extra: Mapping[str, Any]) -> bool:
        """Replace a stored negotiation's extra and commit (its record never changes). False
        if no negotiation of that key is stored."""
        with self._lock:
            cursor = self._db.execute(
                "UPDATE negotiations SET extra = ? WHERE key = ?",
                (json.dumps(dict(extra), sort_keys=True), key),
            )
            return cursor.rowcount == 1

    @contextmanager
    def _reading(self) -> Generator[None]:
        """Reading errors (a corrupted file, a row that is not a valid record) as StoreError."""
        try:
            with self._lock:
                yield
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot read the results store ({exc})") from None
        except ValueError as exc:  # a record or JSON column that does not parse
            reason = _first_line(exc)
            raise StoreError(f"{self.path}: a stored row is not valid ({reason})") from None

    def keys(self, run: str | None = None) -> set[str]:
        """Keys already stored (of one run, or all)."""
        with self._reading():
            if run is None:
                rows = self._db.execute("SELECT key FROM negotiations")
            else:
                rows = self._db.execute("SELECT key FROM negotiations WHERE run = ?", (run,))
            return {key for (key,) in rows}

    def __contains__(self, key: object) -> bool:
        with self._reading():
            row = self._db.execute("SELECT 1 FROM negotiations WHERE key = ?", (key,)).fetchone()
        return row is not None

    def __len__(self) -> int:
        with self._reading():
            (count,) = self._db.execute("SELECT COUNT(*) FROM negotiations").fetchone()
        return int(count)

    def get(self, key: str) -> StoredNegotiation | None:
        """One stored negotiation by key."""
        with self._reading():
            row = self._db.execute(
                "SELECT key, run, record, extra, finished_at FROM negotiations WHERE key = ?",
                (key,),
            ).fetchone()
            return None if row is None else _row(row)

    def iter(self, run: str | None = None) -> Iterator[StoredNegotiation]:
        """Every stored negotiation (of one run, or all), in key order."""
        query = "SELECT key, run, record, extra, finished_at FROM negotiations"
        params: tuple[str, ...] = ()
        if run is not None:
            query += " WHERE run = ?"
            params = (run,)
        with self._reading():
            for row in self._db.execute(query + " ORDER BY key", params):
                yield _row(row)

    def set_run_config(self, run: str, config: Mapping[str, Any], *, replace: bool = False) -> None:
        """Remember how a run was configured (first write wins, unless ``replace``)."""
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        with self._lock:
            self._db.execute(
                f"{verb} INTO runs (run, config) VALUES (?, ?)",
                (run, json.dumps(dict(config), sort_keys=True)),
            )

    def runs(self) -> dict[str, int]:
        """Every run with stored negotiations or a recorded configuration, and its row count."""
        with self._reading():
            counts = dict(self._db.execute("SELECT run, COUNT(*) FROM negotiations GROUP BY run"))
            for (run,) in self._db.execute("SELECT run FROM runs"):
                counts.setdefault(run, 0)
        return {run: int(counts[run]) for run in sorted(counts)}

    def run_progress(self, run: str) -> RunProgress:
        """A run's stored negotiations, deals, and when and how fast the newest were written:
        one statement, so the counts and times agree (rows are appended in rowid order, which
        the run index reads newest first without a sort)."""
        with self._reading():
            stored, deals, last, oldest = self._db.execute(
                "SELECT COUNT(*), COALESCE(SUM(status = 'deal'), 0), MAX(finished_at), "
                "(SELECT MIN(finished_at) FROM (SELECT finished_at FROM negotiations "
                "WHERE run = ?1 ORDER BY rowid DESC LIMIT ?2)) FROM negotiations WHERE run = ?1",
                (run, PACE_ROWS),
            ).fetchone()
        stored = int(stored)
        last_at = None if last is None else datetime.fromisoformat(last).timestamp()
        pace = None
        if last_at is not None and stored >= 2:
            span = last_at - datetime.fromisoformat(oldest).timestamp()
            pace = span / (min(stored, PACE_ROWS) - 1)
        return RunProgress(stored=stored, deals=int(deals), last_at=last_at, pace_s=pace)

    # -- markets (one seller, N buyers: dealroom.protocol.market) ----------------------------

    def add_market(
        self,
        key: str,
        record: MarketRecord,
        *,
        run: str = "",
        extra: Mapping[str, Any] | None = None,
    ) -> bool:
        """Write one finished market, with what is kept beside it (a model seller's usage,
        conversation and error: ``{"seller": {...}}``), and commit. False if the key was
        already stored."""
        outcome = record.outcome
        with self._lock:
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO markets (key, run, seller, buyers, market_id, tier, "
                "status, end_reason, price, record, finished_at, extra) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    run,
                    record.seller,
                    json.dumps(record.buyers),
                    record.scenario.id,
                    record.scenario.base.tier,
                    outcome.status,
                    outcome.end_reason,
                    None if outcome.price is None else str(outcome.price),
                    record.model_dump_json(),
                    datetime.now(UTC).isoformat(timespec="seconds"),
                    json.dumps(dict(extra or {}), sort_keys=True),
                ),
            )
            return cursor.rowcount == 1

    def market_extras(self, run: str | None = None) -> dict[str, dict[str, Any]]:
        """What is kept beside each stored market that has anything (of one run, or all), by
        key; a store from before model sellers, opened read-only, has none."""
        with self._reading():
            if not _has_market_extra(self._db):
                return {}
            rows = self._market_rows("SELECT key, extra", run)
            return {key: extra for key, text in rows if (extra := dict(json.loads(text)))}

    def market_keys(self, run: str | None = None) -> set[str]:
        """Keys of the markets already stored (of one run, or all)."""
        return {key for key, _ in self._market_rows("SELECT key, NULL", run)}

    def market_sales(self, run: str | None = None) -> int:
        """Stored markets that sold (of one run, or all)."""
        return sum(status == "deal" for _, status in self._market_rows("SELECT key, status", run))

    def iter_markets(self, run: str | None = None) -> Iterator[tuple[str, MarketRecord]]:
        """Every stored market (of one run, or all) with its key, in key order."""
        for key, record in self._market_rows("SELECT key, record", run):
            yield key, MarketRecord.model_validate_json(record)

    def _market_rows(self, select: str, run: str | None) -> list[tuple[str, str]]:
        with self._reading():
            if not self._db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'markets'"
            ).fetchone():
                return []  # a store from before markets, opened read-only
            where, params = ("", ()) if run is None else (" WHERE run = ?", (run,))
            return list(self._db.execute(f"{select} FROM markets{where} ORDER BY key", params))

    def run_config(self, run: str) -> dict[str, Any] | None:
        """A run's configuration, if recorded."""
        with self._reading():
            row = self._db.execute("SELECT config FROM runs WHERE run = ?", (run,)).fetchone()
            return None if row is None else dict(json.loads(row[0]))


def _first_line(exc: Exception) -> str:
    lines = str(exc).splitlines()
    return " ".join(lines[:2]) if isinstance(exc, ValidationError) else (lines or [""])[0]


def _row(row: tuple[str, str, str, str, str]) -> StoredNegotiation:
    key, run, record, extra, finished_at = row
    return StoredNegotiation(
        key=key,
        run=run,
        record=NegotiationRecord.model_validate_json(record),
        extra=json.loads(extra),
        finished_at=finished_at,
    )

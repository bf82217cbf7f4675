"""The spool: finished negotiations not yet in the results store, one fsync'd file each.

A server writes a finished negotiation here first (a small JSON file, written to a temporary
name, fsync'd, renamed and its directory fsync'd), then into the store, then removes the file.
A file that is still here when the server starts again is written to the store then: the
store keeps the first row of a key, so a row spooled and stored both is never stored twice.
The spool lives next to the store: ``results.db`` spools into ``results.db.pending/`` (0700, its
files 0600: ``dealroom.store.private``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import structlog

from dealroom.store.private import open_private, private_dir
from dealroom.store.results import SerializedRecord

log = structlog.stdlib.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class PendingRow:
    """One finished negotiation on its way to the store: its key, run, row and extra."""

    key: str
    run: str
    row: SerializedRecord
    extra: Mapping[str, Any] = field(default_factory=dict[str, Any])

    def to_json(self) -> str:
        """The spool file's text."""
        body = {"key": self.key, "run": self.run, "row": asdict(self.row), "extra": self.extra}
        return json.dumps(body, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> PendingRow:
        """Read a spool file's text back; ValueError (or KeyError, TypeError) if it is not one."""
        body = json.loads(text)
        return cls(
            key=str(body["key"]),
            run=str(body["run"]),
            row=SerializedRecord(**body["row"]),
            extra=dict(body["extra"]),
        )


class Spool:
    """A directory of pending rows, one durable file per key."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    @classmethod
    def beside(cls, store_path: str | Path) -> Spool:
        """The spool of the store at ``store_path``: ``<store>.pending/``."""
        return cls(Path(f"{store_path}.pending"))

    def path(self, key: str) -> Path:
        """The file of one key (named by its digest: keys may hold any character)."""
        return self.directory / f"{hashlib.sha256(key.encode()).hexdigest()[:40]}.json"

    def write(self, pending: PendingRow) -> None:
        """Write one row durably (on disk when this returns); raises OSError if it cannot."""
        private_dir(self.directory, own=True)
        final = self.path(pending.key)
        temporary = final.with_suffix(".tmp")
        try:
            with os.fdopen(open_private(temporary), "w", encoding="utf-8") as out:
                out.write(pending.to_json())
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, final)
        except OSError:
            temporary.unlink(missing_ok=True)
            raise
        _fsync_directory(self.directory)

    def remove(self, key: str) -> None:
        """Forget one row (it is in the store now)."""
        self.path(key).unlink(missing_ok=True)

    def load(self) -> list[PendingRow]:
        """Every spooled row, oldest file first. A file that cannot be read is left in place
        (and logged): it is never deleted without having been stored."""
        if not self.directory.is_dir():
            return []
        rows: list[PendingRow] = []
        files = sorted(self.directory.glob("*.json"), key=lambda p: (p.stat().st_mtime_ns, p.name))
        for path in files:
            try:
                rows.append(PendingRow.from_json(path.read_text(encoding="utf-8")))
            except Exception as exc:  # one bad file (even nested too deep to parse) skips itself
                error = f"{type(exc).__name__}: {str(exc)[:200]}"
                log.error("unreadable spool file left in place", path=str(path), error=error)
        return rows


def _fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (POSIX; a no-op where directories cannot be
    opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

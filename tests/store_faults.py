"""Test doubles for a results store that fails on demand: a disk that can be made full.

``FailingStore`` and ``FailingSpool`` are the real store and spool, except that while their
``Disk`` is full every write raises what a full disk raises (SQLite's ``database or disk is
full``, ``ENOSPC``). ``FailingStore.inserts`` counts the rows each key really added.

Where the machine allows a mount (root, Linux), ``mount_tmpfs`` gives a real 1 MiB disk and
``fill`` fills it to the last byte.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dealroom.store.results import ResultsStore, SerializedRecord
from dealroom.store.spool import PendingRow, Spool
from dealroom.store.writer import ResultWriter


@dataclass
class Disk:
    """Full or not; the doubles on it fail while it is full."""

    full: bool = False


class FailingStore(ResultsStore):
    """A results store on ``disk``."""

    def __init__(self, path: str | Path, disk: Disk, **options: Any) -> None:
        super().__init__(path, **options)
        self.disk = disk
        self.attempts = 0
        self.inserts: Counter[str] = Counter()

    def add_serialized(
        self,
        key: str,
        row: SerializedRecord,
        *,
        run: str = "",
        extra: Mapping[str, Any] | None = None,
    ) -> bool:
        self.attempts += 1
        if self.disk.full:
            raise sqlite3.OperationalError("database or disk is full")
        added = super().add_serialized(key, row, run=run, extra=extra)
        if added:
            self.inserts[key] += 1
        return added

    def set_extra(self, key: str, extra: Mapping[str, Any]) -> bool:
        if self.disk.full:
            raise sqlite3.OperationalError("database or disk is full")
        return super().set_extra(key, extra)


class FailingSpool(Spool):
    """A spool on ``disk``."""

    def __init__(self, directory: str | Path, disk: Disk) -> None:
        super().__init__(directory)
        self.disk = disk

    def write(self, pending: PendingRow) -> None:
        if self.disk.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        super().write(pending)


def failing_writer(path: Path, disk: Disk, *, spool: bool = True) -> ResultWriter:
    """A writer whose store (at ``path``) and spool (beside it) are both on ``disk``."""
    store = FailingStore(path, disk)
    return ResultWriter(store, FailingSpool(f"{path}.pending", disk) if spool else None)


def mount_tmpfs(where: Path) -> bool:
    """Mount a 1 MiB tmpfs at ``where`` (created); False where the machine does not allow it."""
    if sys.platform != "linux" or os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], capture_output=True
    )
    return mounted.returncode == 0


def unmount(where: Path) -> None:
    """Undo ``mount_tmpfs``."""
    subprocess.run(["umount", "-l", str(where)], check=False)


def fill(where: Path) -> Path:
    """Fill the disk of directory ``where`` to the last byte; the file that fills it."""
    filler = where / "filler"
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError:  # full
            pass
    return filler

"""A results store, its WAL and index, and its spool are private to their owner: files 0600,
the directories dealroom makes for them 0700, whatever the umask (a seat's host may let the
agent read the disk)."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from dealroom.engine.match import play
from dealroom.play.registry import resolve
from dealroom.protocol.generator import scenario_at
from dealroom.store.private import private_dir
from dealroom.store.results import ResultsStore, SerializedRecord
from dealroom.store.spool import PendingRow, Spool


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@contextlib.contextmanager
def umask(value: int) -> Iterator[None]:
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)


def a_row(key: str) -> PendingRow:
    scenario = scenario_at(1, 0, "mid")
    record = play(scenario, resolve("hardliner"), resolve("conceder"))
    return PendingRow(key, "run", SerializedRecord.of(record))


def test_a_store_its_wal_and_its_spool_are_created_private_under_any_umask(
    tmp_path: Path,
) -> None:
    path = tmp_path / "results.db"
    with umask(0):
        store = ResultsStore(path)
        row = a_row("k/1")
        store.add_serialized(row.key, row.row)
        spool = Spool.beside(path)
        spool.write(a_row("k/2"))
        assert mode(path) == 0o600
        for suffix in ("-wal", "-shm"):
            assert mode(Path(f"{path}{suffix}")) == 0o600, suffix
        assert mode(spool.directory) == 0o700
        assert {mode(p) for p in spool.directory.iterdir()} == {0o600}
        store.close()


def test_an_older_world_readable_store_and_spool_are_narrowed_when_opened(
    tmp_path: Path,
) -> None:
    path = tmp_path / "results.db"
    ResultsStore(path).close()
    spool = Spool.beside(path)
    spool.directory.mkdir()
    os.chmod(path, 0o644)
    os.chmod(spool.directory, 0o755)
    with ResultsStore(path):
        assert mode(path) == 0o600
    spool.write(a_row("k/1"))
    assert mode(spool.directory) == 0o700


def test_the_directories_dealroom_creates_are_0700_each(tmp_path: Path) -> None:
    with umask(0):
        private_dir(tmp_path / "a" / "b" / "c")
    assert [mode(tmp_path / p) for p in ("a", "a/b", "a/b/c")] == [0o700] * 3
    os.chmod(tmp_path / "a", 0o755)
    private_dir(tmp_path / "a")  # not dealroom's own: a directory the user named stays
    assert mode(tmp_path / "a") == 0o755

"""Opening the results store: several processes (a cluster's workers) may create it at once."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from dealroom.store.results import ResultsStore, StoreError


def test_many_connections_creating_one_new_store_at_once_all_open_it(tmp_path: Path) -> None:
    # SQLite answers "database is locked" at once, without waiting, to a connection that meets
    # another switching a new file to WAL: it failed about one trial in fifteen of six.
    failures: list[str] = []
    for trial in range(40):
        path = tmp_path / f"r{trial}.db"
        barrier = threading.Barrier(8)

        def open_it(path: Path = path, barrier: threading.Barrier = barrier) -> None:
            barrier.wait(10)
            try:
                ResultsStore(path, busy_s=10).close()
            except StoreError as exc:
                failures.append(str(exc))

        threads = [threading.Thread(target=open_it) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert failures == []
    with ResultsStore(tmp_path / "r0.db", create=False) as store:
        assert len(store) == 0


def test_two_processes_creating_one_new_store_at_once_both_open_it(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    opener = (
        "import sys; from dealroom.store.results import ResultsStore; "
        "ResultsStore(sys.argv[1], busy_s=10).close()"
    )
    processes = [
        subprocess.Popen([sys.executable, "-c", opener, str(path)], stderr=subprocess.PIPE)
        for _ in range(4)
    ]
    errors = [p.communicate(timeout=60)[1].decode() for p in processes]
    assert [p.returncode for p in processes] == [0, 0, 0, 0], errors

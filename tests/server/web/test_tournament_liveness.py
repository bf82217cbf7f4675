"""The tournament page tells a run being written from one whose writer is gone (issue 26): from
its stored negotiations' times against its recent pace, with the counts from the same read."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dealroom.play.backends import SerialBackend
from dealroom.play.tournament import Tournament, TournamentConfig
from dealroom.server.web.tournament import (
    QUIET_MIN_S,
    QUIET_PACES,
    _Reports,  # pyright: ignore[reportPrivateUsage]
    liveness,
    runs_view,
)
from dealroom.store.results import ResultsStore, RunProgress

PLANNED = 8


@pytest.fixture
def store(tmp_path: Path):
    """A store holding a finished 2-negotiation run ``cup``, and ``big``: 3 of its 8 planned
    negotiations (copies of cup's), as a tournament killed mid-way leaves it. Seed 1 makes both
    of cup's negotiations deals (a fresh secret makes none about half the time), so that the
    deal counts below grow with the stored rows."""
    with ResultsStore(tmp_path / "results.db") as store:
        config = TournamentConfig(agents=("linear", "conceder"), tiers=("low",), per_pair=1, seed=1)
        Tournament(config, store, "cup").run(backend=SerialBackend())
        assert all(row.record.outcome.status == "deal" for row in store.iter("cup"))
        store.set_run_config("big", {**(store.run_config("cup") or {}), "per_pair": 4})
        add(store, 3)
        yield store


def add(store: ResultsStore, n: int) -> None:
    rows = list(store.iter("cup"))
    start = store.run_progress("big").stored
    for i in range(start, start + n):
        store.add(f"big/{i}", rows[i % len(rows)].record, run="big")


def big(store: ResultsStore, now: float) -> dict[str, object]:
    return next(r for r in runs_view(store, now) if r["run"] == "big")


def test_a_run_whose_writer_is_gone_reads_stopped_and_new_writes_read_running(
    store: ResultsStore,
) -> None:
    written = time.time()
    fresh = big(store, written)
    assert (fresh["stored"], fresh["planned"], fresh["state"]) == (3, PLANNED, "running")
    later = written + QUIET_MIN_S + 5
    stopped = big(store, later)
    assert stopped["state"] == "stopped"
    assert isinstance(stopped["last_result_s"], int) and stopped["last_result_s"] >= QUIET_MIN_S
    clock = [later]
    view = _Reports(clock=lambda: clock[0]).view(store, "big")
    assert view is not None and view["state"] == "stopped" and view["stored"] == 3
    add(store, 2)  # resumed: a new writer stores more
    clock[0] = time.time()
    assert big(store, clock[0])["state"] == "running"
    assert big(store, clock[0])["stored"] == 5
    finished = next(r for r in runs_view(store, later) if r["run"] == "cup")
    assert finished["state"] == "finished"  # all planned: never "stopped", however old


def test_the_deal_count_comes_from_the_same_read_as_the_progress_not_the_report(
    store: ResultsStore,
) -> None:
    ticks = iter(range(1_000_000))
    reports = _Reports(timer=lambda: float(next(ticks)))  # each build "takes" 2 s: kept a while
    first = reports.view(store, "big")
    assert first is not None and (first["stored"], first["report_of"]) == (3, 3)
    add(store, 4)
    grown = reports.view(store, "big")
    assert grown is not None and (grown["stored"], grown["report_of"]) == (7, 3)
    deals = sum(row.record.outcome.status == "deal" for row in store.iter("big"))
    assert grown["deals"] == deals == store.run_progress("big").deals
    assert deals > first["deals"]  # the report's own count (3 rows) would be stale


def test_quiet_is_measured_against_the_runs_recent_pace() -> None:
    slow = RunProgress(stored=100, deals=40, last_at=1_000.0, pace_s=30.0)
    quiet = QUIET_PACES * 30.0  # an LLM run: a result every 30 s
    assert liveness(slow, 1_000, 1_000.0 + quiet - 1)["state"] == "running"
    assert liveness(slow, 1_000, 1_000.0 + quiet + 1)["state"] == "stopped"
    fast = RunProgress(stored=100, deals=40, last_at=1_000.0, pace_s=0.01)
    assert liveness(fast, 1_000, 1_000.0 + QUIET_MIN_S + 1)["state"] == "stopped"
    assert liveness(fast, None, 1_000.0 + QUIET_MIN_S + 1)["state"] == "idle"  # no plan
    empty = RunProgress(stored=0, deals=0, last_at=None, pace_s=None)
    assert liveness(empty, 1_000, 1_000.0)["state"] == "empty"


def test_a_runs_pace_is_read_from_its_newest_rows(store: ResultsStore) -> None:
    progress = store.run_progress("big")
    assert progress.stored == 3 and progress.last_at is not None
    assert progress.pace_s is not None and 0 <= progress.pace_s <= 2
    assert store.run_progress("nope") == RunProgress(0, 0, None, None)

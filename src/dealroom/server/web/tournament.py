"""The tournament page's data: runs of the server's results store, their progress and their
report, built by the report's own code (``dealroom.analysis.report.build_report``; the plots
are ``dealroom.analysis.report_html``'s SVG documents, the page shows each as an image).

A tournament writes into a results store as it plays (``dealroom tournament --out FILE``);
pointed at the server's store (``dealroom serve --results FILE``), the page follows it live.
Progress is read at every request; a run's report is built again only when the run has grown,
and while it grows at most once per ``REBUILD_FACTOR`` times the last build took (reading and
scoring 15,000 negotiations takes seconds), so an open page never keeps the server busy. The
view says which report it shows (``report_of``: its negotiations).

Whether a run is still being written is read from its stored negotiations (``liveness``): a
run whose newest result is older than ``QUIET_PACES`` times its recent pace (and at least
``QUIET_MIN_S``) has stopped (its writer was killed, or stopped at a budget); new results make
it running again. The counts shown beside the progress (stored, deals) come from the same read
(``ResultsStore.run_progress``), never from the report.
Admin token only: a store holds every finished negotiation with both private values.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from dealroom.analysis.report import USAGE_COLUMNS, build_report, usage_cells, usage_totals
from dealroom.analysis.report_html import agent_colors, report_plots
from dealroom.server.rooms import RoomRegistry
from dealroom.server.web.routes import NO_STORE, error
from dealroom.store.results import ResultsStore, RunProgress, StoreError

RESAMPLES = 200
"""Bootstrap resamples for the page's intervals (the printed report uses more)."""
SAMPLES = 4
"""Offer trajectories shown (one scenario, played by different pairings)."""
REBUILD_FACTOR = 5.0
"""While a run grows, its report is rebuilt at most once per this many times its last build."""
QUIET_MIN_S = 15.0
"""A run with no new result for this long (at least) is no longer running."""
QUIET_PACES = 10.0
"""... nor one quiet for this many times its recent seconds per result (an LLM tournament's
negotiations take minutes each)."""

EpochClock = Callable[[], float]
"""Epoch seconds now (``time.time``; the store's times are epoch seconds)."""


def planned(config: Mapping[str, Any] | None) -> int | None:
    """How many negotiations a run's recorded tournament configuration plays (None if unknown)."""
    if not config or not {"agents", "tiers", "per_pair"} <= config.keys():
        return None
    n = len(config["agents"])
    pairs = n * n if config.get("self_play") else n * (n - 1)
    return pairs * len(config["tiers"]) * int(config["per_pair"])


def liveness(progress: RunProgress, planned: int | None, now: float) -> dict[str, Any]:
    """The progress fields of a run's view: ``stored``, ``deals``, ``planned``, ``state``
    (``finished``: all planned stored; ``running``: a result within ``quiet_after_s``;
    ``stopped``: planned but quiet longer; ``idle``: quiet, with no plan to finish; ``empty``:
    nothing stored yet), ``last_result_s`` (seconds since the newest result), ``pace_s``."""
    last = progress.last_at
    age = None if last is None else max(0.0, now - last)
    pace = progress.pace_s
    quiet = max(QUIET_MIN_S, QUIET_PACES * pace) if pace is not None else QUIET_MIN_S
    if planned is not None and progress.stored >= planned:
        state = "finished"
    elif age is None:
        state = "empty"
    elif age <= quiet:
        state = "running"
    else:
        state = "stopped" if planned is not None else "idle"
    return {
        "stored": progress.stored,
        "planned": planned,
        "deals": progress.deals,
        "state": state,
        "last_result_s": None if age is None else round(age),
        "pace_s": None if pace is None else round(pace, 3),
        "quiet_after_s": round(quiet),
    }


def runs_view(store: ResultsStore, now: float) -> list[dict[str, Any]]:
    """Every run: its name and progress (``liveness``)."""
    return [
        {"run": run, **liveness(store.run_progress(run), planned(store.run_config(run)), now)}
        for run in sorted(store.runs())
    ]


def run_view(store: ResultsStore, run: str) -> dict[str, Any] | None:
    """One run's progress and report (leaderboard, head to head, overall, plots, per-model
    usage), or None if the store has no such run."""
    rows = list(store.iter(run))
    config = store.run_config(run)
    if not rows and config is None:
        return None
    report = build_report(rows, run=run, config=config, resamples=RESAMPLES, samples=SAMPLES)
    shown = report.model_dump(
        mode="json", include={"agents", "overall", "leaderboard", "head_to_head"}
    )
    usage = report.usage
    models = None
    if usage is not None:
        models = {
            "columns": ["agent", *USAGE_COLUMNS],
            "rows": [[row.agent, *usage_cells(row)] for row in usage.models],
            "totals": usage_totals(usage),
        }
    return {
        "run": run,
        "stored": len(rows),
        "planned": planned(config),
        "deals": sum(r.record.outcome.status == "deal" for r in rows),
        **shown,
        "colors": agent_colors(report.agents),
        "plots": report_plots(report),
        "models": models,
    }


@dataclass(frozen=True, slots=True)
class _Built:
    view: dict[str, Any]
    at: float
    seconds: float


class _Reports:
    """The last report built for each run, rebuilt as the module's docstring says."""

    def __init__(
        self, timer: Callable[[], float] = time.monotonic, clock: EpochClock = time.time
    ) -> None:
        self._timer = timer
        self.clock = clock
        self._built: dict[str, _Built] = {}
        self._lock = threading.Lock()  # one build at a time (reads run in worker threads)

    def view(self, store: ResultsStore, run: str) -> dict[str, Any] | None:
        if run not in store.runs():
            return None
        progress = store.run_progress(run)
        stored = progress.stored
        with self._lock:
            built = self._built.get(run)
            if built is None or self._stale(built, stored):
                start = self._timer()
                view = run_view(store, run)
                if view is None:
                    return None
                built = _Built(view, self._timer(), self._timer() - start)
                self._built[run] = built
        live = liveness(progress, built.view["planned"], self.clock())
        return {**built.view, **live, "report_of": built.view["stored"]}

    def _stale(self, built: _Built, stored: int) -> bool:
        if stored == built.view["stored"]:
            return False
        return self._timer() - built.at >= REBUILD_FACTOR * built.seconds


class TournamentApi:
    """GET /web/api/runs and /web/api/runs/{run}, read in a worker thread."""

    def __init__(self, registry: RoomRegistry, admin: Callable[[Request], Response | None]):
        self.registry = registry
        self.admin = admin
        self.reports = _Reports()

    def _path(self) -> Path | None:
        writer = self.registry.writer
        return None if writer is None else writer.store.path

    async def _read(self, request: Request, read: Callable[[ResultsStore], Any]) -> Response:
        if (refused := self.admin(request)) is not None:
            return refused
        path = self._path()
        if path is None:
            return error(404, "this server keeps no results store")

        def work() -> Any:
            with ResultsStore(path, create=False) as store:
                return read(store)

        try:
            body = await anyio.to_thread.run_sync(work)
        except StoreError as exc:
            return error(503, str(exc))
        if body is None:
            return error(404, "no such run")
        return JSONResponse(body, headers=NO_STORE)

    async def runs(self, request: Request) -> Response:
        """Every run of the store."""
        now = self.reports.clock
        return await self._read(request, lambda store: {"runs": runs_view(store, now())})

    async def run(self, request: Request) -> Response:
        """One run."""
        run = str(request.path_params["run"])
        return await self._read(request, lambda store: self.reports.view(store, run))

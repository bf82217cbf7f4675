"""The tournament page's data: runs of the server's results store, their progress and their
leaderboard, built by the report's own code (``dealroom.analysis.report.build_report``).

A tournament writes into a results store as it plays (``dealroom tournament --out FILE``);
pointed at the server's store (``dealroom serve --results FILE``), the page follows it live.
Admin token only: a store holds every finished negotiation with both private values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from dealroom.analysis.report import build_report
from dealroom.server.rooms import RoomRegistry
from dealroom.server.web.routes import NO_STORE, error
from dealroom.store.results import ResultsStore, StoreError

RESAMPLES = 200
"""Bootstrap resamples for the page's intervals (the printed report uses more)."""


def planned(config: Mapping[str, Any] | None) -> int | None:
    """How many negotiations a run's recorded tournament configuration plays (None if unknown)."""
    if not config or not {"agents", "tiers", "per_pair"} <= config.keys():
        return None
    n = len(config["agents"])
    pairs = n * n if config.get("self_play") else n * (n - 1)
    return pairs * len(config["tiers"]) * int(config["per_pair"])


def runs_view(store: ResultsStore) -> list[dict[str, Any]]:
    """Every run: its name, stored negotiations and planned total."""
    return [
        {"run": run, "stored": count, "planned": planned(store.run_config(run))}
        for run, count in sorted(store.runs().items())
    ]


def run_view(store: ResultsStore, run: str) -> dict[str, Any] | None:
    """One run's progress and report (leaderboard, head to head, overall), or None."""
    rows = list(store.iter(run))
    config = store.run_config(run)
    if not rows and config is None:
        return None
    report = build_report(rows, run=run, config=config, resamples=RESAMPLES, samples=0)
    shown = report.model_dump(
        mode="json", include={"agents", "overall", "leaderboard", "head_to_head"}
    )
    deals = sum(r.record.outcome.status == "deal" for r in rows)
    return {
        "run": run,
        "stored": len(rows),
        "planned": planned(config),
        "deals": deals,
        **shown,
    }


class TournamentApi:
    """GET /web/api/runs and /web/api/runs/{run}, read in a worker thread."""

    def __init__(self, registry: RoomRegistry, admin: Callable[[Request], Response | None]):
        self.registry = registry
        self.admin = admin

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
        return await self._read(request, lambda store: {"runs": runs_view(store)})

    async def run(self, request: Request) -> Response:
        """One run."""
        run = str(request.path_params["run"])
        return await self._read(request, lambda store: run_view(store, run))

"""How far a tournament run is (``Progress``), and what one session may spend on models
(``Budget``): of negotiations (``dealroom tournament``) and of markets (``dealroom markets``)
alike."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dealroom.play.jobs import Played


@dataclass(slots=True)
class Progress:
    """How far a run is: counts for a progress bar and the final summary."""

    total: int
    """Negotiations of the whole tournament."""
    skipped: int = 0
    """Already in the store when this session started."""
    done: int = 0
    """Played in this session."""
    deals: int = 0
    """Deals among those played in this session."""
    skipped_deals: int = 0
    """Deals among those already in the store."""
    new_rows: int = 0
    """Rows this session wrote (fewer than ``done`` only if someone else wrote the same keys)."""
    failures: int = 0
    """Negotiations of this session in which a player failed (its error is stored)."""
    requests: int = 0
    """Model requests of this session's negotiations (successful calls and failed attempts)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    """Cost of this session's negotiations (seats without prices count nothing)."""
    stopped: str | None = None
    """Why the run stopped before playing every pending negotiation (a budget), else None."""

    @property
    def remaining(self) -> int:
        """Still to play."""
        return self.total - self.skipped - self.done

    @property
    def finished(self) -> int:
        """Stored, by this session or an earlier one."""
        return self.skipped + self.done

    @property
    def finished_deals(self) -> int:
        """Deals among ``finished``."""
        return self.skipped_deals + self.deals

    def count(self, played: Played) -> None:
        """Add one finished negotiation."""
        self.add(
            deal=played.row.status == "deal",
            failed=bool(played.extra.get("errors")),
            seats=played.extra.get("players", {}).values(),
        )

    def add(self, *, deal: bool, failed: bool, seats: Iterable[Mapping[str, Any]]) -> None:
        """Add one finished game (a negotiation, or a market: a sale is its deal): whether a
        player failed, and what each of its model seats reported."""
        self.done += 1
        self.deals += deal
        self.failures += failed
        for data in seats:
            self.requests += int(data.get("model_calls", 0)) + int(data.get("failed_attempts", 0))
            self.input_tokens += int(data.get("input_tokens", 0))
            self.output_tokens += int(data.get("output_tokens", 0))
            self.cost_usd += float(data.get("cost_usd") or 0.0)


ProgressCallback = Callable[[Progress], None]


@dataclass(frozen=True, slots=True)
class Budget:
    """What one session (one ``run``) may spend on models.

    The rule: before each negotiation starts, the requests (model calls, failed attempts
    included) and the cost of the negotiations this session has finished are added up; once
    either reaches its limit, no new negotiation starts, those in flight finish and are stored,
    and the run returns with ``Progress.stopped`` set. So a run overshoots by at most what the
    negotiations in flight spend. On a backend that plays seats (Ray) the unit is a task: the
    check is made as each task returns, no new task starts once the limit is reached, and the
    tasks in flight finish and are stored. A resumed run is a new session with its own budget:
    it plays on past the point where the last one stopped. In a tournament of markets
    (``dealroom.play.market_tournament``) a market is the unit, checked as each model seller's
    market would start.
    """

    max_cost_usd: float | None = None
    max_requests: int | None = None

    def reached(self, progress: Progress) -> str | None:
        """Why no new negotiation may start, or None."""
        if self.max_cost_usd is not None and progress.cost_usd >= self.max_cost_usd:
            return f"the cost limit of ${self.max_cost_usd:g} was reached"
        if self.max_requests is not None and progress.requests >= self.max_requests:
            return f"the limit of {self.max_requests:,} model calls was reached"
        return None


NO_BUDGET = Budget()

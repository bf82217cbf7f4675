"""A room's series: its negotiations one after another, which one is current, how many have
finished, and whether (and when) the next may start.

The series knows negotiations only by their number and whether they are open; the room builds
each one (``start``) from the scenario its source gives (a bilateral ``Scenario``, or a market
room's ``MarketScenario``: ``dealroom.server.market_series``), so the rules of the sequence are
tested apart from the negotiations and hold for bilateral rooms and market rooms alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from dealroom.protocol import SessionErrorCode
from dealroom.server.pacing import Pace
from dealroom.server.room_error import RoomError


class Numbered(Protocol):
    """What the series reads of a negotiation."""

    @property
    def number(self) -> int:
        """Its place in the series, from 1."""
        ...

    @property
    def is_open(self) -> bool:
        """True until it ends."""
        ...


N = TypeVar("N", bound=Numbered, covariant=True)
S = TypeVar("S")

TWO_CLIENTS = (
    "This room plays one negotiation between two clients; ask the organiser for a new room."
)
"""Why a bilateral room with two client seats starts no next negotiation."""


class Series(Generic[N, S]):
    """The negotiations of a room, in order; the first starts when the series is built.

    ``scenarios(i)`` is the scenario of the i-th negotiation (from 0), None past the last."""

    def __init__(
        self,
        scenarios: Callable[[int], S | None],
        *,
        available: bool,
        start: Callable[[int, S], N],
        pace: Pace,
        timer: Callable[[], float],
        unavailable: str = TWO_CLIENTS,
        noun: str = "negotiation",
    ) -> None:
        self.available = available
        """True when new_negotiation is offered (one client seat, the others played in-house)."""
        self.unavailable = unavailable
        """Why no next negotiation starts where the series is not ``available`` (one line)."""
        self.noun = noun
        """What the refusals call one of its negotiations (a market room's: ``market``)."""
        self.finished = 0
        """How many negotiations of the series have finished (and been handed to the writer)."""
        self._scenarios = scenarios
        self._start_one = start
        self._pace = pace
        self._timer = timer
        self._current = self._start(1)

    @property
    def current(self) -> N:
        """The negotiation being played (or the last one, once it has ended)."""
        return self._current

    def can_start_next(self) -> bool:
        """True when ``start_next`` would succeed now (pacing aside)."""
        current = self._current
        return (
            self.available and not current.is_open and self._scenarios(current.number) is not None
        )

    def start_next(self, *, paced: bool = False) -> N:
        """Start the next negotiation; ``paced`` (a seat's call, not a replay): within the
        pace's starts a minute. Raises RoomError when it cannot start now."""
        if not self.available:
            raise RoomError(SessionErrorCode.SERIES_UNAVAILABLE, self.unavailable)
        if self._current.is_open:
            raise RoomError(
                SessionErrorCode.NEGOTIATION_RUNNING,
                f"The current {self.noun} is still running; finish it (or walk_away) first.",
            )
        if paced and (too_soon := self._pace.refusal(self._timer())):
            raise RoomError(SessionErrorCode.TOO_MANY_NEGOTIATIONS, too_soon)
        self._current = self._start(self._current.number + 1)
        self._pace.started(self._timer())
        return self._current

    def finish(self, number: int) -> bool:
        """Count negotiation ``number`` as finished: True the first time it is handed over,
        False however often again."""
        if number <= self.finished:
            return False
        self.finished = number
        return True

    def _start(self, number: int) -> N:
        scenario = self._scenarios(number - 1)
        if scenario is None:
            raise RoomError(
                SessionErrorCode.SERIES_OVER,
                f"The series is over: all {number - 1} scenarios have been played.",
            )
        return self._start_one(number, scenario)

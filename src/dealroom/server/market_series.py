"""A market room's series: its markets one after another, as a bilateral house room plays its
negotiations (``dealroom.server.series.Series``, the one home of the sequence's rules).

A market room whose one client seat is the only seat played from outside (the others house
agents or in-process ``llm:`` players) plays ``negotiations`` markets (default: the server's
``max_series``): ``new_negotiation`` starts the next once the current one has ended, on the next
market of the room's secret (``market_room.market_of``), each a fresh ``MarketRoomServed``
(number N, key ``ROOM/N``) with fresh house agents and players (their seeds from the market's
id). A room with several client seats plays one market (``check_series_request``;
``new_negotiation`` is refused ``series_unavailable``, as in a bilateral room of two clients).

A client seat's message budget (``RoomLimits.message_chars_per_series``) runs over the whole
series, as a bilateral seat's does; the room's pace (``negotiations_per_minute``) bounds its
starts. Each finished market counts for the series (``finished``, the client seat's total
surplus and, for a buyer, its last results) once it has ended, whether or not the store holds it
yet: a market whose write failed stays pending beside the next ones, tried again by the reaper's
``tick`` and every ``new_negotiation``, and is stored once.

The journal is the room's (``dealroom.server.market_journal``): each market's inputs under its
number ``n``, and ``["start"]`` as market N >= 2 starts, so that a restored room is at the same
market, in the same state.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

import anyio
import structlog

from dealroom.protocol import AgentFactory, RoomRequest, SeriesResult
from dealroom.protocol.market import MarketAgentFactory, MarketScenario
from dealroom.protocol.wire import SeriesTally
from dealroom.server.journal import Op, RoomJournal
from dealroom.server.market_room import (
    SELLER,
    MarketPlayer,
    MarketRoomServed,
    market_of,
    open_market,
)
from dealroom.server.negotiation import DEFAULT_LIMITS, RoomLimits
from dealroom.server.pacing import Pace
from dealroom.server.room_seats import RECENT_RESULTS
from dealroom.server.series import Series
from dealroom.store.writer import ResultWriter

log = structlog.stdlib.get_logger(__name__)

ONE_MARKET = "This room plays one market among several clients; ask the organiser for a new room."
"""Why a market room with several client seats starts no next market."""

OpenMarket = Callable[[int, MarketScenario], MarketRoomServed]
"""Opens market ``number`` of a room on the given market (``market_room.open_market``)."""


def client_seat_count(request: RoomRequest) -> int:
    """How many of a market room's seats its request leaves to clients (every seat that is no
    house agent and no in-process player)."""
    houses = len(request.house_buyers or {}) + (request.house_seller is not None)
    return request.buyers + 1 - houses


def check_series_request(request: RoomRequest) -> None:
    """Raise ValueError, one line, for a market room request whose series it cannot play: a
    series of more than one market where several seats are clients'."""
    if request.negotiations not in (None, 1) and client_seat_count(request) > 1:
        raise ValueError(
            "negotiations: a market room with several client seats plays one market (a series "
            "needs one client seat, every other a house agent or an llm: player)"
        )


class MarketSeries:
    """The markets of one market room, in order; the first opens with the room."""

    def __init__(
        self,
        room_id: str,
        request: RoomRequest,
        *,
        open_market: OpenMarket,
        limits: RoomLimits = DEFAULT_LIMITS,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        check_series_request(request)
        self.id = room_id
        secret = request.run_secret()  # every market of the series draws under this one
        available = client_seat_count(request) == 1
        count = (request.negotiations or limits.max_series) if available else 1
        self._open = open_market
        self._journal: RoomJournal | None = None
        self._replaying = False
        self._stored_keys: frozenset[str] = frozenset()
        """While replaying: the keys the store holds (a market it holds is not kept pending)."""
        self._started = anyio.Event()
        self.pending: list[MarketRoomServed] = []
        """Finished markets of the series that the store does not hold yet (a write failed),
        oldest first: stored by the reaper's ``tick`` or the next ``new_negotiation``."""
        self.totals: dict[str, Decimal] = {}
        """Each seat's surplus over the finished markets, by seat."""
        self.recent: dict[str, deque[SeriesResult]] = {}
        """Each client buyer's last ``RECENT_RESULTS`` finished markets, as its thread saw them."""

        def markets(index: int) -> MarketScenario | None:
            return market_of(request, index, secret=secret) if index < count else None

        self.series: Series[MarketRoomServed, MarketScenario] = Series(
            markets,
            available=available,
            start=self._start,
            pace=Pace(limits.negotiations_per_minute),
            timer=timer,
            unavailable=ONE_MARKET,
            noun="market",
        )

    # -- the room's markets ------------------------------------------------------------------

    @property
    def current(self) -> MarketRoomServed:
        """The market being played (or the last one, once it has ended)."""
        return self.series.current

    @property
    def client_seats(self) -> tuple[str, ...]:
        """The seats played by clients (each has its own token), the seller first."""
        return self.current.client_seats

    @property
    def players(self) -> dict[str, MarketPlayer]:
        """The seats played in this process (no token), by seat."""
        return self.current.players

    @property
    def run(self) -> str:
        """The results store's run of the room's markets."""
        return self.current.run

    @property
    def journal(self) -> RoomJournal | None:
        """Where the room journals its inputs (``server.market_journal``); None: nowhere."""
        return self._journal

    @journal.setter
    def journal(self, journal: RoomJournal | None) -> None:
        self._journal = journal
        self.current.journal = journal

    def _start(self, number: int, market: MarketScenario) -> MarketRoomServed:
        if number > 1:
            previous = self.current
            self._settle(previous)
            if self._replaying:
                previous.stored = previous.key in self._stored_keys
            if not previous.stored:
                self.pending.append(previous)
            if self._journal is not None and not self._replaying:
                self._journal.append(number, ["start"])
        opened = self._open(number, market)
        opened.journal = self._journal
        if number > 1:  # a seat's message budget is the series', as in a bilateral room
            for name, seat in opened.clients.seats.items():
                seat.messages = self.current.clients.seats[name].messages
        self._started.set()
        self._started = anyio.Event()
        log.info("market started", room=self.id, negotiation=number, market=market.id)
        return opened

    def start_next(self) -> MarketRoomServed:
        """A client seat's ``new_negotiation``: the next market, within the room's pace.
        Raises RoomError (``series_unavailable``, ``negotiation_running``, ``series_over``,
        ``too_many_negotiations``) when it cannot start now."""
        return self.series.start_next(paced=True)

    # -- the series' results -----------------------------------------------------------------

    def _settle(self, market: MarketRoomServed) -> None:
        """Count a finished market for the series: once, however often it is looked at."""
        if market.is_open or not self.series.finish(market.number):
            return
        outcome = market.engine.referee.outcome
        assert outcome is not None
        surplus = {SELLER: outcome.seller_surplus}
        if outcome.buyer is not None:
            surplus[outcome.buyer] = outcome.buyer_surplus
        for seat in (SELLER, *market.market.buyers):
            gained = surplus.get(seat, Decimal("0.00"))
            self.totals[seat] = self.totals.get(seat, Decimal("0.00")) + gained
        for name in market.buyer_calls:
            seen = market.engine.referee.observe_buyer(name, market.engine.now).outcome
            assert seen is not None
            thread = market.market.thread(name)
            line = SeriesResult.of(market.number, thread, "buyer", seen)
            self.recent.setdefault(name, deque(maxlen=RECENT_RESULTS)).append(line)

    def tally(self, seat: str) -> SeriesTally:
        """The series as ``seat`` reads it in get_state."""
        self._settle(self.current)
        return SeriesTally(
            negotiation=self.current.number,
            finished=self.series.finished,
            total_surplus=self.totals.get(seat, Decimal("0.00")),
            can_start_next=self.series.can_start_next(),
        )

    def results(self, seat: str) -> tuple[SeriesResult, ...]:
        """A client buyer's last finished markets, oldest first (a seller: none)."""
        self._settle(self.current)
        return tuple(self.recent.get(seat, ()))

    def view(self) -> dict[str, Any]:
        """What the admin API shows of the room: the current market's view (``MarketRoomServed
        .view``) with its number, the markets finished and those not stored yet."""
        self._settle(self.current)
        return {
            **self.current.view(),
            "negotiation": self.current.number,
            "finished": self.series.finished,
            "series": self.series.available,
            "pending": [market.key for market in self.pending],
        }

    # -- storing, playing, restoring ----------------------------------------------------------

    @property
    def stored(self) -> bool:
        """True once every finished market is in the store and the current one has ended."""
        return not self.pending and self.current.stored

    async def save(self) -> None:
        """Store every finished market not stored yet (each once; a failure is logged and
        tried again later), the oldest first."""
        for market in [*self.pending, self.current]:
            await market.save()
        self.pending = [market for market in self.pending if not market.stored]

    async def tick(self) -> None:
        """The reaper's pass: the current market's (``MarketRoomServed.tick``), then the
        finished markets whose write failed."""
        await self.current.tick()
        await self.save()

    async def play(self) -> None:
        """Run each market's in-process players as the market starts, beside the previous
        market's until they have returned (the registry runs it while it serves and cancels it
        when it forgets the room)."""
        async with anyio.create_task_group() as group:
            while True:
                market, started = self.current, self._started
                group.start_soon(market.play, name=f"players/{self.id}/{market.number}")
                await started.wait()

    def replay(self, entries: Iterable[tuple[int, Op]], *, stored: Iterable[str] = ()) -> None:
        """Rebuild the series from its journal, market by market (each started as the series
        starts it), each market's inputs replayed into it; raises ValueError for a journal
        that is none. ``stored``: the keys the store holds (the finished markets it lacks are
        kept pending, to be stored)."""
        self._replaying, self._stored_keys = True, frozenset(stored)
        try:
            batch: list[tuple[int, Op]] = []
            for number, op in entries:
                if number != self.current.number:
                    self.current.replay(batch)
                    batch = []
                while self.current.number < number:
                    self.series.start_next()
                if number != self.current.number:
                    raise ValueError(f"journal: market {number} after {self.current.number}")
                if op != ["start"]:
                    batch.append((number, op))
            self.current.replay(batch)
        finally:
            self._replaying, self._stored_keys = False, frozenset()

    def restored(self, stored: set[str]) -> bool:
        """After ``replay``: mark the current market stored if the store holds it (``stored``:
        its keys of the room's run). False if the store is ahead of the journal (it holds a market
        the replay left open or never reached: the journal missed inputs). The registry then
        attaches the journal and counts the current market's in-process players absent
        (``MarketRoomServed.set_players_absent``)."""
        prefix = f"{self.id}/"
        numbers = [key.removeprefix(prefix) for key in stored if key.startswith(prefix)]
        last = max((int(n) for n in numbers if n.isdigit()), default=0)
        current = self.current
        if last > current.number or (last == current.number and current.is_open):
            return False
        current.stored = current.key in stored and not current.is_open
        return True


def open_series(
    room_id: str,
    request: RoomRequest,
    *,
    resolve_house: Callable[[str], AgentFactory],
    resolve_seller: Callable[[str], MarketAgentFactory] | None,
    resolve_player: Callable[[str], MarketPlayer | None] | None,
    writer: ResultWriter | None,
    limits: RoomLimits = DEFAULT_LIMITS,
    timer: Callable[[], float] = time.monotonic,
) -> MarketSeries:
    """The series of markets a market room's request asks for, each market opened by
    ``market_room.open_market`` with fresh agents; raises ValueError, one line, for a bad
    request (``check_series_request``, then ``open_market``'s), nothing opened."""

    def opened(number: int, market: MarketScenario) -> MarketRoomServed:
        return open_market(
            room_id,
            request,
            resolve_house=resolve_house,
            resolve_seller=resolve_seller,
            writer=writer,
            limits=limits,
            resolve_player=resolve_player,
            timer=timer,
            number=number,
            market=market,
        )

    return MarketSeries(room_id, request, open_market=opened, limits=limits, timer=timer)


__all__ = [
    "ONE_MARKET",
    "MarketSeries",
    "check_series_request",
    "client_seat_count",
    "open_series",
]

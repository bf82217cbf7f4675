"""A served market: one seller and N buyers (``dealroom.protocol.market``), any of them clients.

An HTTP room opened with ``buyers`` >= 2 is a ``MarketRoomServed``: one market on the virtual
clock (``dealroom.engine.market.MarketRoom``), or on the wall clock with ``clock="wall"`` (see
below), the seller's seat and every buyer's (``b1`` ..
``bN``) each a house agent or a client's (each client seat gets its own token; at least one seat
is a client's). The clients' calls drive their seats with the bilateral remote seat's turn
semantics (``dealroom.engine.market_calls``), one seat's turn at a time in the schedule's order
(``dealroom.engine.market_turns``): a call waits for its seat's turn, so the record is the same
whatever the wall-time order of the clients' calls (``dealroom.server.market_clients`` says what
happens when a client stalls). With one client seat every call settles at once. On the wall
clock there are no turns (``dealroom.engine.market_wall``): each call takes effect at the wall
time it arrives, house seats act as the wall passes their due times, and the record follows the
arrival order (``dealroom.server.market_wall`` keeps the clock). A seller client
is served the market seller's tools and texts (``dealroom.protocol.market_seat``,
``market_text``); a buyer client today's buyer tools and results, from its own thread only
(``dealroom.server.market_seats``).

A ``MarketRoomServed`` is one market of its room's series (``dealroom.server.market_series``:
a room with one client seat plays ``negotiations`` markets one after another, each its own
``MarketRoomServed``, number N). The finished market is stored once, in the results store's
``markets`` table, under the key ``ROOM/N`` and the room's run (its participant, else the room
id), by the call that ended it (or the reaper's ``tick``); a write that fails is retried by the
next call or ``tick`` until it succeeds. A server that journals its rooms journals a market room
too (``dealroom.server.market_journal``): it survives a restart.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import structlog

from dealroom.engine.market import MarketRoom, market_view
from dealroom.engine.market_calls import MarketBuyerCalls, MarketSellerCalls
from dealroom.engine.market_turns import SELLER
from dealroom.engine.market_wall import WallTurns
from dealroom.engine.match import seat_rng
from dealroom.protocol import Agent, AgentFactory, RoomRequest, seat_view
from dealroom.protocol.market import (
    MarketAgent,
    MarketAgentFactory,
    MarketObservation,
    MarketRules,
    MarketScenario,
    buyer_ids,
)
from dealroom.protocol.market_referee import MarketRecord
from dealroom.protocol.market_scenarios import DEFAULT_MARKET_SPEC, market_at
from dealroom.protocol.secret import Seed
from dealroom.protocol.wire import ClockKind
from dealroom.server.journal import Op, RoomJournal
from dealroom.server.market_clients import MarketClients
from dealroom.server.market_journal import (
    JournaledTurns,
    JournaledWallTurns,
    MarketSeatCalls,
    replay_op,
    seen_by,
)
from dealroom.server.market_wall import MarketWallClock
from dealroom.server.negotiation import DEFAULT_LIMITS, RoomLimits
from dealroom.server.room_settings import House
from dealroom.server.seat_names import REMOTE_NAME
from dealroom.store.writer import ResultWriter

log = structlog.stdlib.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class SellerHouse:
    """A house agent in a market room's seller seat: its spec (recorded) and factory (a
    buyer's house agent is a bilateral ``House``)."""

    spec: str
    factory: MarketAgentFactory


@dataclass(frozen=True, slots=True)
class MarketPlayer:
    """An in-process player of a market room's buyer seat (an ``llm:`` seat): its spec
    (recorded) and how it plays seat ``name`` of the room to the end of its thread
    (``dealroom.play.market_players.market_house_player``). Its seat is driven as a client's
    is, with no token: it takes its turns and follows the same idle and abandon rules
    (``dealroom.server.market_clients``)."""

    spec: str
    play: Callable[[MarketRoomServed, str], Coroutine[Any, Any, None]]


class MarketRoomServed:
    """One market served to its client seats; the other seats house agents or in-process
    players."""

    def __init__(
        self,
        room_id: str,
        market: MarketScenario,
        rules: MarketRules,
        *,
        seller: SellerHouse | None,
        buyers: Mapping[str, House],
        seed: Seed,
        run: str,
        writer: ResultWriter | None,
        number: int = 1,
        client_name: str = REMOTE_NAME,
        client_names: Mapping[str, str] | None = None,
        players: Mapping[str, MarketPlayer] | None = None,
        limits: RoomLimits = DEFAULT_LIMITS,
        timer: Callable[[], float] = time.monotonic,
        clock: ClockKind = "virtual",
    ) -> None:
        seats = (SELLER, *market.buyers)
        players = dict(players or {})
        houses: dict[str, str] = {name: house.spec for name, house in buyers.items()}
        if seller is not None:
            houses[SELLER] = seller.spec
        unknown = sorted((set(houses) | set(players)) - set(seats))
        if unknown:
            raise ValueError(f"house_buyers: no seat {', '.join(unknown)} in this market")
        driven = tuple(seat for seat in seats if seat not in houses)
        clients = tuple(seat for seat in driven if seat not in players)
        if not driven:
            raise ValueError(
                "house_buyers: a market room serves at least one client seat; here every seat "
                "is a house agent (leave a buyer out of house_buyers, or house_seller out)"
            )
        self.id = room_id
        self.number = number
        """Its place in the room's series, from 1 (its key's ``N``, its journal lines' ``n``)."""
        self.market = market
        self.rules = rules
        self.run = run
        self.seed = seed
        self.writer = writer
        self.client_seats: tuple[str, ...] = clients
        """The seats played by clients (each has its own token), the seller first."""
        self.players = players
        """The buyer seats played in this process (no token), by seat."""
        self.played: dict[str, dict[str, Any]] = {}
        """What each in-process player has to show so far (usage, counts, conversation,
        error), by seat: the admin API's view (``players``), stored with the market."""
        self._playing: set[str] = set()
        """The in-process players whose task still runs (the market is stored once they are
        done, with their final data)."""
        names_of_players = {seat: player.spec for seat, player in players.items()}
        named = {**(client_names or {}), **names_of_players, **houses}
        self.names: dict[str, str] = {seat: named.get(seat, client_name) for seat in seats}
        """Who sits in each seat, as recorded: a house agent's spec, or the client's name
        (``client_names``' for its seat, else ``client_name``)."""
        seller_agent: MarketAgent | None = None
        if seller is not None:
            view = market_view(market, rules)
            seller_agent = seller.factory(view, seat_rng(seed, market.id, "seller"))
        agents: dict[str, Agent | None] = {}
        for name in market.buyers:
            house, thread = buyers.get(name), market.thread(name)
            agents[name] = (
                None
                if house is None
                else house.factory(seat_view(thread, "buyer"), seat_rng(seed, thread.id, "buyer"))
            )
        self.clock: ClockKind = clock
        self.engine = MarketRoom(market, rules, seller=seller_agent, buyers=agents, clock=clock)
        self.journal: RoomJournal | None = None
        """Where the room journals its inputs (``server.market_journal``); None: nowhere."""
        self.turns = (
            JournaledWallTurns(self.engine, self._note)
            if clock == "wall"
            else JournaledTurns(self.engine, self._note)
        )
        """Whose turn the clock waits for (none on the wall clock)."""
        self.wall = (
            MarketWallClock(
                self.turns, timer=timer, note=self._note, changed=lambda: self.clients.changed()
            )
            if isinstance(self.turns, WallTurns)
            else None
        )
        """The wall clock (None on the virtual clock)."""
        self.seller_calls = MarketSellerCalls(self.turns) if SELLER in driven else None
        self.buyer_calls: dict[str, MarketBuyerCalls] = {
            name: MarketBuyerCalls(self.turns, name) for name in driven if name != SELLER
        }
        self._calls: dict[str, MarketSeatCalls] = {**self.buyer_calls}
        if self.seller_calls is not None:
            self._calls[SELLER] = self.seller_calls
        self._shown = {name: seen_by(calls) for name, calls in self._calls.items()}
        self.clients = MarketClients(
            self.turns,
            room_id=room_id,
            limits=limits,
            timer=timer,
            after_call=self._after_call,
            step=self.wall.step if self.wall is not None else lambda call: math.inf,
        )
        """The client seats' calls and the waits for their turns."""
        self._store_lock = anyio.Lock()
        self.stored = False
        log.info("market room opened", room=room_id, market=market.id, clients=list(clients))

    @property
    def client_seat(self) -> str:
        """The one client seat of a room that has one (stdio serves one client)."""
        if len(self.client_seats) != 1:
            raise ValueError(f"room {self.id} has {len(self.client_seats)} client seats")
        return self.client_seats[0]

    @property
    def key(self) -> str:
        """The results-store key of the room's market."""
        return f"{self.id}/{self.number}"

    @property
    def is_open(self) -> bool:
        """True until the market ends."""
        return self.engine.referee.is_open

    def record(self) -> MarketRecord:
        """The finished market's record (raises RuntimeError while it runs)."""
        outcome = self.engine.referee.outcome
        if outcome is None:
            raise RuntimeError("the market is not over")
        return MarketRecord(
            scenario=self.market,
            seller=self.names[SELLER],
            buyers=tuple(self.names[b] for b in self.market.buyers),
            log=tuple(self.engine.referee.log),
            outcome=outcome,
        )

    def watched(self) -> MarketObservation:
        """Every thread as it stands on the market's clock now: the seller's view, so its
        cost but never a buyer's value (the room page, ``dealroom.server.web.market_views``,
        leaves the cost out until the end). The house seats act only up to the client seat's
        clock, so nothing here lies ahead of it (on the wall clock, up to the wall's present:
        while the market is open its clock reads the wall as last brought up, not the time of
        its last event)."""
        return self.engine.referee.observe_seller(self.present())

    def present(self) -> float:
        """The market's clock now: the time of its last item, or on the wall clock while the
        market is open the wall as last brought up (capped at the deadline)."""
        now = self.engine.now
        if isinstance(self.turns, WallTurns) and self.is_open:
            now = max(now, min(self.turns.wall, self.engine.deadline))
        return now

    def view(self) -> dict[str, Any]:
        """What the admin API shows of the room (``GET /admin/rooms/{room}``): its seats, the
        market's id and state, and its full outcome once over (values included: admin only)."""
        outcome = self.engine.referee.outcome
        return {
            "room": self.id,
            "clock": self.clock,
            "seats": self.names,
            "clients": list(self.client_seats),
            "turn": self.turns.turn,
            "absent": sorted(self.turns.absent),
            "players": {seat: self._player_view(seat) for seat in self.players},
            "market": self.market.id,
            "open": self.is_open,
            "events": len(self.engine.referee.log),
            "outcome": None if outcome is None else outcome.model_dump(mode="json"),
            "key": self.key,
            "stored": self.stored,
        }

    def _player_view(self, seat: str) -> dict[str, Any]:
        """An in-process player's data, less its conversation (admin view)."""
        data = self.played.get(seat, {"name": self.players[seat].spec})
        return {key: value for key, value in data.items() if key != "conversation"}

    async def play(self) -> None:
        """Run the in-process players until each one's thread ends (the registry runs it while
        it serves, and cancels it when it forgets the room); a restored room's players are
        counted absent instead (``set_players_absent``)."""
        async with anyio.create_task_group() as group:
            for seat, player in self.players.items():
                if seat not in self.turns.absent and not self.turns.closed(seat):
                    group.start_soon(self._player, seat, player, name=f"{player.spec}/{seat}")

    async def _player(self, seat: str, player: MarketPlayer) -> None:
        """One player's task: a bug of its own must not end the server's other tasks; its seat
        is then counted absent, so that it stalls nobody."""
        self._playing.add(seat)
        try:
            await player.play(self, seat)
        except Exception:
            log.exception("market player failed", room=self.id, seat=seat)
            self.turns.set_absent(seat)
            self.clients.changed()
        finally:
            self._playing.discard(seat)
        await self.save()

    def set_players_absent(self) -> None:
        """After a restart: every in-process player whose thread is open is counted absent for
        the rest of the market (journaled), since its conversation did not survive: a model
        woken with a fresh one in the middle of a market would read another game. It sits out
        its wakes; its live offer can still be accepted."""
        for seat in self.players:
            self.turns.set_absent(seat)
        self.clients.changed()

    def replay(self, entries: Sequence[tuple[int, Op]]) -> None:
        """Rebuild the market from its journal, input by input (not journaled again)."""
        self.turns.replaying = True
        try:
            for _, op in entries:
                match op:
                    case ["start", int() | float() as epoch] if self.wall is not None:
                        self.wall.restore(float(epoch))
                    case _:
                        replay_op(self.turns, self._calls, op)
        finally:
            self.turns.replaying = False
        self._shown = {name: seen_by(calls) for name, calls in self._calls.items()}

    def _note(self, op: Op) -> None:
        if self.journal is not None:
            self.journal.append(self.number, op)

    async def _after_call(self) -> None:
        """As each call ends: journal what the seats were shown, store a finished market."""
        for name, calls in self._calls.items():
            now = seen_by(calls)
            if now != self._shown[name]:
                self._shown[name] = now
                self._note(["shown", name, *now])
        await self.save()

    async def save(self) -> None:
        """Store the finished market once, with its in-process players' final data beside it
        (``markets.extra``, by seat): nothing while it runs, while a player's task still
        reports, or without a writer; a write that fails is logged and tried again by the next
        call or ``tick``."""
        async with self._store_lock:
            if self.stored or self.is_open or self._playing or self.writer is None:
                return
            store, record = self.writer.store, self.record()
            extra = {seat: dict(data) for seat, data in self.played.items()} or None
            try:
                await anyio.to_thread.run_sync(
                    lambda: store.add_market(self.key, record, run=self.run, extra=extra)
                )
            except Exception:  # the store's failure must not fail the call that ended the market
                log.exception("market not stored yet", room=self.id)
                return
            self.stored = True
        outcome = record.outcome
        log.info("market ended", room=self.id, reason=outcome.end_reason, status=outcome.status)

    async def tick(self) -> None:
        """The reaper's pass: run an abandoned market to its end (``MarketClients.abandon``;
        on the wall clock, its deadline ends it: the pass brings it up to the wall's present,
        starting a clock no call started); store a finished market whose write failed."""
        abandoned = self.clients.abandon()
        if self.wall is not None:
            if abandoned:
                self.wall.start()
            self.clients.step(False)
        await self.save()


def check_market_request(request: RoomRequest) -> None:
    """Raise ValueError, one line naming the field to change, for a request that no market room
    (``buyers`` >= 2) or no bilateral room (``buyers`` = 1) serves; nothing is opened."""
    market_only = {
        "house_buyers": request.house_buyers is not None,
        "seller_actions": request.seller_actions is not None,
        "buyers_know_count": not request.buyers_know_count,
    }
    if request.buyers == 1:
        for field, given in market_only.items():
            if given:
                raise ValueError(f"{field}: only a market room (buyers >= 2) takes it")
        return
    bilateral_only = {
        "house_buyer": (request.house_buyer is not None, "name each buyer's in house_buyers"),
        "consent": (request.consent is not None, "a market room asks no consent"),
        "study": (request.study is not None, "a study opens bilateral rooms"),
    }
    for field, (given, why) in bilateral_only.items():
        if given:
            raise ValueError(f"{field}: not in a market room ({why})")


def open_market(
    room_id: str,
    request: RoomRequest,
    *,
    resolve_house: Callable[[str], AgentFactory],
    resolve_seller: Callable[[str], MarketAgentFactory] | None,
    writer: ResultWriter | None,
    limits: RoomLimits = DEFAULT_LIMITS,
    resolve_player: Callable[[str], MarketPlayer | None] | None = None,
    timer: Callable[[], float] = time.monotonic,
    number: int = 1,
    market: MarketScenario | None = None,
) -> MarketRoomServed:
    """The market room a request asks for (``buyers`` >= 2); raises ValueError, one line, for
    a bad request (``check_market_request``, a seat that is not in the market, no client seat,
    a bad agent spec). A house seat whose spec ``resolve_player`` names (``llm:MODEL``) is
    played in process (``MarketPlayer``). ``number`` and ``market``: its place in the room's
    series and its market (default: the first, ``market_of(request, 0)``), each with fresh
    agents."""
    check_market_request(request)
    names = buyer_ids(request.buyers)
    houses = request.house_buyers or {}
    unknown = sorted(set(houses) - set(names))
    if unknown:
        raise ValueError(
            f"house_buyers: no buyer {', '.join(unknown)} in a market of {len(names)} "
            f"({', '.join(names)})"
        )
    buyers: dict[str, House] = {}
    players: dict[str, MarketPlayer] = {}
    for name, spec in houses.items():
        try:
            player = None if resolve_player is None else resolve_player(spec)
            if player is not None:
                players[name] = player
            else:
                buyers[name] = House(spec, resolve_house(spec))
        except ValueError as exc:
            raise ValueError(f"house_buyers.{name}: {exc}") from None
    seller: SellerHouse | None = None
    if request.house_seller is not None:
        named = request.house_seller
        try:
            player = None if resolve_player is None else resolve_player(named)
            if player is not None:
                players[SELLER] = player
            elif resolve_seller is None:
                raise ValueError("this server has no market sellers")
            else:
                seller = SellerHouse(named, resolve_seller(named))
        except ValueError as exc:
            raise ValueError(f"house_seller: {exc}") from None
    if len(players) + len(buyers) + (seller is not None) == len(names) + 1:
        raise ValueError(
            "house_buyers: a market room serves at least one client seat; here every seat is "
            "a house agent (leave a buyer out of house_buyers, or house_seller out)"
        )
    secret = request.run_secret()
    if market is None:
        market = market_of(request, 0, secret=secret)
    rules = MarketRules(
        rules=request.rules,
        seller_actions=request.seller_actions,
        buyers_know_count=request.buyers_know_count,
    )
    return MarketRoomServed(
        room_id,
        market,
        rules,
        seller=seller,
        buyers=buyers,
        seed=secret,
        run=request.participant or room_id,
        writer=writer,
        number=number,
        players=players,
        limits=limits,
        timer=timer,
        clock=request.clock,
    )


def market_of(request: RoomRequest, offset: int, *, secret: Seed | None = None) -> MarketScenario:
    """The market a room plays ``offset`` markets after its first (``request.index``): the
    market generator's under the room's secret (``secret``, else the request's)."""
    spec = DEFAULT_MARKET_SPEC
    if request.deadline is not None:
        spec = spec.model_copy(update={"deadline": request.deadline})
    seed = request.run_secret() if secret is None else secret
    return market_at(seed, request.index + offset, request.tier, request.buyers, spec)


__all__ = [
    "SELLER",
    "MarketPlayer",
    "MarketRoomServed",
    "SellerHouse",
    "check_market_request",
    "market_of",
    "open_market",
]

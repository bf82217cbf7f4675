"""The rooms of an HTTP server, by id, with their seat tokens (``dealroom.server.tokens``):
created, restored from their journals at start, played and reaped once ended.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import structlog
from anyio.abc import TaskGroup

from dealroom.protocol import (
    ROLES,
    AgentFactory,
    Role,
    RoomCreated,
    RoomRequest,
    Scenario,
    SessionErrorCode,
)
from dealroom.protocol.generator import DEFAULT_SPEC, scenario_at
from dealroom.protocol.market import MarketAgentFactory
from dealroom.server.journal import (
    STOPPED_SUFFIX,
    JournalFile,
    Journals,
    RoomJournal,
    reason_of,
)
from dealroom.server.market_room import SELLER, MarketPlayer, check_market_request
from dealroom.server.market_seats import ServedMarketBuyer, ServedMarketSeller
from dealroom.server.market_series import MarketSeries, open_series
from dealroom.server.negotiation import DEFAULT_LIMITS, RoomLimits
from dealroom.server.room import Room
from dealroom.server.room_error import RoomError
from dealroom.server.room_settings import Experiment, House, Occupant, RoomSettings, SeatPlayer
from dealroom.server.seat import RoomSeat, ServedSeat
from dealroom.server.studies import Studies
from dealroom.server.tokens import Grant, TokenTable, digest, new_token
from dealroom.store.writer import ResultWriter

log = structlog.stdlib.get_logger(__name__)

HouseResolver = Callable[[str], AgentFactory]
"""Turns an agent spec into a factory; raises ValueError for an unknown or bad spec."""

SellerResolver = Callable[[str], MarketAgentFactory]
"""Turns a market seller spec into its factory (``agents.market.market_seller``); raises
ValueError for an unknown or bad spec."""

PlayerResolver = Callable[[str], SeatPlayer | None]
"""The in-process player for a spec that is no house agent (an LLM), or None for one that is;
raises ValueError for a bad spec."""


def _journal_unavailable() -> RoomError:
    return RoomError(
        SessionErrorCode.JOURNAL_UNAVAILABLE,
        "The server cannot journal a new room now (its disk or file descriptors ran out); no "
        "room was opened. Try again later.",
    )


class RoomRegistry:
    """Every room of one server, by id, and its seat tokens."""

    def __init__(
        self,
        *,
        writer: ResultWriter | None,
        resolve_house: HouseResolver,
        limits: RoomLimits = DEFAULT_LIMITS,
        retain_s: float = 3600.0,
        timer: Callable[[], float] = time.monotonic,
        journals: Journals | None = None,
        resolve_player: PlayerResolver | None = None,
        token_prefix: str = "",
        resolve_seller: SellerResolver | None = None,
        resolve_market_player: Callable[[str], MarketPlayer | None] | None = None,
    ) -> None:
        self.writer = writer
        self.token_prefix = token_prefix
        """Put before every new token (digested with it): ``w3.`` on worker 3 of a cluster."""
        self.journals = journals
        """Where each room journals its inputs, so that open rooms survive a restart."""
        self.limits = limits
        self.retain_s = retain_s
        self._resolve_house = resolve_house
        self._resolve_player = resolve_player
        self._resolve_seller = resolve_seller
        self._resolve_market_player = resolve_market_player
        self._timer = timer
        self._group: TaskGroup | None = None
        self._playing: dict[str, anyio.CancelScope] = {}
        """The rooms whose in-process players run (``reap`` runs them), by id."""
        self.rooms: dict[str, Room] = {}
        self.markets: dict[str, MarketSeries] = {}
        """The market rooms (``buyers`` >= 2), by id, each a series of markets (journaled and
        restored as rooms are)."""
        self.unrestored: dict[str, str] = {}
        """Rooms whose journal ``restore`` found but could not restore, by id: why not."""
        self.tokens = TokenTable()
        self._ended_at: dict[str, float] = {}
        self.studies = Studies(
            create_room=self.create,
            room=self.rooms.get,
            journals=journals,
            check_house=self.check_house,
            token_prefix=token_prefix,
        )
        """The server's studies (``dealroom.server.study``): they open rooms here."""

    def check_house(self, spec: str) -> None:
        """Raise ValueError if no house seat can play ``spec`` (as ``create`` would)."""
        if self._resolve_player is None or self._resolve_player(spec) is None:
            self._resolve_house(spec)

    def create(self, request: RoomRequest) -> RoomCreated:
        """Open a room; raises ValueError for a bad house agent spec, and RoomError
        (``journal_unavailable``, nothing opened) when the server journals its rooms and this
        one's journal cannot be created."""
        room_id = "room-" + secrets.token_hex(8)
        if request.secret is None:  # drawn once, here, so that a restored room draws the same
            request = request.model_copy(update={"secret": request.run_secret().hex()})
        check_market_request(request)
        if request.buyers > 1:
            return self._create_market(room_id, request)
        room = self._build(room_id, request)
        tokens: dict[str, str] = {
            role: new_token(self.token_prefix)
            for role in room.seats.client_roles  # an in-process player's seat gets no token
        }
        spectator = new_token(self.token_prefix)
        if self.journals is not None:
            digests = {role: digest(token).hex() for role, token in tokens.items()}
            header = {
                "room": room_id,
                "request": request.model_dump(mode="json"),
                "tokens": digests,
                "spectator": digest(spectator).hex(),
            }
            room.journal.file = self.journals.create(room_id, header)
            if room.journal.file is None:
                raise _journal_unavailable()
        for role, token in tokens.items():
            self.tokens.grant(digest(token), room_id, role)
        self.tokens.grant(digest(spectator), room_id, None)
        self.rooms[room_id] = room
        self._play(room)
        log.info("room created", room=room_id, clock=request.clock, seats=list(tokens))
        return RoomCreated(room=room_id, tokens=tokens, spectator=spectator)

    def _create_market(self, room_id: str, request: RoomRequest) -> RoomCreated:
        """Open a market room: a token for each of its client seats, and its spectator token
        (the room page, ``dealroom.server.web.market_views``)."""
        market = self._market_series(room_id, request)
        tokens = {seat: new_token(self.token_prefix) for seat in market.client_seats}
        spectator = new_token(self.token_prefix)
        if self.journals is not None:
            digests = {seat: digest(token).hex() for seat, token in tokens.items()}
            request_json = request.model_dump(mode="json")
            header = {
                "room": room_id,
                "request": request_json,
                "tokens": digests,
                "spectator": digest(spectator).hex(),
            }
            market.journal = self.journals.create(room_id, header)
            if market.journal is None:
                raise _journal_unavailable()
        for seat, token in tokens.items():
            self.tokens.grant(digest(token), room_id, seat)
        self.tokens.grant(digest(spectator), room_id, None)
        self.markets[room_id] = market
        self._play_market(market)
        log.info("room created", room=room_id, buyers=request.buyers, seats=list(tokens))
        return RoomCreated(room=room_id, tokens=tokens, spectator=spectator)

    def restore(self) -> int:
        """At start, before serving: rebuild every journaled room, open negotiations included,
        with its seat tokens. Returns how many open negotiations it restored. A journal that
        cannot be read or replayed, whatever the failure, is logged and left in place; one
        behind the results store (it holds a negotiation the replay did not finish) is logged
        and set aside. Either way the room is not restored and ``unrestored`` says why."""
        self.studies.restore()  # first: a study's rooms report their results to it as they replay
        if self.journals is None:
            return 0
        restored = 0
        for path in self.journals.set_aside():  # the room is gone, and it says why (410)
            self.unrestored[path.name.removesuffix(f".jsonl{STOPPED_SUFFIX}")] = (
                f"its journal missed an input (a write failed, such as on a full disk) and was "
                f"set aside as {path.name}: the room could not survive a restart"
            )
        for path, journal in self.journals.load():
            room_id = path.name.removesuffix(".jsonl")
            if isinstance(journal, str):
                self.unrestored[room_id] = f"the journal cannot be read ({journal})"
                continue
            if int(journal.header["request"].get("buyers", 1)) > 1:
                restored += self._restore_market(path, journal)
                continue
            try:
                room, seats = self._replayed(path, journal)
            except Exception as exc:  # one bad journal must not stop the server or the others
                reason = reason_of(exc)
                log.error("room journal cannot be replayed", path=str(path), error=reason)
                self.unrestored[room_id] = f"the journal cannot be replayed ({reason})"
                continue
            if room is None:
                self.unrestored[room_id] = "its journal missed inputs (set aside)"
                continue
            for grant in seats:
                self.tokens.grant(grant.digest, grant.room, grant.role)
            self.rooms[room.id] = room
            restored += room.current.is_open
        if self.rooms or self.unrestored:
            log.info(
                "rooms restored",
                rooms=len(self.rooms),
                open=restored,
                not_restored=len(self.unrestored),
            )
        return restored

    def _replayed(self, path: Path, journal: JournalFile) -> tuple[Room | None, list[Grant]]:
        """One journal's room, replayed, and its tokens; None for a journal behind the store
        (set aside). Raises whatever the journal makes fail."""
        room_id = str(journal.header["room"])
        room = self._build(room_id, RoomRequest.model_validate(journal.header["request"]))
        room.replay(journal.entries)
        seats = [
            Grant(bytes.fromhex(hexdigest), room_id, role)
            for role, hexdigest in journal.header["tokens"].items()
            if role in room.seats.client_roles
        ]
        if "spectator" in journal.header:  # journals written before spectators: none
            seats.append(Grant(bytes.fromhex(journal.header["spectator"]), room_id, None))
        reopened = RoomJournal(path)
        if behind := self._stored_ahead(room):
            log.error(
                "room journal is behind the results store (it missed inputs); room not "
                "restored, journal set aside",
                room=room_id,
                replayed=room.series.finished,
                stored=behind,
            )
            reopened.stop()
            return None, []
        room.journal.file = reopened
        return room, seats

    def _restore_market(self, path: Path, journal: JournalFile) -> int:
        """One market room's journal replayed, with its tokens (1 if its current market is
        open); one that fails, or is behind the results store (it holds a market the replay left
        open or never reached: set aside), is logged and left unrestored."""
        room_id = str(journal.header["room"])
        try:
            request = RoomRequest.model_validate(journal.header["request"])
            market = self._market_series(room_id, request)
            keys: set[str] = (
                set() if self.writer is None else self.writer.store.market_keys(market.run)
            )
            market.replay(journal.entries, stored=keys)
        except Exception as exc:  # one bad journal must not stop the server or the others
            reason = reason_of(exc)
            log.error("room journal cannot be replayed", path=str(path), error=reason)
            self.unrestored[room_id] = f"the journal cannot be replayed ({reason})"
            return 0
        reopened = RoomJournal(path)
        if not market.restored(keys):
            log.error("market room journal is behind the results store", room=room_id)
            reopened.stop()
            self.unrestored[room_id] = "its journal missed inputs (set aside)"
            return 0
        market.journal = reopened
        market.current.set_players_absent()
        for seat, hexdigest in journal.header["tokens"].items():
            if seat in market.client_seats:
                self.tokens.grant(bytes.fromhex(hexdigest), room_id, seat)
        if "spectator" in journal.header:
            self.tokens.grant(bytes.fromhex(journal.header["spectator"]), room_id, None)
        self.markets[room_id] = market
        return int(market.current.is_open)

    def _market_series(self, room_id: str, request: RoomRequest) -> MarketSeries:
        """A market room's series; raises ValueError, one line, for a bad request."""
        return open_series(
            room_id,
            request,
            resolve_house=self._resolve_house,
            resolve_seller=self._resolve_seller,
            resolve_player=self._resolve_market_player,
            writer=self.writer,
            limits=self.limits,
            timer=self._timer,
        )

    def _stored_ahead(self, room: Room) -> int:
        """The last negotiation of ``room`` that the results hold (stored or pending) if it is
        one its replay did not finish, else 0: the journal missed inputs, and restoring it would
        take the room back behind the store."""
        if self.writer is None:
            return 0
        keys = self.writer.store.keys(room.run) | set(self.writer.pending())
        prefix = room.records.key_prefix
        numbers = [key.removeprefix(prefix) for key in keys if key.startswith(prefix)]
        stored = max((int(n) for n in numbers if n.isdigit()), default=0)
        return stored if stored > room.series.finished else 0

    def _build(self, room_id: str, request: RoomRequest) -> Room:
        occupants: dict[Role, Occupant] = {}
        for role, spec in zip(ROLES, (request.house_buyer, request.house_seller), strict=True):
            if spec is None:
                continue
            player = None if self._resolve_player is None else self._resolve_player(spec)
            occupants[role] = (
                player if player is not None else House(spec, self._resolve_house(spec))
            )
        if len(occupants) == len(ROLES):
            raise ValueError("at most one seat can be a house agent")
        spec = DEFAULT_SPEC
        if request.deadline is not None:
            spec = DEFAULT_SPEC.model_copy(update={"deadline": request.deadline})

        secret = request.run_secret()
        count = request.negotiations or self.limits.max_series

        def scenarios(index: int) -> Scenario | None:
            if index >= count:
                return None
            return scenario_at(secret, request.index + index, request.tier, spec)

        settings = RoomSettings(
            scenarios=scenarios,
            occupants=occupants,
            rules=request.rules,
            clock=request.clock,
            seed=secret,
            limits=self.limits,
            experiment=Experiment(
                participant=request.participant, consent=request.consent, study=request.study
            ),
        )
        study_hook = None if request.study is None else self.studies
        return Room(room_id, settings, writer=self.writer, timer=self._timer, study_hook=study_hook)

    def seat_for_token(self, token: str) -> tuple[str, str] | None:
        """The (room, role) a token opens, compared in constant time; None if it opens none."""
        entry = self._entry(token)
        if entry is None or entry.role is None:
            return None
        return entry.room, entry.role

    def room_for_spectator(self, token: str) -> Room | None:
        """The room a spectator token opens (read-only, compared in constant time), or None.
        A seat token is not a spectator token: it opens no room page."""
        entry = self._entry(token)
        if entry is None or entry.role is not None:
            return None
        return self.rooms.get(entry.room)

    def market_for_spectator(self, token: str) -> MarketSeries | None:
        """The market room a spectator token opens (read-only, compared in constant time), or
        None; as ``room_for_spectator``, a seat token opens none."""
        entry = self._entry(token)
        if entry is None or entry.role is not None:
            return None
        return self.markets.get(entry.room)

    def _entry(self, token: str) -> Grant | None:
        grant = self.tokens.lookup(token)
        if grant is None or (grant.room not in self.rooms and grant.room not in self.markets):
            return None
        return grant

    def served_seat(self, room_id: str, name: str) -> ServedSeat | ServedMarketSeller:
        """The seat a token serves: a bilateral room's (``seat``), or in a market room the
        seller's or a buyer's (by name)."""
        market = self.markets.get(room_id)
        if market is not None:
            if name == SELLER:
                return ServedMarketSeller(market.current, series=market)
            return ServedMarketBuyer(market.current, name, series=market)
        return self.seat(room_id, "buyer" if name == "buyer" else "seller")

    def seat(self, room_id: str, role: Role) -> RoomSeat:
        """One seat of a bilateral room."""
        return RoomSeat(self.rooms[room_id], role)

    async def reap(self, interval: float = 1.0) -> None:
        """Forever: advance wall clocks, end abandoned negotiations, forget old finished rooms;
        beside it, retry the results that could not be written yet (in its own task, so that
        a slow store never holds up the rooms' clocks)."""
        async with anyio.create_task_group() as group:
            if self.writer is not None:
                group.start_soon(self.writer.retry_forever, interval)
            self._group = group
            try:
                for room in self.rooms.values():  # rooms restored before serving
                    self._play(room)
                for market in self.markets.values():
                    self._play_market(market)
                while True:
                    await anyio.sleep(interval)
                    await self.tick()
            finally:
                self._group = None

    def _play_market(self, market: MarketSeries) -> None:
        """Run a market room's in-process players (``MarketSeries.play``: each market's in
        turn) until the room is forgotten. Only while ``reap`` runs."""
        if not market.players or self._group is None or market.id in self._playing:
            return
        scope = self._playing[market.id] = anyio.CancelScope()

        async def play() -> None:
            with scope:
                await market.play()

        self._group.start_soon(play, name=f"players/{market.id}")

    def _play(self, room: Room) -> None:
        """Run a room's in-process players (an LLM seat) until the room is forgotten: each of
        its negotiations starts them (``Room.playing``). Only while ``reap`` runs."""
        if not room.seats.players or self._group is None or room.id in self._playing:
            return
        scope = anyio.CancelScope()
        self._playing[room.id] = scope

        async def play() -> None:
            with scope:
                async with room.playing():
                    await anyio.sleep_forever()

        self._group.start_soon(play, name=f"players/{room.id}")

    async def tick(self) -> None:
        """One pass of the reaper."""
        await self.studies.tick()
        now = self._timer()
        for room_id, market in list(self.markets.items()):
            try:
                await market.tick()
            except Exception:  # one bad room must not stop the reaper for the others
                log.exception("reaper failed", room=room_id)
                continue
            if market.current.is_open or not market.stored:
                continue
            ended = self._ended_at.setdefault(room_id, now)
            if now - ended >= self.retain_s:
                self._forget(room_id)
        for room_id, room in list(self.rooms.items()):
            try:
                await room.current.tick()
            except Exception:  # one bad room must not stop the reaper for the others
                log.exception("reaper failed", room=room_id)
                continue
            if room.current.is_open or room.records.has_pending():
                continue  # a room whose results are not all stored is never forgotten
            if room.settings.experiment.study is not None and room.series.can_start_next():
                continue  # a study's participant may come back to it at any time
            ended = self._ended_at.setdefault(room_id, now)
            if now - ended >= self.retain_s:
                self._forget(room_id)

    def close(self) -> None:
        """Close the rooms' journals (the server stops; they stay for the next start)."""
        for room in self.rooms.values():
            room.journal.close()
        for market in self.markets.values():
            if market.journal is not None:
                market.journal.close()
        self.studies.close()

    def _forget(self, room_id: str) -> None:
        playing = self._playing.pop(room_id, None)
        if playing is not None:
            playing.cancel()
        room = self.rooms.pop(room_id, None)
        if room is not None:
            room.journal.remove()
        market = self.markets.pop(room_id, None)
        if market is not None and market.journal is not None:
            market.journal.remove()
        self._ended_at.pop(room_id, None)
        self.tokens.revoke(room_id)

"""A room: a series of negotiations between remote seats and house agents, recorded as they end.

A finished negotiation is handed to the room's ``ResultWriter`` at once (in memory) and saved
off the event loop by the call that ended it (``save``), or later by the writer's retries: it
stays pending, whatever the room does next, until it is in the store. The room itself keeps
only the current negotiation, the totals of the series and its last ``RECENT_RESULTS`` results,
so a long series costs no more memory, and no longer replies, than a short one.

Each negotiation that goes to the store also keeps what its client seats read and did: the
briefing, then every call that reached the seat with the text it returned, as chat messages
(``extra["players"][role]["conversation"]``, what ``dealroom export-sft`` exports). A call
belongs to the conversation when it was answered before the negotiation was recorded; the call
during which the negotiation ended adds its reply too (before that call saves the row). Calls
whose arguments the tools could not read never reach the seat and are not in it; a negotiation
replayed from the journal after a restart, or whose seat made more than ``MAX_LOGGED_CALLS``
calls, stores none (its conversation would be incomplete). An in-process player (an LLM seat)
reports what it would return (usage, counts, its own conversation) as it plays
(``player_report``); the last report before the negotiation is recorded is stored beside it, and
when its own action ended the negotiation, its final report (with that action's reply) amends it.

A seat can also be played by an in-process player (an LLM agent): a ``SeatPlayer``, for the
clock a remote seat without a client, run as a task by ``Room.playing()``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Container, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

from dealroom.engine.match import seat_rng
from dealroom.protocol import (
    DEFAULT_RULES,
    ROLES,
    Agent,
    AgentFactory,
    Role,
    Rules,
    Scenario,
    SeriesResult,
    SessionErrorCode,
    seat_outcome,
    seat_view,
)
from dealroom.protocol.briefing import briefing
from dealroom.protocol.errors import DealroomError
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Secret, Seed, negotiation_seed, seed_json
from dealroom.protocol.tools import ToolName, function_schemas
from dealroom.protocol.wire import ClockKind, StudySeats
from dealroom.server.conversations import Conversations
from dealroom.server.journal import Op, RoomJournal
from dealroom.server.negotiation import DEFAULT_LIMITS, Negotiation, RoomLimits
from dealroom.server.pacing import Pacing
from dealroom.store.results import SerializedRecord
from dealroom.store.spool import PendingRow
from dealroom.store.writer import ResultWriter

log = structlog.stdlib.get_logger(__name__)

ScenarioSource = Callable[[int], Scenario | None]
"""The scenario of the n-th negotiation of a series (from 0), or None when there is no more."""

REMOTE_NAME = "mcp"
"""Name recorded for a seat played by an MCP client."""

RECENT_RESULTS = 20
"""How many of the last results a seat's state carries (the totals cover them all)."""

PLAYER_GRACE_S = 30.0
"""Wall seconds an in-process player whose own call ended its negotiation has to take the reply
and return (an LLM seat returns at once) before it is cancelled."""


class RoomError(DealroomError):
    """A request the room refused (not a rule of the negotiation); nothing changed."""

    def __init__(self, code: SessionErrorCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self._code = code
        self.message = message

    @property
    def code(self) -> SessionErrorCode:
        """Why the room refused."""
        return self._code


@dataclass(frozen=True, slots=True)
class House:
    """A house agent: its spec (recorded) and the factory that builds it."""

    spec: str
    factory: AgentFactory


@dataclass(frozen=True, slots=True)
class SeatPlayer:
    """An in-process player of one seat: its spec (recorded) and how it plays.

    ``play(room, role)`` plays the room's current negotiation through the seat's tools until it
    ends; a failure is its own to handle (``dealroom.play.runner.house_player`` walks away and
    sets ``Negotiation.errors``). It is cancelled when the negotiation ends, unless its own call
    ended it: then it takes that call's reply, reports what it has to store once more
    (``Room.player_done``) and returns, or is cancelled after ``PLAYER_GRACE_S``.
    """

    spec: str
    play: Callable[[Room, Role], Awaitable[None]]


class Room:
    """A series of negotiations with fixed seats, clock and rules."""

    def __init__(
        self,
        room_id: str,
        *,
        scenarios: ScenarioSource,
        houses: Mapping[Role, House] | None = None,
        players: Mapping[Role, SeatPlayer] | None = None,
        rules: Rules = DEFAULT_RULES,
        clock: ClockKind = "virtual",
        seed: Seed | None = None,
        writer: ResultWriter | None = None,
        limits: RoomLimits = DEFAULT_LIMITS,
        timer: Callable[[], float] = time.monotonic,
        participant: str | None = None,
        consent: str | None = None,
        study: StudySeats | None = None,
        on_record: Callable[[Room, Negotiation], None] | None = None,
    ) -> None:
        self.id = room_id
        self.participant = participant
        """Experiments: the experimenter's id for the person in the client seat."""
        self.study = study
        self.on_record = on_record
        """Told of each negotiation as it is recorded (a study's results), replays included."""
        self.run = study.id if study is not None else participant or room_id
        """The results store's run: the study, else the participant, else the room."""
        self.consent = consent
        """Experiments: the consent line the web seat page asks the person to agree to."""
        self.in_flight: dict[Role, int] = dict.fromkeys(ROLES, 0)
        """Each seat's calls being served now, on every route (``RoomSeat``)."""
        self.agreed: dict[Role, str] = {}
        """When (UTC, ISO 8601) each seat's person agreed to ``consent`` on the web page."""
        self.houses: dict[Role, House] = dict(houses or {})
        self.players: dict[Role, SeatPlayer] = dict(players or {})
        if self.houses.keys() & self.players.keys():
            raise ValueError("a seat has both a house agent and a player")
        if len(self.houses) + len(self.players) >= len(ROLES):
            raise ValueError("a room needs at least one seat for a client")
        self.remote_roles: tuple[Role, ...] = tuple(r for r in ROLES if r not in self.houses)
        self.client_roles: tuple[Role, ...] = tuple(
            r for r in self.remote_roles if r not in self.players
        )
        self.rules = rules
        self.clock: ClockKind = clock
        self.seed: Seed = Secret.new() if seed is None else seed
        """The series' secret (default: a fresh one no seat sees). Each negotiation's house
        agents draw under a key derived from it for that negotiation alone, which is what the
        store keeps (``negotiation_seed``): a seat reading the store computes no later one."""
        self.writer = writer
        self.limits = limits
        self._scenarios = scenarios
        self._timer = timer
        self.pacing = Pacing(limits, lambda: self._timer())
        self.finished = 0
        """How many negotiations of the series have finished (and been handed to the writer)."""
        self._recent: dict[Role, deque[SeriesResult]] = {
            role: deque(maxlen=RECENT_RESULTS) for role in ROLES
        }
        self._totals: dict[Role, Decimal] = dict.fromkeys(ROLES, Decimal("0.00"))
        self._group: TaskGroup | None = None
        self._playing: dict[int, dict[Role, anyio.CancelScope]] = {}
        """Each negotiation's running players, by seat."""
        self._amending: dict[int, PendingRow] = {}
        """The last two negotiations' rows, as stored: the replies that come after an end (to
        the client call that ended it, to the player action that did) amend them in turn."""
        self.journal: RoomJournal | None = None
        """Where the room's inputs are journaled (HTTP rooms), so it survives a restart."""
        self._conversations: Conversations | None = None
        self._reports: dict[Role, Mapping[str, Any]] = {}
        """What the current negotiation's in-process players reported (``player_report``)."""
        self._replayed = 0
        """The last negotiation rebuilt from the journal: its calls before the restart are gone."""
        self._current: Negotiation | None = None
        self._current = self._start()

    @property
    def current(self) -> Negotiation:
        """The negotiation being played (or the last one, once it has ended)."""
        assert self._current is not None
        return self._current

    @property
    def series(self) -> bool:
        """True when new_negotiation is available (one client seat, the other played in-house)."""
        return len(self.client_roles) == 1

    def can_start_next(self) -> bool:
        """True when new_negotiation would succeed now (pacing aside)."""
        current = self.current
        return self.series and not current.is_open and self._scenarios(current.number) is not None

    def new_negotiation(self, *, paced: bool = False) -> Negotiation:
        """Start the next negotiation of the series; ``paced`` (a seat's call, not a replay):
        within ``limits.negotiations_per_minute``."""
        if not self.series:
            raise RoomError(
                SessionErrorCode.SERIES_UNAVAILABLE,
                "This room plays one negotiation between two clients; ask the organiser for "
                "a new room.",
            )
        if self.current.is_open:
            raise RoomError(
                SessionErrorCode.NEGOTIATION_RUNNING,
                "The current negotiation is still running; finish it (or walk_away) first.",
            )
        if paced and (too_soon := self.pacing.starts.refusal(self._timer())):
            raise RoomError(SessionErrorCode.TOO_MANY_NEGOTIATIONS, too_soon)
        self._current = self._start()
        self.pacing.starts.started(self._timer())
        return self._current

    def results(self, role: Role) -> tuple[SeriesResult, ...]:
        """The last ``RECENT_RESULTS`` finished negotiations, as ``role`` saw them."""
        return tuple(self._recent[role])

    def total_surplus(self, role: Role) -> Decimal:
        """Sum of ``role``'s surplus over every finished negotiation."""
        return self._totals[role]

    def saved(self, negotiation: Negotiation) -> bool:
        """True once a finished negotiation survives the process (stored, or spooled)."""
        return self.writer is None or self.writer.durable(self.key(negotiation))

    def has_pending(self) -> bool:
        """True while a finished negotiation of this room is not in the store yet."""
        return self.writer is not None and self.writer.has_pending(self.key_prefix)

    async def save(self) -> None:
        """Write what has finished and is due (off the event loop, bounded; see ResultWriter),
        when this room has a result pending. A call of a room with nothing pending never waits
        on the writes of another room's results (their fsyncs: seconds on a busy disk)."""
        writer = self.writer
        if writer is not None and writer.has_pending(self.key_prefix):
            await writer.flush()

    def name(self, role: Role) -> str:
        """Who sits in a seat, as recorded: the house agent's or player's spec, or ``mcp``."""
        house = self.houses.get(role) or self.players.get(role)
        return house.spec if house is not None else REMOTE_NAME

    @asynccontextmanager
    async def playing(self) -> AsyncGenerator[None]:
        """Run the room's players: inside this block each negotiation starts them as tasks.

        Leaving the block cancels them; so does the end of their negotiation.
        """
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                if self.current.is_open:
                    self._launch(self.current)
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    def _launch(self, negotiation: Negotiation) -> None:
        if self._group is None or not self.players:
            return
        scopes = self._playing[negotiation.number] = {}
        for role, player in self.players.items():
            scope = scopes[role] = anyio.CancelScope()
            name = f"{player.spec}/{role}"
            self._group.start_soon(self._play, scope, player, role, name=name)

    async def _play(self, scope: anyio.CancelScope, player: SeatPlayer, role: Role) -> None:
        with scope:
            await player.play(self, role)

    def _start(self) -> Negotiation:
        number = 1 if self._current is None else self._current.number + 1
        scenario = self._scenarios(number - 1)
        if scenario is None:
            raise RoomError(
                SessionErrorCode.SERIES_OVER,
                f"The series is over: all {number - 1} scenarios have been played.",
            )
        key = negotiation_seed(self.seed, scenario.id)  # what the store keeps to replay it
        agents: dict[Role, Agent] = {
            role: house.factory(seat_view(scenario, role), seat_rng(key, scenario.id, role))
            for role, house in self.houses.items()
        }
        negotiation = Negotiation(
            scenario,
            number=number,
            rules=self.rules,
            clock=self.clock,
            houses=agents,
            players=tuple(self.players),
            on_end=self._record,
            limits=self.limits,
            timer=self._timer,
            journal=lambda op: self._log(number, op),
        )
        log.info("negotiation started", room=self.id, negotiation=number, scenario=scenario.id)
        self._reports = {}
        self._launch(negotiation)
        return negotiation

    def heard(
        self,
        negotiation: Negotiation,
        role: Role,
        name: ToolName,
        arguments: dict[str, Any],
        text: str,
    ) -> None:
        """One call of a client seat and the text it returned, for the stored conversation
        (see the module's docstring for which calls count)."""
        if self.writer is None or role not in negotiation.client_roles:
            return
        if negotiation.number <= self._replayed or negotiation is not self._current:
            return
        kept = self._conversations
        if kept is None or kept.number != negotiation.number:
            kept = self._conversations = Conversations(negotiation.number)
        if not negotiation.recorded:
            kept.add(role, name, arguments, text)
            return
        if negotiation.ended_during != role or kept.tail:
            return
        kept.tail = True
        kept.add(role, name, arguments, text)
        players = self._players(negotiation).get("players", {})
        clients = negotiation.client_roles
        self._amend(negotiation, {r: players[r] for r in clients if r in players}, over=clients)

    def player_report(self, negotiation: Negotiation, role: Role, data: Mapping[str, Any]) -> None:
        """What an in-process player of ``role`` has to store so far (an LLM seat's usage,
        counts and conversation): the latest before the negotiation is recorded is stored."""
        if negotiation is self._current and not negotiation.recorded and role in self.players:
            self._reports[role] = self._restarted(negotiation, data)

    def player_done(self, negotiation: Negotiation, role: Role, data: Mapping[str, Any]) -> None:
        """What an in-process player of ``role`` has to store, once it has returned. Stored in
        place of its last report when its own action ended the negotiation (the report before
        the end had no reply to that call, nor its count); otherwise that report is complete."""
        if role in negotiation.enders:
            self._amend(negotiation, {role: self._restarted(negotiation, data)}, over=(role,))

    def _amend(
        self, negotiation: Negotiation, players: Mapping[str, Any], *, over: Container[str]
    ) -> None:
        """Set the stored entries of the seats ``over`` to ``players``' (none: removed) on a
        recent negotiation's stored row, keeping the other seats' entries."""
        row = self._amending.get(negotiation.number)
        if row is None or self.writer is None:
            return
        before: Mapping[str, Any] = row.extra.get("players", {})
        kept = {r: v for r, v in before.items() if r not in over} | dict(players)
        extra = {k: v for k, v in row.extra.items() if k != "players"}
        row = replace(row, extra=extra | ({"players": kept} if kept else {}))
        self._amending[negotiation.number] = row
        self.writer.amend(row.key, row.extra)

    def _restarted(self, negotiation: Negotiation, data: Mapping[str, Any]) -> dict[str, Any]:
        """An in-process player's report, marked ``partial`` when its negotiation was rebuilt
        from the journal: the player restarted with the server, so its usage, counts and
        conversation hold only the calls after the restart."""
        if negotiation.number <= self._replayed:
            return {**data, "partial": "restarted"}
        return dict(data)

    def _players(self, negotiation: Negotiation) -> dict[str, Any]:
        """The ``players`` entry of a negotiation's extra: each in-process player's last report,
        and each client seat's briefing and calls (none when some call was left out, or the
        seat made no call)."""
        players: dict[str, Any] = {}
        if negotiation is self._current:
            players.update((role, data) for role, data in self._reports.items())
        kept = self._conversations
        if kept is None or kept.number != negotiation.number or not kept.complete:
            return {"players": players} if players else {}
        tools = function_schemas(self.rules, series=self.series)
        for role, calls in kept.calls.items():
            first = {"role": "user", "content": self._briefing(negotiation.scenario, role)}
            conversation = {"messages": [first, *calls], "tools": tools}
            players[role] = {"name": self.name(role), "conversation": conversation}
        return {"players": players} if players else {}

    def _briefing(self, scenario: Scenario, role: Role) -> str:
        return briefing(seat_view(scenario, role), self.rules, self.clock)

    def _log(self, number: int, op: Op) -> None:
        if self.journal is not None:
            self.journal.append(number, op)

    def replay(self, entries: Iterable[tuple[int, Op]]) -> None:
        """Rebuild the room from its journal: negotiation by negotiation, input by input."""
        for number, op in entries:
            while self.current.number < number:
                self.new_negotiation()
            if number != self.current.number:
                raise ValueError(f"journal: negotiation {number} after {self.current.number}")
            self._replayed = number
            match op:
                case ["consent", role, when]:  # the room's own input, not the schedule's
                    self.agreed.setdefault(role, str(when))
                case _:
                    self.current.replay(op)

    @property
    def key_prefix(self) -> str:
        """What every results-store key of this room starts with (room ids are unique)."""
        return f"{self.id}/"

    def key(self, negotiation: Negotiation) -> str:
        """The results-store key of one negotiation of this room."""
        return f"{self.key_prefix}{negotiation.number}"

    def _record(self, negotiation: Negotiation) -> None:
        """Take a finished negotiation: once, however often it is handed over."""
        outcome = negotiation.referee.outcome
        assert outcome is not None
        if negotiation.number <= self.finished:
            return
        self.finished = negotiation.number
        scenario = negotiation.scenario
        for role in ROLES:
            mine = seat_outcome(outcome, role)
            self._totals[role] += mine.surplus
            self._recent[role].append(SeriesResult.of(negotiation.number, scenario, role, mine))
        log.info(
            "negotiation ended",
            room=self.id,
            negotiation=negotiation.number,
            reason=outcome.end_reason,
            status=outcome.status,
        )
        if self.on_record is not None:
            self.on_record(self, negotiation)
        scopes = self._playing.pop(negotiation.number, {})
        for role, scope in scopes.items():
            if role in negotiation.enders:
                scope.deadline = anyio.current_time() + PLAYER_GRACE_S  # its reply is to come
            else:
                scope.cancel()  # done: whatever the player was doing no longer counts
        if self.writer is None:
            return
        record = NegotiationRecord(
            scenario=negotiation.scenario,
            buyer=self.name("buyer"),
            seller=self.name("seller"),
            events=negotiation.referee.events,
            outcome=outcome,
        )
        extra = {
            "room": self.id,
            "negotiation": negotiation.number,
            "clock": self.clock,
            "rules": self.rules.model_dump(mode="json"),
            "seats": {role: self.name(role) for role in ROLES},
            **seed_json(negotiation_seed(self.seed, scenario.id)),  # never the series' secret
            **({"errors": dict(negotiation.errors)} if negotiation.errors else {}),
            **({"participant": self.participant} if self.participant is not None else {}),
            **({"consent": self._consent_json()} if self.consent is not None else {}),
            **({"study": self.study.model_dump(mode="json")} if self.study is not None else {}),
            **self._players(negotiation),
        }
        row = PendingRow(self.key(negotiation), self.run, SerializedRecord.of(record), extra)
        self.writer.put(row)
        recent = {n: r for n, r in self._amending.items() if n == negotiation.number - 1}
        self._amending = recent | {negotiation.number: row}

    def needs_consent(self, role: Role) -> bool:
        """True while the room asks for consent and the seat's person has not agreed yet."""
        return self.consent is not None and role not in self.agreed

    def agree(self, role: Role, when: str | None = None) -> None:
        """The seat's person agreed to the consent line, now or ``when`` (the first time counts;
        journaled, so that a restarted server does not ask again)."""
        if role not in self.agreed:
            self.agreed[role] = when or datetime.now(UTC).isoformat(timespec="seconds")
            self._log(self.current.number, ["consent", role, self.agreed[role]])

    def _consent_json(self) -> dict[str, object]:
        return {"text": self.consent, "agreed": dict(self.agreed)}

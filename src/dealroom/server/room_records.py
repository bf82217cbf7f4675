"""What a room hands the results store: each finished negotiation's row, and what its seats
read and did, amended onto the row as the replies that come after the end arrive.

A finished negotiation is handed to the ``ResultWriter`` at once (in memory) and saved off the
event loop by the call that ended it (``save``), or later by the writer's retries: it stays
pending, whatever the room does next, until it is in the store.

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
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import replace
from typing import Any

from dealroom.protocol import Role, Scenario, seat_view
from dealroom.protocol.briefing import briefing
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.tools import ToolName, function_schemas
from dealroom.server.conversations import Conversations
from dealroom.server.negotiation import Negotiation
from dealroom.server.room_log import RoomLog
from dealroom.server.room_seats import RoomSeats
from dealroom.server.room_settings import RoomSettings
from dealroom.store.results import SerializedRecord
from dealroom.store.spool import PendingRow
from dealroom.store.writer import ResultWriter


class RoomRecords:
    """The results of one room: keys, rows, conversations and player reports."""

    def __init__(
        self,
        room_id: str,
        *,
        run: str,
        writer: ResultWriter | None,
        settings: RoomSettings,
        seats: RoomSeats,
        series: bool,
        log: RoomLog,
    ) -> None:
        self.run = run
        """The results store's run of the room's rows."""
        self.writer = writer
        self.key_prefix = f"{room_id}/"
        """What every results-store key of this room starts with (room ids are unique)."""
        self._settings = settings
        self._seats = seats
        self._series = series
        self._log = log
        self._current = 0
        """The number of the room's current negotiation."""
        self._conversations: Conversations | None = None
        self._reports: dict[Role, Mapping[str, Any]] = {}
        """What the current negotiation's in-process players reported (``player_report``)."""
        self._amending: dict[int, PendingRow] = {}
        """The last two negotiations' rows, as stored: the replies that come after an end (to
        the client call that ended it, to the player action that did) amend them in turn."""

    # -- the store ------------------------------------------------------------------------------

    def key(self, negotiation: Negotiation) -> str:
        """The results-store key of one negotiation of this room."""
        return f"{self.key_prefix}{negotiation.number}"

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

    def put(
        self, negotiation: Negotiation, record: NegotiationRecord, extra: dict[str, Any]
    ) -> None:
        """Hand a finished negotiation's row to the writer: ``extra`` and what its players
        read and did (nothing without a writer)."""
        if self.writer is None:
            return
        extra = {**extra, **self._players(negotiation)}
        row = PendingRow(self.key(negotiation), self.run, SerializedRecord.of(record), extra)
        self.writer.put(row)
        recent = {n: r for n, r in self._amending.items() if n == negotiation.number - 1}
        self._amending = recent | {negotiation.number: row}

    # -- what the seats read and did ------------------------------------------------------------

    def started(self, number: int) -> None:
        """Negotiation ``number`` is the room's current one now."""
        self._current = number
        self._reports = {}

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
        if negotiation.number <= self._log.replayed or negotiation.number != self._current:
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
        if negotiation.number != self._current or negotiation.recorded:
            return
        if role in self._seats.players:
            self._reports[role] = self._restarted(negotiation, data)

    def player_done(self, negotiation: Negotiation, role: Role, data: Mapping[str, Any]) -> None:
        """What an in-process player of ``role`` has to store, once it has returned. Stored in
        place of its last report when its own action ended the negotiation (the report before
        the end had no reply to that call, nor its count); otherwise that report is complete."""
        if role in negotiation.enders:
            self._amend(negotiation, {role: self._restarted(negotiation, data)}, over=(role,))

    def briefing(self, scenario: Scenario, role: Role) -> str:
        """The briefing a seat's stored conversation starts with."""
        return briefing(seat_view(scenario, role), self._settings.rules, self._settings.clock)

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
        if negotiation.number <= self._log.replayed:
            return {**data, "partial": "restarted"}
        return dict(data)

    def _players(self, negotiation: Negotiation) -> dict[str, Any]:
        """The ``players`` entry of a negotiation's extra: each in-process player's last report,
        and each client seat's briefing and calls (none when some call was left out, or the
        seat made no call)."""
        players: dict[str, Any] = {}
        if negotiation.number == self._current:
            players.update((role, data) for role, data in self._reports.items())
        kept = self._conversations
        if kept is None or kept.number != negotiation.number or not kept.complete:
            return {"players": players} if players else {}
        tools = function_schemas(self._settings.rules, series=self._series)
        for role, calls in kept.calls.items():
            first = {"role": "user", "content": self.briefing(negotiation.scenario, role)}
            conversation = {"messages": [first, *calls], "tools": tools}
            players[role] = {"name": self._seats.name(role), "conversation": conversation}
        return {"players": players} if players else {}

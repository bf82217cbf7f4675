"""A room: a series of negotiations between remote seats and house agents, recorded as they end.

A room is put together from parts with one idea each, so that what a seat is, what the series
is and what is journaled or stored is written once, whatever the number of seats:

- ``RoomSettings`` (``room_settings``): everything it plays by, one frozen object;
- ``RoomSeats`` (``room_seats``): each seat's occupant, calls in flight and series results;
- ``Series`` (``series``): the current negotiation, how many finished, starting the next;
- ``RoomLog`` (``room_log``): its journal, written as it plays and replayed at start;
- ``RoomRecords`` (``room_records``): the rows it hands the results store, conversations
  and player reports included;
- ``Consent`` and ``StudyHook`` (``room_experiment``): an experiment's side of it;
- ``PlayerTasks`` (``room_players``): its in-process players (LLM seats) run as tasks.

The room itself keeps only the current negotiation, the totals of the series and its last
``RECENT_RESULTS`` results, so a long series costs no more memory, and no longer replies, than
a short one.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import structlog

from dealroom.engine.match import seat_rng
from dealroom.protocol import Agent, Role, Scenario, seat_view
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Secret, Seed, negotiation_seed, seed_json
from dealroom.server.journal import Op
from dealroom.server.negotiation import Negotiation
from dealroom.server.pacing import MessageBudget, Pace
from dealroom.server.room_experiment import Consent, StudyHook, experiment_extra
from dealroom.server.room_log import RoomLog
from dealroom.server.room_players import PlayerTasks
from dealroom.server.room_records import RoomRecords
from dealroom.server.room_seats import RoomSeats
from dealroom.server.room_settings import RoomSettings, SeatPlayer
from dealroom.server.seat_names import client_name
from dealroom.server.series import Series
from dealroom.store.writer import ResultWriter

log = structlog.stdlib.get_logger(__name__)


class Room:
    """A series of negotiations with fixed seats, clock and rules.

    ``writer`` stores its finished negotiations (None: nothing is stored), ``timer`` is its
    wall clock (monotonic seconds), and ``study_hook`` hears of each result of a study's room.
    """

    def __init__(
        self,
        room_id: str,
        settings: RoomSettings,
        *,
        writer: ResultWriter | None = None,
        timer: Callable[[], float] = time.monotonic,
        study_hook: StudyHook | None = None,
    ) -> None:
        self.id = room_id
        self.settings = settings
        self.seed: Seed = Secret.new() if settings.seed is None else settings.seed
        """The series' secret (default: a fresh one no seat sees). Each negotiation's house
        agents draw under a key derived from it for that negotiation alone, which is what the
        store keeps (``negotiation_seed``): a seat reading the store computes no later one."""
        self.seats = RoomSeats(settings.occupants, client_name=client_name(settings.experiment))
        self.run = settings.experiment.run(room_id)
        """The results store's run: the study, else the participant, else the room."""
        self.study_hook = study_hook
        self.journal = RoomLog()
        self.consent = Consent(settings.experiment.consent, on_agree=self._agreed)
        available = len(self.seats.client_roles) == 1
        self.records = RoomRecords(
            room_id,
            run=self.run,
            writer=writer,
            settings=settings,
            seats=self.seats,
            series=available,
            log=self.journal,
        )
        self._timer = timer
        self._players = PlayerTasks(self.seats.players, self._play)
        pace = Pace(settings.limits.negotiations_per_minute)
        limits = settings.limits
        self.messages = MessageBudget(
            limits.message_chars_per_minute, limits.message_chars_per_series, timer
        )
        """What message text each client seat may still send (``server.pacing``)."""
        self.series: Series[Negotiation, Scenario] = Series(
            settings.scenarios, available=available, start=self._start, pace=pace, timer=timer
        )

    @property
    def current(self) -> Negotiation:
        """The negotiation being played (or the last one, once it has ended)."""
        return self.series.current

    @asynccontextmanager
    async def playing(self) -> AsyncGenerator[None]:
        """Run the room's players: inside this block each negotiation starts them as tasks.

        Leaving the block cancels them; so does the end of their negotiation.
        """
        async with self._players.playing(self.current):
            yield

    def replay(self, entries: Iterable[tuple[int, Op]]) -> None:
        """Rebuild the room from its journal: negotiation by negotiation, input by input."""
        self.journal.replay(entries, series=self.series, consent=self.consent)

    async def _play(self, player: SeatPlayer, role: Role) -> None:
        await player.play(self, role)

    def _start(self, number: int, scenario: Scenario) -> Negotiation:
        settings = self.settings
        key = negotiation_seed(self.seed, scenario.id)  # what the store keeps to replay it
        agents: dict[Role, Agent] = {
            role: house.factory(seat_view(scenario, role), seat_rng(key, scenario.id, role))
            for role, house in self.seats.houses.items()
        }
        negotiation = Negotiation(
            scenario,
            number=number,
            rules=settings.rules,
            clock=settings.clock,
            houses=agents,
            players=tuple(self.seats.players),
            on_end=self._record,
            limits=settings.limits,
            timer=self._timer,
            journal=lambda op: self.journal.append(number, op),
        )
        log.info("negotiation started", room=self.id, negotiation=number, scenario=scenario.id)
        self.records.started(number)
        self._players.launch(negotiation)
        return negotiation

    def _agreed(self, role: Role, when: str) -> None:
        self.journal.append(self.current.number, ["consent", role, when])

    def _record(self, negotiation: Negotiation) -> None:
        """Take a finished negotiation: once, however often it is handed over."""
        outcome = negotiation.referee.outcome
        assert outcome is not None
        if not self.series.finish(negotiation.number):
            return
        scenario = negotiation.scenario
        self.seats.finished(negotiation.number, scenario, outcome)
        log.info(
            "negotiation ended",
            room=self.id,
            negotiation=negotiation.number,
            reason=outcome.end_reason,
            status=outcome.status,
        )
        if self.study_hook is not None:
            self.study_hook.recorded(self, negotiation)
        self._players.ended(negotiation)
        if self.records.writer is None:
            return
        record = NegotiationRecord(
            scenario=scenario,
            buyer=self.seats.name("buyer"),
            seller=self.seats.name("seller"),
            events=negotiation.referee.events,
            outcome=outcome,
        )
        self.records.put(negotiation, record, self._extra(negotiation))

    def _extra(self, negotiation: Negotiation) -> dict[str, Any]:
        """What a stored row keeps beside the record (its players' part: ``RoomRecords``)."""
        settings = self.settings
        return {
            "room": self.id,
            "negotiation": negotiation.number,
            "clock": settings.clock,
            "rules": settings.rules.model_dump(mode="json"),
            "seats": self.seats.names(),
            # the negotiation's own key, never the series' secret
            **seed_json(negotiation_seed(self.seed, negotiation.scenario.id)),
            **({"errors": dict(negotiation.errors)} if negotiation.errors else {}),
            **experiment_extra(settings.experiment, self.consent),
        }

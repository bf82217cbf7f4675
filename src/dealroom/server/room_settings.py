"""What a room is made of: its scenarios, who plays each seat, its rules, clock, secret and
limits, and what an experiment records with it (``RoomSettings``, one frozen object).

A seat nobody in the room plays is a client's (an MCP client, a person's page); a seat can
instead hold a ``House`` agent (the schedule calls it in place) or a ``SeatPlayer`` (an
in-process player, such as an LLM seat, that plays through the seat's tools like a client).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dealroom.protocol import DEFAULT_RULES, AgentFactory, Role, Rules, Scenario
from dealroom.protocol.secret import Seed
from dealroom.protocol.wire import ClockKind, StudySeats
from dealroom.server.negotiation import DEFAULT_LIMITS, RoomLimits

if TYPE_CHECKING:
    from dealroom.server.room import Room

ScenarioSource = Callable[[int], Scenario | None]
"""The scenario of the n-th negotiation of a series (from 0), or None when there is no more."""


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
    (``RoomRecords.player_done``) and returns, or is cancelled after
    ``room_players.PLAYER_GRACE_S``.
    """

    spec: str
    play: Callable[[Room, Role], Awaitable[None]]


Occupant = House | SeatPlayer
"""Who plays a seat in the room's own process (a seat with none is a client's)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Experiment:
    """What an experiment records with each negotiation of the room (all optional)."""

    participant: str | None = None
    """The experimenter's id for the person in the client seat."""
    consent: str | None = None
    """The consent line the web seat page asks each client seat's person to agree to."""
    study: StudySeats | None = None
    """The study the room belongs to, and who of it sits where."""

    def run(self, room_id: str) -> str:
        """The results store's run of the room: the study, else the participant, else the room."""
        return self.study.id if self.study is not None else self.participant or room_id


@dataclass(frozen=True, slots=True, kw_only=True)
class RoomSettings:
    """Everything a room plays by, fixed for its life."""

    scenarios: ScenarioSource
    occupants: Mapping[Role, Occupant] = field(default_factory=dict[Role, Occupant])
    """The seats played in the room's process, by role; every other seat is a client's."""
    rules: Rules = DEFAULT_RULES
    clock: ClockKind = "virtual"
    seed: Seed | None = None
    """The series' secret (None: the room draws a fresh one no seat sees, ``Room.seed``)."""
    limits: RoomLimits = DEFAULT_LIMITS
    experiment: Experiment = Experiment()

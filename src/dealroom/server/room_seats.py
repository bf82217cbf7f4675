"""A room's seats, keyed by role: who plays each one and what the room keeps per seat.

Every per-seat fact of a room lives in its ``SeatSlot``: the occupant (a house agent, an
in-process player, or none: a client), the calls being served now, and the series' results as
that seat saw them. The room loops over its seats; nothing is written once for the buyer and
once for the seller.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from dealroom.protocol import ROLES, Outcome, Role, Scenario, SeriesResult, seat_outcome
from dealroom.server.room_settings import House, Occupant, SeatPlayer
from dealroom.server.seat_names import REMOTE_NAME

RECENT_RESULTS = 20
"""How many of the last results a seat's state carries (the totals cover them all)."""


def _recent() -> deque[SeriesResult]:
    return deque(maxlen=RECENT_RESULTS)


@dataclass(slots=True, eq=False)
class SeatSlot:
    """One seat of a room and what the room keeps of it."""

    role: Role
    occupant: Occupant | None = None
    """Who plays it in the room's process; None: a client."""
    in_flight: int = 0
    """Its calls being served now, on every route (``RoomSeat``)."""
    total_surplus: Decimal = Decimal("0.00")
    """Its surplus over every finished negotiation."""
    recent: deque[SeriesResult] = field(default_factory=_recent)
    """Its last ``RECENT_RESULTS`` finished negotiations, as it saw them."""
    client_name: str = REMOTE_NAME
    """What a client in this seat is recorded as (``server.seat_names``)."""

    @property
    def name(self) -> str:
        """Who sits here, as recorded: the house agent's or player's spec, or the client's
        name (``person`` in a room made for people, else ``mcp``)."""
        return self.client_name if self.occupant is None else self.occupant.spec

    @property
    def remote(self) -> bool:
        """Played through its tools (a client or an in-process player), not by a house agent."""
        return not isinstance(self.occupant, House)

    @property
    def client(self) -> bool:
        """Played by a client of the server (it gets a token)."""
        return self.occupant is None

    def results(self) -> tuple[SeriesResult, ...]:
        """The last ``RECENT_RESULTS`` finished negotiations, as this seat saw them."""
        return tuple(self.recent)

    def finished(self, number: int, scenario: Scenario, outcome: Outcome) -> None:
        """Count a finished negotiation (its ``number`` in the series) for this seat."""
        mine = seat_outcome(outcome, self.role)
        self.total_surplus += mine.surplus
        self.recent.append(SeriesResult.of(number, scenario, self.role, mine))


class RoomSeats:
    """Every seat of a room, in role order."""

    def __init__(
        self,
        occupants: Mapping[Role, Occupant],
        roles: tuple[Role, ...] = ROLES,
        *,
        client_name: str = REMOTE_NAME,
    ) -> None:
        unknown = set(occupants) - set(roles)
        if unknown:
            raise ValueError(f"no such seat: {', '.join(sorted(unknown))}")
        self._slots = {
            role: SeatSlot(role, occupants.get(role), client_name=client_name) for role in roles
        }
        self.roles = roles
        self.remote_roles: tuple[Role, ...] = tuple(s.role for s in self if s.remote)
        """The seats played through their tools (by a client or an in-process player)."""
        self.client_roles: tuple[Role, ...] = tuple(s.role for s in self if s.client)
        """The seats played by clients of the server."""
        if not self.client_roles:
            raise ValueError("a room needs at least one seat for a client")

    def __getitem__(self, role: Role) -> SeatSlot:
        return self._slots[role]

    def __iter__(self) -> Iterator[SeatSlot]:
        return iter(self._slots.values())

    @property
    def houses(self) -> dict[Role, House]:
        """The seats played by house agents."""
        return {s.role: s.occupant for s in self if isinstance(s.occupant, House)}

    @property
    def players(self) -> dict[Role, SeatPlayer]:
        """The seats played by in-process players."""
        return {s.role: s.occupant for s in self if isinstance(s.occupant, SeatPlayer)}

    def name(self, role: Role) -> str:
        """Who sits in a seat, as recorded (``SeatSlot.name``)."""
        return self._slots[role].name

    def names(self) -> dict[Role, str]:
        """Who sits in each seat, in role order."""
        return {s.role: s.name for s in self}

    def finished(self, number: int, scenario: Scenario, outcome: Outcome) -> None:
        """Count a finished negotiation for every seat."""
        for slot in self:
            slot.finished(number, scenario, outcome)

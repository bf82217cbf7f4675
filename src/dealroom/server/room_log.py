"""A room's journal as the room sees it: where its inputs go as they are made, and how a room
is rebuilt from them after a restart (the file itself: ``dealroom.server.journal``).

The registry attaches the file (``file``) once the room exists (HTTP rooms; a room in a stdio
server has none) and closes or removes it. ``replay`` walks the journal negotiation by
negotiation, starting each in turn as the series would, and gives each input to its owner: the
room's own (consent) to the room, every other to the current negotiation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from dealroom.server.journal import Op, RoomJournal
from dealroom.server.room_experiment import Consent
from dealroom.server.series import Numbered, Series


class Replaying(Numbered, Protocol):
    """What the restorer gives a negotiation: its inputs, one at a time
    (``Negotiation.replay``)."""

    def replay(self, op: Op) -> None:
        """Take one journaled input as it was made."""
        ...


class RoomLog:
    """The journal of one room: written as it plays, read back at start."""

    def __init__(self) -> None:
        self.file: RoomJournal | None = None
        """Where the room's inputs are journaled (HTTP rooms), so it survives a restart."""
        self.replayed = 0
        """The last negotiation rebuilt from the journal: its calls before the restart are gone."""

    def append(self, number: int, op: Op) -> None:
        """Journal one input of negotiation ``number`` (nothing without a file)."""
        if self.file is not None:
            self.file.append(number, op)

    def close(self) -> None:
        """Stop writing; the file stays for the next start."""
        if self.file is not None:
            self.file.close()

    def remove(self) -> None:
        """Stop writing and delete the file (the room is forgotten)."""
        if self.file is not None:
            self.file.remove()

    def replay(
        self, entries: Iterable[tuple[int, Op]], *, series: Series[Replaying, Any], consent: Consent
    ) -> None:
        """Rebuild a room from its journal: negotiation by negotiation, input by input."""
        for number, op in entries:
            while series.current.number < number:
                series.start_next()
            if number != series.current.number:
                raise ValueError(f"journal: negotiation {number} after {series.current.number}")
            self.replayed = number
            match op:
                case ["consent", role, when]:  # the room's own input, not the schedule's
                    consent.restore(role, str(when))
                case _:
                    series.current.replay(op)

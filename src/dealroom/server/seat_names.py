"""The name a results store records for a seat that no agent of the server plays.

A client seat of a server's room is played from outside: by an MCP client, or by a person on
the web seat page (the same tools, the same token). A room made for people (a study's, or one
that asks for consent) records ``person``; any other room ``mcp``. A participant id alone does
not make a room one for people: harnesses name their runs with it (the verifiers environment's
rooms are played by models).
Neither is an agent spec, so neither can be replayed (``dealroom.training.sft``) or confused with
the terminal's ``human`` seat.
"""

from __future__ import annotations

from typing import Protocol

REMOTE_NAME = "mcp"
"""Name recorded for a client seat of a room not made for people (an MCP client's)."""

PERSON_NAME = "person"
"""Name recorded for a client seat of a room made for people (the web seat page's)."""

CLIENT_NAMES = frozenset({REMOTE_NAME, PERSON_NAME})
"""Every name a client seat is recorded under."""


class _PeopleRoom(Protocol):
    @property
    def consent(self) -> str | None: ...
    @property
    def study(self) -> object | None: ...


def client_name(room: _PeopleRoom) -> str:
    """The recorded name of client seats in a room of ``room``'s experiment settings
    (``server.room_settings.Experiment``)."""
    people = room.study is not None or room.consent is not None
    return PERSON_NAME if people else REMOTE_NAME

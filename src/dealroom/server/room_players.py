"""A room's in-process players (``SeatPlayer``: an LLM seat) run as tasks, one per seat and
negotiation, while the room is ``playing``: each negotiation starts them, and its end cancels
them, or gives the player whose own call ended it ``PLAYER_GRACE_S`` to take the reply."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager

import anyio
from anyio.abc import TaskGroup

from dealroom.protocol import Role
from dealroom.server.negotiation import Negotiation
from dealroom.server.room_settings import SeatPlayer

PLAYER_GRACE_S = 30.0
"""Wall seconds an in-process player whose own call ended its negotiation has to take the reply
and return (an LLM seat returns at once) before it is cancelled."""

Play = Callable[[SeatPlayer, Role], Awaitable[None]]
"""How a player plays its seat of the room (``SeatPlayer.play`` bound to the room)."""


class PlayerTasks:
    """The tasks of a room's in-process players."""

    def __init__(self, players: Mapping[Role, SeatPlayer], play: Play) -> None:
        self._players = dict(players)
        self._play_seat = play
        self._group: TaskGroup | None = None
        self._playing: dict[int, dict[Role, anyio.CancelScope]] = {}
        """Each negotiation's running players, by seat."""

    @asynccontextmanager
    async def playing(self, current: Negotiation) -> AsyncGenerator[None]:
        """Inside this block each negotiation starts its players (``launch``), ``current``
        at once if it is open. Leaving the block cancels them."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                if current.is_open:
                    self.launch(current)
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    def launch(self, negotiation: Negotiation) -> None:
        """Start the players of a new negotiation (only inside ``playing``)."""
        if self._group is None or not self._players:
            return
        scopes = self._playing[negotiation.number] = {}
        for role, player in self._players.items():
            scope = scopes[role] = anyio.CancelScope()
            name = f"{player.spec}/{role}"
            self._group.start_soon(self._play, scope, player, role, name=name)

    def ended(self, negotiation: Negotiation) -> None:
        """The negotiation ended: cancel its players, but give one whose reply is to come (its
        call or action ended it) ``PLAYER_GRACE_S`` to take it and return."""
        scopes = self._playing.pop(negotiation.number, {})
        for role, scope in scopes.items():
            if role in negotiation.enders:
                scope.deadline = anyio.current_time() + PLAYER_GRACE_S  # its reply is to come
            else:
                scope.cancel()  # done: whatever the player was doing no longer counts

    async def _play(self, scope: anyio.CancelScope, player: SeatPlayer, role: Role) -> None:
        with scope:
            await self._play_seat(player, role)

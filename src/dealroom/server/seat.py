"""One seat, as the MCP tools see it: a Protocol with a local and a remote implementation.

``LocalSeat`` plays a seat of a ``Room`` in this process (stdio house mode, HTTP rooms);
``dealroom.server.mcp_proxy.RemoteSeat`` forwards to a seat of a room on an HTTP server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from dealroom.protocol import (
    Action,
    ActionResult,
    Role,
    RuleViolation,
    SeatState,
    SessionErrorCode,
    ToolErrorPayload,
    WaitResult,
)
from dealroom.server import texts
from dealroom.server.room import Room, RoomError


class SeatError(Exception):
    """A refused call; ``payload`` is what the model reads. Nothing changed."""

    def __init__(self, payload: ToolErrorPayload) -> None:
        super().__init__(payload.text())
        self.payload = payload


class SeatBackend(Protocol):
    """What the tools, resources and prompt of one seat need."""

    @property
    def log_context(self) -> Mapping[str, str]:
        """Fields bound to every log line of a call (room, seat)."""
        ...

    async def act(self, action: Action) -> ActionResult:
        """One action; raises SeatError if refused."""
        ...

    async def wait(self, timeout_s: float) -> WaitResult:
        """Long-poll for the other side's next move."""
        ...

    async def state(self) -> SeatState:
        """The seat's observation and series results; marks every event as seen."""
        ...

    async def new_negotiation(self) -> SeatState:
        """Start the next negotiation of the series; raises SeatError if not possible now."""
        ...

    async def observation_json(self) -> str:
        """The observation resource (JSON)."""
        ...

    async def transcript(self) -> str:
        """The transcript resource (text)."""
        ...

    async def briefing(self) -> str:
        """The briefing prompt (text)."""
        ...


class LocalSeat:
    """A seat of a room in this process."""

    def __init__(self, room: Room, role: Role) -> None:
        if role not in room.remote_roles:
            raise ValueError(f"the {role} seat of room {room.id} is played by a house agent")
        self.room = room
        self.role: Role = role

    @property
    def log_context(self) -> Mapping[str, str]:
        """Room and seat."""
        return {"room": self.room.id, "seat": self.role}

    async def act(self, action: Action) -> ActionResult:
        """One action on the current negotiation.

        An action that took effect and ended the negotiation, whose result could not be saved
        yet, raises SeatError ``result_pending``: it says that the action counted.
        """
        negotiation = self.room.current
        try:
            result = await negotiation.act(self.role, action)
        except RuleViolation as violation:
            raise SeatError(texts.error_payload(violation.code, violation.message)) from None
        finally:
            await self.room.save()
        if result.ok and result.outcome is not None and not self.room.saved(negotiation):
            message = texts.result_pending(action, result.outcome, negotiation.scenario.currency)
            raise SeatError(texts.error_payload(SessionErrorCode.RESULT_PENDING, message))
        return result

    async def wait(self, timeout_s: float) -> WaitResult:
        """Long-poll on the current negotiation."""
        try:
            return await self.room.current.wait(self.role, timeout_s)
        finally:
            await self.room.save()

    async def state(self) -> SeatState:
        """Observation plus series results."""
        room, role = self.room, self.role
        negotiation = room.current
        try:
            observation = await negotiation.observe(role, deliver=True)
        finally:
            await room.save()
        return SeatState(
            observation=observation,
            negotiation=negotiation.number,
            results=room.results(role),
            finished=room.finished,
            total_surplus=room.total_surplus(role),
            can_start_next=room.can_start_next(),
            clock=room.clock,
            hint=negotiation.hint(role),
        )

    async def new_negotiation(self) -> SeatState:
        """Next negotiation of the series."""
        try:
            self.room.new_negotiation()
        except RoomError as error:
            raise SeatError(texts.error_payload(error.code, error.message)) from None
        return await self.state()

    async def observation_json(self) -> str:
        """The current observation as JSON (does not mark events as seen)."""
        observation = await self.room.current.observe(self.role, deliver=False)
        return observation.model_dump_json(indent=2)

    async def transcript(self) -> str:
        """The current negotiation so far, one line per event."""
        return texts.transcript(await self.room.current.observe(self.role, deliver=False))

    async def briefing(self) -> str:
        """Role, item, own value, rules, clock and how to use the tools."""
        negotiation = self.room.current
        observation = await negotiation.observe(self.role, deliver=False)
        return texts.briefing(
            observation,
            self.room.rules,
            clock=self.room.clock,
            series=self.room.series,
            number=negotiation.number,
        )

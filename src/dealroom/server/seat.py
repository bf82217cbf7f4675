"""One seat, as the MCP tools see it: a Protocol with a local and a remote implementation.

``RoomSeat`` plays a seat of a ``Room`` in this process (stdio house mode, HTTP rooms);
``dealroom.server.mcp_proxy.UpstreamSeat`` forwards to a seat of a room on an HTTP server.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Generator, Mapping
from types import MappingProxyType
from typing import Any, Protocol

from dealroom.protocol import (
    Action,
    ActionResult,
    Refusal,
    Role,
    Rules,
    RuleViolation,
    SeatState,
    SessionErrorCode,
    ToolErrorPayload,
    WaitResult,
    model_seat,
    seat_text,
)
from dealroom.protocol.arguments import arguments_of
from dealroom.protocol.tools import SEAT_TOOLS, ToolName, tool_of
from dealroom.server import texts
from dealroom.server.negotiation import Negotiation
from dealroom.server.room import Room
from dealroom.server.room_error import RoomError

_DESCRIPTIONS: dict[str, Mapping[str, str]] = {}


def descriptions(rules: Rules) -> Mapping[str, str]:
    """Every tool's description under ``rules`` (rooms share a few rule sets: cached)."""
    key = rules.model_dump_json()
    cached = _DESCRIPTIONS.get(key)
    if cached is None:
        if len(_DESCRIPTIONS) >= 64:
            _DESCRIPTIONS.clear()
        cached = MappingProxyType({tool.name: tool.description(rules) for tool in SEAT_TOOLS})
        _DESCRIPTIONS[key] = cached
    return cached


SEAT_CALLS_IN_FLIGHT = 8
"""Most calls one seat may have in flight at once, over all its sessions and routes (a client
makes one at a time; a model may make a few in parallel)."""


class CallRefused(Refusal):
    """A call the served seat refused (a rule, the room, the seat's limits). Nothing changed."""


class ServedSeat(Protocol):
    """One seat as the server serves it: what its tools, resources and prompt act on."""

    @property
    def log_context(self) -> Mapping[str, str]:
        """Fields bound to every log line of a call (room, seat)."""
        ...

    async def act(self, action: Action) -> ActionResult:
        """One action; raises CallRefused if refused."""
        ...

    async def viewer(self) -> tuple[Role, str]:
        """The seat's role and the current negotiation's currency (to render results)."""
        ...

    async def tool_descriptions(self) -> Mapping[str, str]:
        """Each tool's description under the rules of the seat's room."""
        ...

    async def wait(self, timeout_s: float) -> WaitResult:
        """Long-poll for the other side's next move."""
        ...

    async def state(self) -> SeatState:
        """The seat's observation and series results; marks every event as seen."""
        ...

    async def new_negotiation(self) -> SeatState:
        """Start the next negotiation of the series; raises CallRefused if not possible now."""
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

    async def model_tools(self) -> str:
        """The model_tools resource: the seat's tools as the one model seat offers them to a
        model (JSON)."""
        ...


class RoomSeat:
    """A seat of a room in this process."""

    def __init__(self, room: Room, role: Role) -> None:
        if role not in room.seats.remote_roles:
            raise ValueError(f"the {role} seat of room {room.id} is played by a house agent")
        self.room = room
        self.role: Role = role

    @property
    def log_context(self) -> Mapping[str, str]:
        """Room and seat."""
        return {"room": self.room.id, "seat": self.role}

    async def viewer(self) -> tuple[Role, str]:
        """Role and currency."""
        return self.role, self.room.current.scenario.currency

    async def tool_descriptions(self) -> Mapping[str, str]:
        """Rendered from the room's rules."""
        return descriptions(self.room.settings.rules)

    async def act(self, action: Action) -> ActionResult:
        """One action on the current negotiation.

        An action that took effect and ended the negotiation, whose result could not be saved
        yet, raises CallRefused ``result_pending``: it says that the action counted.
        """
        with self._counted():
            return await self._act(action)

    async def _act(self, action: Action) -> ActionResult:
        self._consented()
        if self.room.seats[self.role].client and (
            over := self.room.messages.charge(self.role, action)
        ):
            code = SessionErrorCode.TOO_MANY_MESSAGE_CHARS
            raise CallRefused(seat_text.error_payload(code, over))
        negotiation = self.room.current
        try:
            try:
                result = await negotiation.act(self.role, action)
            except RuleViolation as violation:
                refusal = seat_text.error_payload(violation.code, violation.message)
                self._heard(negotiation, action, refusal)
                raise CallRefused(refusal) from None
            self._heard(negotiation, action, result)
        finally:
            await self.room.records.save()
        if result.ok and result.outcome is not None and not self.room.records.saved(negotiation):
            message = texts.result_pending(action, result.outcome, negotiation.scenario.currency)
            raise CallRefused(seat_text.error_payload(SessionErrorCode.RESULT_PENDING, message))
        return result

    async def wait(self, timeout_s: float) -> WaitResult:
        """Long-poll on the current negotiation."""
        with self._counted():
            return await self._wait(timeout_s)

    async def _wait(self, timeout_s: float) -> WaitResult:
        self._consented()
        negotiation = self.room.current
        try:
            result = await negotiation.wait(self.role, timeout_s)
            self._heard(negotiation, ("wait_for_opponent", {"timeout_s": timeout_s}), result)
            return result
        finally:
            await self.room.records.save()

    async def state(self) -> SeatState:
        """Observation plus series results."""
        with self._counted():
            return await self._full_state()

    async def _full_state(self) -> SeatState:
        negotiation = self.room.current
        try:
            state = await self._state(negotiation)
            if self.room.records.writer is not None:
                text = seat_text.state_text(state)
                self.room.records.heard(negotiation, self.role, "get_state", {}, text)
            return state
        finally:
            await self.room.records.save()

    @contextlib.contextmanager
    def _counted(self) -> Generator[None]:
        """Count a call of this seat while it is served; refuse one past
        ``SEAT_CALLS_IN_FLIGHT`` at once (``too_many_calls``), before it queues for the seat.
        Each call in flight holds a connection: a token flooding calls (a thousand long polls
        in one session) would otherwise hold every connection of the server."""
        slot = self.room.seats[self.role]
        if slot.in_flight >= SEAT_CALLS_IN_FLIGHT:
            message = (
                f"This seat already has {SEAT_CALLS_IN_FLIGHT} calls in flight; wait for their "
                "replies before calling again."
            )
            raise CallRefused(seat_text.error_payload(SessionErrorCode.TOO_MANY_CALLS, message))
        slot.in_flight += 1
        try:
            yield
        finally:
            slot.in_flight -= 1

    def _consented(self) -> None:
        """Refuse (``consent_required``) a call that plays, while the room asks the person in
        this client seat for consent and they have not agreed: on every route (MCP, the web
        page), as every call comes through here. ``get_state`` reads the briefing and is let
        through; a seat played in process asks no one."""
        if self.room.seats[self.role].client and self.room.consent.needed(self.role):
            message = "Read the instructions and agree to take part before the first negotiation."
            raise CallRefused(seat_text.error_payload(SessionErrorCode.CONSENT_REQUIRED, message))

    async def _state(self, negotiation: Negotiation) -> SeatState:
        room, role = self.room, self.role
        observation = await negotiation.observe(role, deliver=True)
        return SeatState(
            observation=observation,
            negotiation=negotiation.number,
            results=room.seats[role].results(),
            finished=room.series.finished,
            total_surplus=room.seats[role].total_surplus,
            can_start_next=room.series.can_start_next(),
            clock=room.settings.clock,
            hint=negotiation.hint(role),
        )

    def _heard(
        self,
        negotiation: Negotiation,
        call: Action | tuple[ToolName, dict[str, Any]],
        reply: ActionResult | WaitResult | ToolErrorPayload,
    ) -> None:
        """Hand the room the call (an action, or a tool's name and arguments) and the text the
        seat reads for it; built only when the room stores its negotiations."""
        if self.room.records.writer is None:
            return
        if isinstance(call, tuple):
            name, arguments = call
        else:
            name, arguments = tool_of(call.type).name, arguments_of(call)
        if isinstance(reply, ToolErrorPayload):
            text = reply.text()
        else:
            text = seat_text.update_text(reply, self.role, negotiation.scenario.currency)
        self.room.records.heard(negotiation, self.role, name, arguments, text)

    async def new_negotiation(self) -> SeatState:
        """Next negotiation of the series."""
        with self._counted():
            return await self._new_negotiation()

    async def _new_negotiation(self) -> SeatState:
        self._consented()
        try:
            self.room.series.start_next(paced=True)
        except RoomError as error:
            raise CallRefused(seat_text.error_payload(error.code, error.message)) from None
        try:
            return await self._state(self.room.current)  # not a call of its conversation
        finally:
            await self.room.records.save()

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
        return texts.briefing(observation, self.room.settings.rules, clock=self.room.settings.clock)

    async def model_tools(self) -> str:
        """``model_seat.tools`` under the room's rules, as JSON: the tools a model reads."""
        return json.dumps(model_seat.tools(self.room.settings.rules))

"""The seat proxy: a stdio MCP server that forwards every call to one seat of an HTTP room.

For stdio-only hosts (Claude Desktop): the host launches ``dealroom seat --server URL`` with the
seat token in ``DEALROOM_SEAT_TOKEN``; the proxy offers the same tools, resources and prompt,
and relays each call with ``Authorization: Bearer <token>``. Refusals keep their codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import anyio
import httpx2
import structlog
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent
from pydantic import BaseModel, ValidationError

from dealroom.protocol import (
    Action,
    ActionResult,
    Observation,
    Role,
    SeatState,
    SessionErrorCode,
    ToolErrorPayload,
    WaitResult,
    seat_text,
)
from dealroom.protocol.tools import arguments_of
from dealroom.server.mcp_app import OBSERVATION_URI, TRANSCRIPT_URI, build_app
from dealroom.server.seat import SeatError
from dealroom.server.stdio_wire import serve_stdio_wire

log = structlog.stdlib.get_logger(__name__)

M = TypeVar("M", bound=BaseModel)

_UPSTREAM_ERRORS = (httpx2.HTTPError, MCPError, OSError, anyio.BrokenResourceError)


class RemoteSeat:
    """A SeatBackend that relays to a seat of an HTTP room through an MCP client."""

    def __init__(self, client: Client, server: str) -> None:
        self.client = client
        self.server = server
        self._viewer: tuple[Role, str] | None = None
        self._descriptions: Mapping[str, str] | None = None

    @property
    def log_context(self) -> Mapping[str, str]:
        """The upstream server."""
        return {"upstream": self.server}

    async def viewer(self) -> tuple[Role, str]:
        """Role and currency, read once from the upstream observation."""
        if self._viewer is None:
            try:
                observation = Observation.model_validate_json(await self._resource(OBSERVATION_URI))
            except ValidationError:
                raise _unavailable(ValueError("the server's answer was not understood")) from None
            self._viewer = (observation.role, observation.scenario.currency)
        return self._viewer

    async def tool_descriptions(self) -> Mapping[str, str]:
        """The upstream server's own descriptions (rendered there from the room's rules)."""
        if self._descriptions is None:
            try:
                listed = await self.client.list_tools()
            except _UPSTREAM_ERRORS as exc:
                raise _unavailable(exc) from None
            self._descriptions = {t.name: t.description or "" for t in listed.tools}
        return self._descriptions

    async def act(self, action: Action) -> ActionResult:
        """Relay one action."""
        return await self._tool(action.type, arguments_of(action), ActionResult)

    async def wait(self, timeout_s: float) -> WaitResult:
        """Relay a long-poll."""
        return await self._tool("wait_for_opponent", {"timeout_s": timeout_s}, WaitResult)

    async def state(self) -> SeatState:
        """Relay get_state."""
        return await self._tool("get_state", {}, SeatState)

    async def new_negotiation(self) -> SeatState:
        """Relay new_negotiation."""
        return await self._tool("new_negotiation", {}, SeatState)

    async def observation_json(self) -> str:
        """The upstream observation resource."""
        return await self._resource(OBSERVATION_URI)

    async def transcript(self) -> str:
        """The upstream transcript resource."""
        return await self._resource(TRANSCRIPT_URI)

    async def briefing(self) -> str:
        """The upstream briefing prompt."""
        try:
            prompt = await self.client.get_prompt("briefing")
        except _UPSTREAM_ERRORS as exc:
            raise _unavailable(exc) from None
        return "\n".join(
            m.content.text for m in prompt.messages if isinstance(m.content, TextContent)
        )

    async def _tool(self, name: str, arguments: dict[str, Any], model: type[M]) -> M:
        try:
            result = await self.client.call_tool(name, arguments)
        except _UPSTREAM_ERRORS as exc:
            raise _unavailable(exc) from None
        text = "".join(c.text for c in result.content if isinstance(c, TextContent))
        if result.is_error:
            raise SeatError(ToolErrorPayload.parse(text))
        try:
            return model.model_validate(result.structured_content)
        except ValidationError:
            log.warning("unexpected upstream result", tool=name)
            raise _unavailable(ValueError("the server's answer was not understood")) from None

    async def _resource(self, uri: str) -> str:
        try:
            result = await self.client.read_resource(uri)
        except _UPSTREAM_ERRORS as exc:
            raise _unavailable(exc) from None
        return "".join(getattr(c, "text", "") for c in result.contents)


def _unavailable(exc: BaseException) -> SeatError:
    log.warning("upstream call failed", error=type(exc).__name__)
    return SeatError(
        seat_text.error_payload(
            SessionErrorCode.UPSTREAM_UNAVAILABLE,
            f"The room server did not answer ({type(exc).__name__}).",
        )
    )


async def serve_proxy(server: str, token: str, *, read_timeout_s: float = 120.0) -> None:
    """Relay stdin/stdout MCP to ``server`` (the room server's /mcp URL) until stdin closes."""
    timeout = httpx2.Timeout(30.0, read=read_timeout_s)
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        Client(streamable_http_client(server, http_client=http)) as client,
    ):
        seat = RemoteSeat(client, server)
        app = build_app(lambda: seat, name="dealroom-seat")
        await serve_stdio_wire(app)

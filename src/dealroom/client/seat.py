"""A client for one seat of a dealroom MCP server: in memory, over stdio, or over HTTP.

Usage::

    async with SeatClient.stdio(["dealroom", "serve", "--role", "buyer"]) as seat:
        state = await seat.get_state()
        result = await seat.make_offer(900, message="My best offer.")
        async for event in seat.events():
            ...

Every typed method mirrors one tool and returns its wire model. A refused call raises
``SeatError`` (its ``payload`` holds the stable code and the message); the negotiation is
unchanged. ``call_tool`` and ``list_tools`` give the raw MCP results, for adapters (such as the
LLM agent) that hand the server's own tools to a model.

Error tree::

    SeatError            the server refused a call (code and message from the tool error)
    SeatClosedError      the seat is not connected
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack
from decimal import Decimal
from typing import Any, TypeVar

import httpx2
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ListToolsResult, TextContent
from pydantic import BaseModel

from dealroom.protocol import (
    Accept,
    Action,
    ActionResult,
    Event,
    MakeOffer,
    Refusal,
    Reject,
    SeatState,
    SendMessage,
    ToolErrorPayload,
    WaitResult,
    WalkAway,
)
from dealroom.protocol.arguments import arguments_of
from dealroom.protocol.errors import DealroomError
from dealroom.server.mcp_app import DirectSession
from dealroom.server.seat import ServedSeat

M = TypeVar("M", bound=BaseModel)

SEAT_TOKEN_ENV = "DEALROOM_SEAT_TOKEN"
"""Where ``dealroom seat`` and ``SeatClient.http`` read a seat token when none is given."""


_VALIDATORS: dict[str, Any] = {}
"""Compiled output-schema validators, by schema (canonical JSON), shared by every seat."""

_MAX_VALIDATORS = 256


def _share_validators(session: ClientSession) -> None:
    """Let ``session`` reuse the output-schema validators other seats have compiled.

    The mcp client validates every structured tool result against the tool's output schema,
    compiling a validator per tool per session (jsonschema's schema check and compile, by far
    the costliest part of opening a seat). Results are still validated; only the compile is
    shared between sessions, keyed by the schema itself. A schema that fails to compile is
    never cached, so it fails on every call as before.
    """
    compile_: Callable[[str, dict[str, Any]], Any] | None = getattr(
        session, "_output_schema_validator", None
    )
    if compile_ is None:  # another mcp version: every session compiles its own
        return
    mine: dict[str, tuple[dict[str, Any], Any]] = {}

    def shared(name: str, output_schema: dict[str, Any]) -> Any:
        hit = mine.get(name)
        if hit is not None and hit[0] is output_schema:
            return hit[1]
        key = json.dumps(output_schema, sort_keys=True)
        validator = _VALIDATORS.get(key)
        if validator is None:
            validator = compile_(name, output_schema)
            if len(_VALIDATORS) >= _MAX_VALIDATORS:
                _VALIDATORS.clear()
            _VALIDATORS[key] = validator
        mine[name] = (output_schema, validator)
        return validator

    # The SDK's private hook (checked above); setattr: pyright strict refuses the private name.
    setattr(session, "_output_schema_validator", shared)  # noqa: B010


class SeatError(Refusal):
    """A tool call the server refused; the negotiation did not change."""

    def __init__(self, tool: str, payload: ToolErrorPayload) -> None:
        super().__init__(payload, tool=tool)
        self.tool = tool


class SeatClosedError(DealroomError):
    """The seat is not connected (use it inside ``async with``)."""

    kind = "seat_closed"


class SeatClient:
    """One seat of a negotiation, over any MCP transport. Use as an async context manager."""

    def __init__(
        self,
        server: MCPServer | StdioServerParameters | str | Any,
        *,
        http_client: httpx2.AsyncClient | None = None,
        read_timeout_s: float | None = None,
    ) -> None:
        self._server = server
        self._http_client = http_client
        self._read_timeout_s = read_timeout_s
        self._client: Client | DirectSession | None = None
        self._stack: AsyncExitStack | None = None

    # -- connecting ----------------------------------------------------------------------------

    @classmethod
    def memory(cls, app: MCPServer) -> SeatClient:
        """A seat of an in-process server app, through an in-memory MCP session (no
        transport, for tests)."""
        return cls(app)

    @classmethod
    def local(cls, seat: ServedSeat) -> SeatClient:
        """A seat of a room in this process, its tools called as functions (``DirectSession``):
        the same tools, results and briefing as over MCP, without the protocol's CPU (local
        matches and tournaments). No series tool: one negotiation."""
        return cls(DirectSession(seat, series=False))

    @classmethod
    def stdio(
        cls,
        command: Sequence[str] | StdioServerParameters,
        *,
        env: dict[str, str] | None = None,
        read_timeout_s: float | None = None,
    ) -> SeatClient:
        """A seat of a server launched as a subprocess (``dealroom serve ...``), over stdio."""
        if isinstance(command, StdioServerParameters):
            params = command
        else:
            params = StdioServerParameters(command=command[0], args=list(command[1:]), env=env)
        return cls(params, read_timeout_s=read_timeout_s)

    @classmethod
    def http(
        cls,
        url: str,
        token: str | None = None,
        *,
        timeout_s: float = 30.0,
        read_timeout_s: float = 120.0,
    ) -> SeatClient:
        """A seat of a room on an HTTP server (``.../mcp``), with its bearer token.

        The token defaults to ``$DEALROOM_SEAT_TOKEN``.
        """
        token = token or os.environ.get(SEAT_TOKEN_ENV)
        if not token:
            raise ValueError(f"no seat token: pass one or set {SEAT_TOKEN_ENV}")
        client = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx2.Timeout(timeout_s, read=read_timeout_s),
        )
        return cls(url, http_client=client, read_timeout_s=read_timeout_s)

    async def __aenter__(self) -> SeatClient:
        if isinstance(self._server, DirectSession):
            self._client, self._stack = self._server, AsyncExitStack()
            return self
        stack = AsyncExitStack()
        try:
            server = self._server
            if self._http_client is not None:
                await stack.enter_async_context(self._http_client)
                server = streamable_http_client(str(server), http_client=self._http_client)
            client = Client(server, read_timeout_seconds=self._read_timeout_s, cache=None)
            self._client = await stack.enter_async_context(client)
            _share_validators(self._client.session)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc: object) -> None:
        stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    @property
    def client(self) -> Client | DirectSession:
        """The underlying MCP client (or, for ``local`` seats, the direct session)."""
        if self._client is None:
            raise SeatClosedError("the seat is not connected; use it inside 'async with'")
        return self._client

    # -- raw access ----------------------------------------------------------------------------

    async def list_tools(self) -> ListToolsResult:
        """The server's tools, with their schemas and descriptions."""
        return await self.client.list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        """Call a tool and return the raw MCP result (errors are results, not exceptions)."""
        return await self.client.call_tool(name, arguments or {})

    async def briefing(self) -> str:
        """The server's ``briefing`` prompt for this seat, as plain text."""
        result = await self.client.get_prompt("briefing")
        return "\n\n".join(
            m.content.text for m in result.messages if isinstance(m.content, TextContent)
        )

    async def _typed(self, name: str, arguments: dict[str, Any], model: type[M]) -> M:
        result = await self.call_tool(name, arguments)
        if result.is_error:
            text = "".join(item.text for item in result.content if item.type == "text")
            raise SeatError(name, ToolErrorPayload.parse(text))
        if result.structured_content is None:
            raise SeatError(
                name, ToolErrorPayload(code="bad_result", message="no structured content")
            )
        return model.model_validate(result.structured_content)

    # -- the tools -----------------------------------------------------------------------------

    async def make_offer(
        self, price: Decimal | float | int | str, message: str | None = None
    ) -> ActionResult:
        """Make a binding offer (it replaces your previous live offer)."""
        return await self.act(MakeOffer(price=Decimal(str(price)), message=message))

    async def accept(self, offer_id: str) -> ActionResult:
        """Accept the other side's live offer: the deal closes at its price."""
        return await self.act(Accept(offer_id=offer_id))

    async def reject(self, offer_id: str, message: str | None = None) -> ActionResult:
        """Reject the other side's live offer."""
        return await self.act(Reject(offer_id=offer_id, message=message))

    async def send_message(self, text: str) -> ActionResult:
        """Send cheap talk."""
        return await self.act(SendMessage(text=text))

    async def walk_away(self, message: str | None = None) -> ActionResult:
        """End the negotiation without a deal."""
        return await self.act(WalkAway(message=message))

    async def act(self, action: Action) -> ActionResult:
        """Any action, as the tool of the same name."""
        return await self._typed(action.type, arguments_of(action), ActionResult)

    async def wait_for_opponent(self, timeout_s: float | None = None) -> WaitResult:
        """Wait for the other side's next move, the timeout, or the end."""
        arguments = {} if timeout_s is None else {"timeout_s": timeout_s}
        return await self._typed("wait_for_opponent", arguments, WaitResult)

    async def get_state(self) -> SeatState:
        """The seat's observation and the series so far."""
        return await self._typed("get_state", {}, SeatState)

    async def new_negotiation(self) -> SeatState:
        """Start the next negotiation of a house-mode series."""
        return await self._typed("new_negotiation", {}, SeatState)

    async def events(self, *, timeout_s: float | None = None) -> AsyncIterator[Event]:
        """Every event not yet seen by this seat, as it happens, until the negotiation ends.

        Events that came back in the results of your own actions were already shown to you and
        are not repeated. Each wait is bounded by the server (``timeout_s`` at most).
        """
        while True:
            result = await self.wait_for_opponent(timeout_s)
            for event in result.events:
                yield event
            if result.outcome is not None:
                return

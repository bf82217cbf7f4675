"""The web pages' HTTP routes: static pages, JSON views, live streams and the seat's calls.

Every data route takes a bearer token (``Authorization: Bearer``), looked up as the MCP
transport looks up seat tokens (``RoomRegistry``, constant time): a seat token opens its seat's
routes only, a spectator token its room's page only, the admin token the tournament pages only.
The pages themselves are static files with no data in them; their scripts read the token from
the link's fragment (``#token=...``, never sent to the server) and send it as a header.

A seat's page calls its tools through ``POST /web/api/seat/call``: the tool must be one the
seat is offered (``dealroom.protocol.tools``), its arguments are validated strictly by
``validate_arguments`` and the call goes through ``dispatch``, exactly as an MCP call does. The
reply's ``result`` is the JSON an MCP client gets; its ``text``, and a refusal's, are in a
person's words (``dealroom.protocol.people_text``: the page's buttons, never a tool name), with
the refusal's stable ``code`` beside it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, cast

import anyio
import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from dealroom.protocol import people_text, seat_text
from dealroom.protocol.tools import ArgumentError, seat_tools, validate_arguments
from dealroom.protocol.wire import ToolErrorPayload
from dealroom.server.mcp_app import dispatch
from dealroom.server.room import Room
from dealroom.server.rooms import RoomRegistry
from dealroom.server.seat import CallRefused, RoomBackend
from dealroom.server.web.views import SeatPageView, SpectatorView, seat_page_view, spectator_view

log = structlog.stdlib.get_logger(__name__)

STREAM_S = 10.0
"""How long one live stream lasts before the page reconnects (so that a server stopping never
waits long for its streams)."""
STREAM_POLL_S = 1.0
"""Longest a stream goes without looking again (a new negotiation of a series, a wall clock)."""
STREAMS_PER_TOKEN = 4
"""Most live streams one token holds at once (a page holds one)."""
MAX_CALL_BYTES = 16_384
"""Largest seat call body accepted, in bytes (a message is at most a few thousand characters)."""

NO_STORE = {"Cache-Control": "no-store"}


def error(status: int, message: str) -> Response:
    """A refused request: one line of JSON, with the bearer challenge on 401."""
    headers = dict(NO_STORE)
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="dealroom-web"'
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def bearer(request: Request) -> str | None:
    """The request's bearer token, if it has one."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _json(view: SpectatorView | SeatPageView) -> str:
    return view.model_dump_json()


def _stream(
    read: Callable[[], Awaitable[str]],
    room: Room,
    *,
    done: Callable[[], None] = lambda: None,
    limit_s: float = STREAM_S,
) -> StreamingResponse:
    """Server-sent events: the view now, then again each time it changes, for ``limit_s``;
    ``done`` once the stream ends (closed by either side)."""

    async def events() -> AsyncIterator[str]:
        last = ""
        with anyio.move_on_after(limit_s):
            while True:
                body = await read()
                if body != last:
                    last = body
                    yield f"data: {body}\n\n"
                else:
                    yield ": idle\n\n"
                await room.current.changed(STREAM_POLL_S)

    headers = {**NO_STORE, "X-Accel-Buffering": "no"}
    return _Stream(events(), done, media_type="text/event-stream", headers=headers)


class _Stream(StreamingResponse):
    """A streaming response that calls ``done`` once it is over, however it ended (a client
    gone before its first byte included: an unstarted generator runs no ``finally``)."""

    def __init__(self, body: AsyncIterator[str], done: Callable[[], None], **options: Any) -> None:
        super().__init__(body, **options)
        self._done = done

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._done()


class WebApi:
    """The data routes of the pages, on one registry."""

    def __init__(self, registry: RoomRegistry) -> None:
        self.registry = registry
        self._streams: Counter[tuple[str, str]] = Counter()
        """Live streams by token: (room, seat), or (room, "spectator") for its shared token."""

    def _streaming(self, read: Callable[[], Awaitable[str]], room: Room, holder: str) -> Response:
        """A live stream for one token, or 429 once it holds ``STREAMS_PER_TOKEN``: each holds
        a connection, and a spectator token can be shared with anyone."""
        key = (room.id, holder)
        if self._streams[key] >= STREAMS_PER_TOKEN:
            log.info("stream refused", room=room.id, holder=holder)
            return error(429, f"this token already has {STREAMS_PER_TOKEN} live streams")
        self._streams[key] += 1

        def done() -> None:
            self._streams[key] -= 1
            if not self._streams[key]:
                del self._streams[key]

        return _stream(read, room, done=done)

    # -- the room page (spectators) ------------------------------------------------------------

    def _spectated(self, request: Request) -> Room | Response:
        token = bearer(request)
        room = None if token is None else self.registry.room_for_spectator(token)
        return error(401, "missing or wrong spectator token") if room is None else room

    async def room(self, request: Request) -> Response:
        """GET /web/api/room: the spectator view now."""
        room = self._spectated(request)
        if isinstance(room, Response):
            return room
        return Response(_json(spectator_view(room)), media_type="application/json")

    async def room_events(self, request: Request) -> Response:
        """GET /web/api/room/events: the spectator view, live."""
        room = self._spectated(request)
        if isinstance(room, Response):
            return room

        async def read() -> str:
            return _json(spectator_view(room))

        return self._streaming(read, room, "spectator")

    # -- the seat page ---------------------------------------------------------------------------

    def _seat(self, request: Request) -> RoomBackend | Response:
        token = bearer(request)
        found = None if token is None else self.registry.seat_for_token(token)
        if found is None:
            return error(401, "missing or wrong seat token")
        return self.registry.seat(*found)

    async def _seat_json(self, seat: RoomBackend) -> str:
        observation = await seat.room.current.observe(seat.role, deliver=False)
        return _json(seat_page_view(seat.room, seat.role, observation))

    async def seat(self, request: Request) -> Response:
        """GET /web/api/seat: the seat page's view now."""
        seat = self._seat(request)
        if isinstance(seat, Response):
            return seat
        return Response(await self._seat_json(seat), media_type="application/json")

    async def seat_events(self, request: Request) -> Response:
        """GET /web/api/seat/events: the seat page's view, live."""
        seat = self._seat(request)
        if isinstance(seat, Response):
            return seat

        async def read() -> str:
            return await self._seat_json(seat)

        return self._streaming(read, seat.room, seat.role)

    async def consent(self, request: Request) -> Response:
        """POST /web/api/seat/consent: the person agreed to the experiment's consent line."""
        seat = self._seat(request)
        if isinstance(seat, Response):
            return seat
        if seat.room.consent is None:
            return error(400, "this room asks for no consent")
        seat.room.agree(seat.role)
        log.info("consent given", room=seat.room.id, seat=seat.role)
        return JSONResponse({"agreed": seat.room.agreed[seat.role]}, headers=NO_STORE)

    async def call(self, request: Request) -> Response:
        """POST /web/api/seat/call ``{"tool": name, "arguments": {...}}``: one tool call."""
        seat = self._seat(request)
        if isinstance(seat, Response):
            return seat
        body = await _body_within(request, MAX_CALL_BYTES)
        if body is None:
            return error(413, f"a call is at most {MAX_CALL_BYTES} bytes")
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return error(400, "the body must be JSON")
        fields = cast("dict[str, object]", data) if isinstance(data, dict) else {}
        tool = fields.get("tool")
        if not isinstance(tool, str):
            return error(400, 'the body must be {"tool": name, "arguments": {...}}')
        arguments = fields.get("arguments", {})
        if not isinstance(arguments, dict):
            return error(400, "arguments must be a JSON object")
        with structlog.contextvars.bound_contextvars(**seat.log_context, tool=tool):
            call = await _call(seat, tool, cast("dict[str, Any]", arguments))
            return JSONResponse(call, headers=NO_STORE)


async def _body_within(request: Request, limit: int) -> bytes | None:
    """The request's body, or None once it is past ``limit`` bytes: refused on its
    ``Content-Length`` before a byte of it is read, else as it arrives (so a huge body is never
    held in memory; the server closes the connection on the rest)."""
    declared = request.headers.get("content-length", "")
    if declared.strip().isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


async def _call(seat: RoomBackend, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool call as an MCP client would make it: ``{"text", "result"}`` or ``{"error"}``."""
    offered = {t.name: t for t in seat_tools(series=seat.room.series)}
    spec = offered.get(name)
    if spec is None:
        return _refused(seat_text.unknown_tool(name, offered))
    try:
        args = validate_arguments(spec, arguments)
        result = await dispatch(seat, spec, args)
    except (ArgumentError, CallRefused) as refusal:
        return _refused(refusal.payload)
    role, currency = await seat.viewer()
    text = people_text.reply(result, role, currency, clock=seat.room.clock, surface="web")
    return {"text": text, "result": result.model_dump(mode="json")}


def _refused(payload: ToolErrorPayload) -> dict[str, Any]:
    """A refusal in the page's words (``people_text.refusal``); its code as MCP sends it."""
    log.info("web call refused", code=payload.code)
    return {"error": {"code": payload.code, "text": people_text.refusal(payload, "web")}}

"""The web pages' HTTP routes: static pages, JSON views, live streams and the seat's calls.

Every data route takes a bearer token (``Authorization: Bearer``), looked up as the MCP
transport looks up seat tokens (``RoomRegistry``, constant time): a seat token opens its seat's
routes only, a spectator token its room's page only, the admin token the tournament pages only.
The pages themselves are static files with no data in them; their scripts read the token from
the link's fragment (``#token=...``, never sent to the server) and send it as a header.

A seat's page calls its tools through ``POST /web/api/seat/call`` (``seat_calls``): the tool must
be one the seat is offered (``dealroom.protocol.tools``), its arguments are validated strictly by
``validate_arguments`` and the call goes through ``dispatch``, exactly as an MCP call does. The
reply's ``result`` is the JSON an MCP client gets; its ``text``, and a refusal's, are in a
person's words (``dealroom.protocol.people_text``: the page's buttons, never a tool name), with
the refusal's stable ``code`` beside it. A market room's seat tokens are answered by
``market_seat`` on the same paths, before they reach these routes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NamedTuple, cast

import anyio
import structlog
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from dealroom.protocol import SessionErrorCode
from dealroom.protocol.study_design import StepRefusal, StepRefused
from dealroom.protocol.wire import ToolErrorPayload
from dealroom.server.gone import while_connected
from dealroom.server.market_series import MarketSeries
from dealroom.server.room import Room
from dealroom.server.rooms import RoomRegistry
from dealroom.server.seat import RoomSeat
from dealroom.server.studies import Ticket
from dealroom.server.study import PAGE_EVENTS
from dealroom.server.web.market_views import MarketSpectatorView, room_page_view
from dealroom.server.web.seat_calls import refused_call, seat_call
from dealroom.server.web.views import (
    LobbyView,
    SeatPageView,
    SpectatorView,
    lobby_view,
    seat_page_view,
)

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


def first_error(exc: ValidationError) -> str:
    """A request body's first validation error, in one line: where it is, and what."""
    first = exc.errors()[0]
    blamed = first.get("ctx", {}).get("field")  # a rule across fields names the one to change
    where = ".".join(str(part) for part in first["loc"]) or str(blamed or "body")
    return f"{where}: {first['msg']}"


def bearer(request: Request) -> str | None:
    """The request's bearer token, if it has one."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _json(view: SpectatorView | MarketSpectatorView | SeatPageView | LobbyView) -> str:
    return view.model_dump_json()


def _stream(
    read: Callable[[], Awaitable[str]],
    changed: Callable[[float], Awaitable[None]],
    *,
    done: Callable[[bool], None] = lambda ran_out: None,
    limit_s: float = STREAM_S,
) -> StreamingResponse:
    """Server-sent events: the view now, then again each time it changes, for ``limit_s``;
    ``done`` once the stream ends, told whether it ran its time out (False: the client went
    away, or its connection broke, first)."""
    ran: list[bool] = []

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
                await changed(STREAM_POLL_S)
        ran.append(True)  # not reached when the client's going cancels the stream

    headers = {**NO_STORE, "X-Accel-Buffering": "no"}
    return _Stream(
        events(), lambda: done(bool(ran)), media_type="text/event-stream", headers=headers
    )


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

    def streaming(
        self,
        read: Callable[[], Awaitable[str]],
        changed: Callable[[float], Awaitable[None]],
        key: tuple[str, str],
        watch: tuple[Callable[[], None], Callable[[bool], None]] | None = None,
    ) -> Response:
        """A live stream for one token (``key``: its room or study, and its holder), or 429
        once it holds ``STREAMS_PER_TOKEN``: each holds a connection, and a spectator token can
        be shared with anyone. ``watch``: called when it opens, and when it is over (told
        whether it ran its time out: see ``_stream``)."""
        room, holder = key
        if self._streams[key] >= STREAMS_PER_TOKEN:
            log.info("stream refused", room=room, holder=holder)
            return error(429, f"this token already has {STREAMS_PER_TOKEN} live streams")
        self._streams[key] += 1
        if watch is not None:
            watch[0]()

        def done(ran_out: bool) -> None:
            self._streams[key] -= 1
            if not self._streams[key]:
                del self._streams[key]
            if watch is not None:
                watch[1](ran_out)

        return _stream(read, changed, done=done)

    # -- the room page (spectators) ------------------------------------------------------------

    def _spectated(self, request: Request) -> Room | MarketSeries | Response:
        """The room a spectator token opens: a bilateral room, or a market room."""
        token = bearer(request)
        room: Room | MarketSeries | None = None
        if token is not None:
            room = self.registry.room_for_spectator(token)
            room = room if room is not None else self.registry.market_for_spectator(token)
        return error(401, "missing or wrong spectator token") if room is None else room

    async def room(self, request: Request) -> Response:
        """GET /web/api/room: the spectator view now."""
        room = self._spectated(request)
        if isinstance(room, Response):
            return room
        return Response(_json(room_page_view(room)), media_type="application/json")

    async def room_events(self, request: Request) -> Response:
        """GET /web/api/room/events: the spectator view, live (a market room's is read again
        every ``STREAM_POLL_S``: it changes only when its client seat's call settles)."""
        room = self._spectated(request)
        if isinstance(room, Response):
            return room

        async def read() -> str:
            return _json(room_page_view(room))

        changed = anyio.sleep if isinstance(room, MarketSeries) else room.current.changed
        return self.streaming(read, changed, (room.id, "spectator"))

    # -- the seat page ---------------------------------------------------------------------------

    def _seat(self, request: Request, *, arrive: bool = True) -> Person | Response:
        """The seat page's token: a room's seat, or a study participant (who arrives: see
        ``Study.arrive``; not for a page event, which may be the page closing) with the seat
        they play now, if any."""
        token = bearer(request)
        found = None if token is None else self.registry.seat_for_token(token)
        if found is not None:
            seat = self.registry.served_seat(*found)
            if not isinstance(seat, RoomSeat):  # a market's: its page is market_seat's
                return error(400, "this is a study participant's request")
            return Person(seat, None)
        ticket = None if token is None else self.registry.studies.lookup(token)
        if ticket is None or ticket.who is None:
            return error(401, "missing or wrong seat token")
        if arrive:
            ticket.study.arrive(ticket.who)
        return _person(ticket)

    async def _seat_json(self, person: Person) -> str:
        seat, ticket = person
        if seat is None:
            assert ticket is not None and ticket.who is not None
            return _json(lobby_view(ticket.study, ticket.who))
        negotiation = seat.room.current
        if not seat.room.consent.needed(seat.role):
            negotiation.begin()  # the page shows the negotiation: its clock runs from now
        observation = await negotiation.observe(seat.role, deliver=False)
        return _json(seat_page_view(seat.room, seat.role, observation, ticket))

    async def seat(self, request: Request) -> Response:
        """GET /web/api/seat: the seat page's view now."""
        person = self._seat(request)
        if isinstance(person, Response):
            return person
        return Response(await self._seat_json(person), media_type="application/json")

    async def seat_events(self, request: Request) -> Response:
        """GET /web/api/seat/events: the seat page's view, live (a study participant's follows
        them from the queue into each room they are seated in)."""
        person = self._seat(request)
        if isinstance(person, Response):
            return person
        first = person

        def now() -> Person:
            ticket = first.ticket
            return first if ticket is None else _person(ticket)

        ticket = first.ticket
        who = None if ticket is None else ticket.who

        async def read() -> str:
            if who is not None:
                who.streaming()
            return await self._seat_json(now())

        async def changed(timeout_s: float) -> None:
            seat = now().seat
            if seat is None:
                await anyio.sleep(timeout_s)
            else:
                await seat.room.current.changed(timeout_s)

        watch = None if who is None else (who.stream_opened, who.stream_ended)
        return self.streaming(read, changed, _holder(person), watch)

    async def consent(self, request: Request) -> Response:
        """POST /web/api/seat/consent: the person agreed to the experiment's consent line."""
        person = self._seat(request)
        if isinstance(person, Response):
            return person
        seat, ticket = person
        if ticket is not None and ticket.who is not None:
            if ticket.study.request.consent is None:
                return error(400, "this study asks for no consent")
            ticket.study.agree(ticket.who)
            log.info("consent given", study=ticket.study.id, participant=ticket.who.label)
            return JSONResponse({"agreed": ticket.who.agreed}, headers=NO_STORE)
        assert seat is not None
        if seat.room.consent.text is None:
            return error(400, "this room asks for no consent")
        seat.room.consent.agree(seat.role)
        log.info("consent given", room=seat.room.id, seat=seat.role)
        return JSONResponse({"agreed": seat.room.consent.agreed[seat.role]}, headers=NO_STORE)

    async def page(self, request: Request) -> Response:
        """POST /web/api/seat/page ``{"event": "open"|"hidden"|"visible"|"close"}``: what the
        person's page did; a study journals it (its CSV counts them), a room only logs it."""
        person = self._seat(request, arrive=False)
        if isinstance(person, Response):
            return person
        body = await body_within(request, 256)
        try:
            event = json.loads(body or b"{}").get("event")
        except (ValueError, UnicodeDecodeError, AttributeError):
            event = None
        if event not in PAGE_EVENTS:
            return error(400, f"event must be one of {', '.join(PAGE_EVENTS)}")
        seat, ticket = person
        if ticket is not None and ticket.who is not None:
            ticket.study.page(ticket.who, event)
        log.info("page event", page=event, **({} if seat is None else seat.log_context))
        return Response(status_code=204, headers=NO_STORE)

    async def _participant(self, request: Request) -> Ticket | Response:
        """A study participant's token and the JSON object its request carries."""
        person = self._seat(request, arrive=False)
        if isinstance(person, Response):
            return person
        if person.ticket is None or person.ticket.who is None:
            return error(400, "this is a study participant's request")
        return person.ticket

    async def quiz(self, request: Request) -> Response:
        """POST /web/api/seat/quiz ``{"answers": [choice, ...]}``: one attempt at the study's
        quiz (choices numbered from 0, one per question, in the page's order)."""
        ticket = await self._participant(request)
        if isinstance(ticket, Response):
            return ticket
        answers = (await _object(request)).get("answers")
        if not isinstance(answers, list) or not all(
            isinstance(a, int) and not isinstance(a, bool) for a in cast("list[object]", answers)
        ):
            message = "answers: a list of choice numbers (from 0)"
            return _step_refused(StepRefused(StepRefusal.BAD_ANSWERS, message))
        assert ticket.who is not None
        result = ticket.study.phases.attempt(ticket.who, cast("list[int]", answers))
        if isinstance(result, StepRefused):
            return _step_refused(result)
        ticket.study.arrive(ticket.who)  # passed: on to practice, or the study
        return JSONResponse(result.model_dump(mode="json"), headers=NO_STORE)

    async def form(self, request: Request) -> Response:
        """POST /web/api/seat/form ``{"answers": {name: text}}``: the study's questionnaire."""
        ticket = await self._participant(request)
        if isinstance(ticket, Response):
            return ticket
        answers = (await _object(request)).get("answers")
        if not isinstance(answers, dict) or not all(
            isinstance(v, str) for v in cast("dict[str, object]", answers).values()
        ):
            message = "answers: an object of question names and texts"
            return _step_refused(StepRefused(StepRefusal.BAD_ANSWERS, message))
        study, who = ticket.study, ticket.who
        assert who is not None
        answered = cast("dict[str, str]", answers)
        refused = study.phases.answer(who, answered, over=study.over(who))
        if refused is not None:
            return _step_refused(refused)
        return Response(status_code=204, headers=NO_STORE)

    async def call(self, request: Request) -> Response:
        """POST /web/api/seat/call ``{"tool": name, "arguments": {...}}``: one tool call."""
        person = self._seat(request)
        if isinstance(person, Response):
            return person
        seat, ticket = person
        if seat is None:
            return error(409, "you have no negotiation yet: wait for it to start")
        called = await read_call(request)
        if isinstance(called, Response):
            return called
        tool, arguments = called
        with structlog.contextvars.bound_contextvars(**seat.log_context, tool=tool):
            if tool == "new_negotiation" and ticket is not None and _moves_on(ticket):
                return JSONResponse(_next_partner(ticket), headers=NO_STORE)
            series, clock = seat.room.series.available, seat.room.settings.clock
            call = await while_connected(
                request, lambda: seat_call(seat, tool, arguments, series=series, clock=clock)
            )
            if call is None:  # no one reads it
                return error(400, "the client has gone")
            return JSONResponse(call, headers=NO_STORE)


async def read_call(request: Request) -> tuple[str, dict[str, Any]] | Response:
    """A seat call's body, ``{"tool": name, "arguments": {...}}``: the tool and its arguments,
    or the refusal to send (one line)."""
    body = await body_within(request, MAX_CALL_BYTES)
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
    return tool, cast("dict[str, Any]", arguments)


class Person(NamedTuple):
    """Who holds a seat page's token: the seat they play now (None: none yet) and, for a
    study participant, their ticket."""

    seat: RoomSeat | None
    ticket: Ticket | None


def _person(ticket: Ticket) -> Person:
    assert ticket.who is not None
    current = ticket.study.current(ticket.who)
    return Person(None if current is None else RoomSeat(*current), ticket)


def _holder(person: Person) -> tuple[str, str]:
    if person.ticket is not None and person.ticket.who is not None:
        return f"study:{person.ticket.study.id}", person.ticket.who.label
    assert person.seat is not None
    return person.seat.room.id, person.seat.role


def _moves_on(ticket: Ticket) -> bool:
    """*Next negotiation* is the study's to answer (not the room's): in a pair study, and after a
    participant's last practice negotiation."""
    study, who = ticket.study, ticket.who
    assert who is not None
    if study.phases.practising(who):
        return study.phases.practice_over(who)
    return study.request.matching == "pairs"


def _next_partner(ticket: Ticket) -> dict[str, Any]:
    """*Next negotiation* in a pair study (back to the queue for a new partner), or after the
    last practice negotiation (on to the study)."""
    assert ticket.who is not None
    if not ticket.study.next(ticket.who):
        payload = ToolErrorPayload(
            code=SessionErrorCode.NEGOTIATION_RUNNING
            if not ticket.study.over(ticket.who)
            else SessionErrorCode.SERIES_OVER,
            message="There is no next negotiation to start now.",
        )
        return refused_call(payload)
    if ticket.study.request.matching == "solo":
        return {"text": "On to the negotiations that count.", "result": None}
    return {"text": "Waiting for your next partner.", "result": None}


def _step_refused(refused: StepRefused) -> Response:
    """A quiz attempt or questionnaire not taken: one line with its code, nothing changed."""
    status = 400 if refused.code == StepRefusal.BAD_ANSWERS else 409
    body = {"error": refused.message, "code": str(refused.code)}
    return JSONResponse(body, status_code=status, headers=NO_STORE)


async def _object(request: Request) -> dict[str, Any]:
    """A small request's JSON object (empty if it is none)."""
    body = await body_within(request, MAX_CALL_BYTES)
    try:
        data = json.loads(body or b"{}")
    except (ValueError, UnicodeDecodeError):
        return {}
    return cast("dict[str, Any]", data) if isinstance(data, dict) else {}


async def body_within(request: Request, limit: int) -> bytes | None:
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

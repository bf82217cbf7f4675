"""Streamable HTTP: many rooms on one server, MCP at ``/mcp``, an admin API beside it.

``/mcp`` requires a seat token (``Authorization: Bearer``), verified by the MCP SDK's auth
middleware: a wrong token gets 401 with ``Bearer error="invalid_token"``, a request with no
bearer token at all 401 with a bare ``Bearer realm="dealroom"`` challenge (RFC 6750, 3.1: no
error code for a request without credentials; a client then does not go looking for OAuth).
The admin routes are not covered by that middleware, so they check ``Authorization: Bearer
<admin token>`` themselves, in constant time; without a configured admin token they answer 403.
Every route, admin and health check included, refuses a foreign ``Host`` (421) or ``Origin``
(403) header, as ``/mcp`` does (DNS rebinding).
Connection, request and session limits: ``dealroom.server.http_limits``.

    POST /admin/rooms          RoomRequest JSON -> RoomCreated JSON (201)
    GET  /admin/rooms/{room}   the room's current negotiation, with its full outcome, and how
                               many have finished (admin only; finished ones are in the store);
                               410 and why for a journaled room the start could not restore;
                               a market room: its seats, market and outcome
    POST /admin/studies        StudyRequest JSON -> StudyCreated JSON (201), and a study's
                               view and CSV exports (``dealroom.server.web.study``)
    GET  /healthz              {"ok": true}
    /web/...                   the web pages and their data (``dealroom.server.web``)
"""

from __future__ import annotations

import contextlib
import errno
import gc
import hmac
import logging
import os
import socket
from collections.abc import Callable, Generator, Sequence
from typing import Any
from urllib.parse import urlsplit

import anyio
import structlog
import uvicorn
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from pydantic import AnyHttpUrl, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dealroom.protocol import DealroomError, RoomRequest
from dealroom.server import web
from dealroom.server.http_limits import (
    DEFAULT_HTTP_LIMITS,
    GuardedHttpProtocol,
    HttpLimits,
    cap_sessions_per_seat,
    connection_cap,
    raise_open_file_limit,
)
from dealroom.server.mcp_app import build_app
from dealroom.server.room_error import RoomError
from dealroom.server.rooms import RoomRegistry
from dealroom.server.tokens import SEAT_SCOPE, SeatTokens, seat_of_request
from dealroom.server.web.routes import first_error

log = structlog.stdlib.get_logger(__name__)

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def transport_security(host: str, allowed_hosts: Sequence[str] = ()) -> TransportSecuritySettings:
    """DNS-rebinding protection: only loopback names, the bound host and ``allowed_hosts``."""
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    extra = [*allowed_hosts, host] if host not in (*LOOPBACK, "0.0.0.0", "::") else allowed_hosts
    for name in extra:
        hosts.append(f"{name}:*")
        origins += [f"http://{name}:*", f"https://{name}:*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def listen_url(host: str, port: int) -> str:
    """``http://host:port``, an IPv6 address in brackets."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def build_http_mcp(registry: RoomRegistry, *, host: str, port: int) -> MCPServer:
    """The MCP server of an HTTP room server (tools act for the token's seat)."""
    return build_app(
        seat_of_request(registry.served_seat),
        token_verifier=SeatTokens(registry.seat_for_token),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(
                f"http://{host if host not in ('::1', '::') else 'localhost'}:{port}"
            ),
            resource_server_url=None,
            required_scopes=[SEAT_SCOPE],
        ),
    )


def build_http_app(
    registry: RoomRegistry,
    *,
    admin_token: str | None,
    host: str = "127.0.0.1",
    port: int = 8765,
    allowed_hosts: Sequence[str] = (),
    limits: HttpLimits = DEFAULT_HTTP_LIMITS,
) -> Starlette:
    """The ASGI app: MCP at /mcp, the admin API and a health check."""
    app = build_http_mcp(registry, host=host, port=port)
    admin = _AdminApi(registry, admin_token)
    app.custom_route("/admin/rooms", methods=["POST"])(admin.create)
    app.custom_route("/admin/rooms/{room}", methods=["GET"])(admin.show)
    app.custom_route("/healthz", methods=["GET"])(_health)
    web.mount(app, registry, admin=admin.refused)
    security = transport_security(host, allowed_hosts)
    starlette = app.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=security,
        host=host,
        session_idle_timeout=limits.session_idle_s,
        max_sessions=limits.max_sessions,
    )
    cap_sessions_per_seat(app.session_manager, limits.sessions_per_seat)
    starlette.add_middleware(_SeatChallenge)
    starlette.add_middleware(_HostCheck, security=security)  # the outermost
    return starlette


class _HostCheck:
    """The Host and Origin checks of ``/mcp`` for every route (the SDK applies them to /mcp).

    The SDK compares a ``name:*`` pattern as a prefix, so ``http://127.0.0.1:80.evil.example``
    passed as ``http://127.0.0.1:*``; here a Host or Origin is parsed first and refused unless
    it is a name and, at most, a numeric port (an Origin also a scheme) with nothing else.
    """

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings) -> None:
        self.app = app
        self.check = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope, receive)
            refused = _malformed(request) or await self.check.validate_request(request)
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


WRONG_SEAT_TOKEN = "unknown seat token: a wrong one, or one of a room this server no longer keeps"
"""What a client is told of a bearer token ``/mcp`` does not know (the SDK says "Authentication
required", the same as for no token at all)."""


class _SeatChallenge:
    """401 with a bare challenge for a request to ``/mcp`` with no bearer token at all (the
    SDK's auth middleware says ``error="invalid_token"`` for a missing token and a wrong one
    alike; RFC 6750 gives an error code only to credentials that were sent), and the SDK's 401
    for a token that was sent, reworded: ``WRONG_SEAT_TOKEN``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/mcp"):
            await self.app(scope, receive, send)
            return
        header = Request(scope).headers.get("authorization", "")
        if header.partition(" ")[0].lower() != "bearer":
            body = {"error_description": "send Authorization: Bearer <seat token>"}
            challenge = {"WWW-Authenticate": 'Bearer realm="dealroom"'}
            await JSONResponse(body, status_code=401, headers=challenge)(scope, receive, send)
            return
        refused = False

        async def reworded(message: Message) -> None:
            nonlocal refused
            if message["type"] == "http.response.start" and message["status"] == 401:
                refused = True  # the SDK's own refusal, whose body follows in one message
                return
            if refused and message["type"] == "http.response.body":
                body = {"error": "invalid_token", "error_description": WRONG_SEAT_TOKEN}
                challenge = f'Bearer error="invalid_token", error_description="{WRONG_SEAT_TOKEN}"'
                response = JSONResponse(body, 401, headers={"WWW-Authenticate": challenge})
                await response(scope, receive, send)
                return
            await send(message)

        await self.app(scope, receive, reworded)


def _malformed(request: Request) -> Response | None:
    """421 for a Host, 403 for an Origin, that is more than a name and a numeric port."""
    host = request.headers.get("host")
    if host is not None and not _plain(f"//{host}"):
        log.warning("refused a malformed Host header", host=host[:100])
        return Response("Invalid Host header", status_code=421)
    origin = request.headers.get("origin")
    if origin is not None and not (origin.startswith(("http://", "https://")) and _plain(origin)):
        log.warning("refused a malformed Origin header", origin=origin[:100])
        return Response("Invalid Origin header", status_code=403)
    return None


def _plain(value: str) -> bool:
    try:
        parts = urlsplit(value)
        port = parts.port  # ValueError for a port that is not a number
    except ValueError:
        return False
    if parts.username is not None or parts.path or parts.query or parts.fragment:
        return False
    return bool(parts.hostname) and (port is not None or not parts.netloc.endswith(":"))


def uvicorn_config(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    limits: HttpLimits = DEFAULT_HTTP_LIMITS,
    open_files: int = 1024,
    **kwargs: Any,
) -> uvicorn.Config:
    """How uvicorn serves ``app``: the guarded protocol, keep-alive, limits and shutdown grace of
    ``limits`` (without a grace, stopping waits for every open long poll and page stream)."""
    protocol = GuardedHttpProtocol.configured(
        limits.request_timeout_s, connection_cap(limits, open_files)
    )
    kwargs.setdefault("timeout_graceful_shutdown", limits.shutdown_grace_s)
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol,
        ws="none",
        timeout_keep_alive=int(limits.keep_alive_s),
        log_config=None,
        access_log=False,
        **kwargs,
    )


class ListenFailed(DealroomError):
    """The server cannot listen on its host and port (the port is taken, say): one line."""

    kind = "listen_failed"

    @classmethod
    def of(cls, host: str, port: int, exc: OSError) -> ListenFailed:
        if exc.errno == errno.EADDRINUSE:
            return cls(f"port {port} on {host} is in use (--port)")
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        return cls(f"cannot listen on {host} port {port}: {why} (--host, --port)")


class StoppingServer(uvicorn.Server):
    """uvicorn, except that a SIGTERM or SIGINT it shut down for is not raised again once it
    has stopped (uvicorn re-raises it, which ends the process there): the server still has its
    rooms' journals to close, its pending results to write, and a cluster's front its workers
    to stop and its sockets to remove. A host and port it cannot listen on is a ListenFailed
    (uvicorn logs the OSError and exits with status 3). ``on_ready`` is called once it listens.
    """

    def __init__(self, config: uvicorn.Config, on_ready: Callable[[], None] | None = None) -> None:
        super().__init__(config)
        self.on_ready = on_ready

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        with super().capture_signals():
            yield
            self._captured_signals.clear()  # pyright: ignore[reportPrivateUsage]

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        uvicorn_log = logging.getLogger("uvicorn.error")
        uvicorn_log.addFilter(_not_a_bind_error)  # said once, by ListenFailed
        try:
            await super().startup(sockets)
        except SystemExit as exc:
            bind = exc.__context__
            if isinstance(bind, OSError) and self.config.uds is None:
                raise ListenFailed.of(self.config.host, self.config.port, bind) from None
            raise
        finally:
            uvicorn_log.removeFilter(_not_a_bind_error)
        if self.started and self.on_ready is not None:
            self.on_ready()


def _not_a_bind_error(record: logging.LogRecord) -> bool:
    return not isinstance(record.msg, OSError)  # uvicorn logs the bind's OSError itself


async def _health(request: Request) -> Response:
    del request
    return JSONResponse({"ok": True})


class _AdminApi:
    def __init__(self, registry: RoomRegistry, token: str | None) -> None:
        self.registry = registry
        self._token = token.encode() if token else None

    def refused(self, request: Request) -> Response | None:
        if self._token is None:
            return _error(
                403, "the admin API is disabled: start the server with DEALROOM_ADMIN_TOKEN set"
            )
        header = request.headers.get("authorization", "")
        scheme, _, presented = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            presented.strip().encode(), self._token
        ):
            return _error(401, "missing or wrong admin token", www_authenticate=True)
        return None

    async def create(self, request: Request) -> Response:
        if (refused := self.refused(request)) is not None:
            return refused
        try:
            body = await request.body()
            room_request = RoomRequest.model_validate_json(body or b"{}")
            created = self.registry.create(room_request)
        except ValidationError as exc:
            return _error(400, first_error(exc))
        except ValueError as exc:
            return _error(400, str(exc))
        except RoomError as exc:  # the server cannot journal the room now
            return _error(503, str(exc))
        return JSONResponse(created.model_dump(mode="json"), status_code=201)

    async def show(self, request: Request) -> Response:
        if (refused := self.refused(request)) is not None:
            return refused
        market = self.registry.markets.get(request.path_params["room"])
        if market is not None:
            return JSONResponse(market.view())
        room = self.registry.rooms.get(request.path_params["room"])
        if room is None:
            why = self.registry.unrestored.get(request.path_params["room"])
            if why is not None:  # its journal is there, but the room is not
                return _error(410, f"room not restored at start: {why}")
            return _error(404, "no such room")
        n = room.current
        outcome = n.referee.outcome
        negotiations: list[dict[str, Any]] = [
            {
                "number": n.number,
                "scenario": n.scenario.id,
                "open": n.is_open,
                "events": n.referee.event_count,
                "outcome": None if outcome is None else outcome.model_dump(mode="json"),
                "key": room.records.key(n),
            }
        ]
        body = {
            "room": room.id,
            "clock": room.settings.clock,
            "seats": room.seats.names(),
            "finished": room.series.finished,
            "pending": room.records.has_pending(),
            "negotiations": negotiations,
        }
        return JSONResponse(body)


def _error(status: int, message: str, *, www_authenticate: bool = False) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="dealroom-admin"'} if www_authenticate else None
    return JSONResponse({"error": message}, status_code=status, headers=headers)


async def serve_http(
    registry: RoomRegistry,
    *,
    host: str,
    port: int,
    admin_token: str | None,
    allowed_hosts: Sequence[str] = (),
    reap_interval: float = 1.0,
    limits: HttpLimits = DEFAULT_HTTP_LIMITS,
    uds: str | None = None,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Run uvicorn and the rooms' reaper until interrupted (``on_ready`` called once it
    listens). With ``uds`` (a worker of a cluster) it listens on that Unix socket only;
    ``host`` and ``port`` are then the public address of the cluster's front, which the Host
    checks and the auth metadata name."""
    app = build_http_app(
        registry,
        admin_token=admin_token,
        host=host,
        port=port,
        allowed_hosts=allowed_hosts,
        limits=limits,
    )
    open_files = raise_open_file_limit()
    listen = {} if uds is None else {"uds": uds}
    config = uvicorn_config(
        app, host=host, port=port, limits=limits, open_files=open_files, lifespan="on", **listen
    )
    server = StoppingServer(config, on_ready)
    # Everything imported and built so far lives as long as the server: keep it out of the
    # garbage collector's full passes, which would otherwise stall every request now and then.
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)  # fewer, not longer, collections: requests make garbage
    async with anyio.create_task_group() as group:
        group.start_soon(registry.reap, reap_interval)
        log.info("serving", url=f"{listen_url(host, port)}/mcp", **listen)
        await server.serve()
        group.cancel_scope.cancel()

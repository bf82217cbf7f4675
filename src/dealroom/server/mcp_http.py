"""Streamable HTTP: many rooms on one server, MCP at ``/mcp``, an admin API beside it.

``/mcp`` requires a seat token (``Authorization: Bearer``), verified by the MCP SDK's auth
middleware: no token or a wrong one gets 401. The admin routes are not covered by that
middleware, so they check ``Authorization: Bearer <admin token>`` themselves, in constant time;
without a configured admin token they answer 403.

    POST /admin/rooms          RoomRequest JSON -> RoomCreated JSON (201)
    GET  /admin/rooms/{room}   the room's current negotiation, with its full outcome, and how
                               many have finished (admin only; finished ones are in the store)
    GET  /healthz              {"ok": true}
"""

from __future__ import annotations

import gc
import hmac
from collections.abc import Sequence
from typing import Any

import anyio
import structlog
import uvicorn
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from dealroom.protocol import RoomRequest
from dealroom.server.mcp_app import build_app
from dealroom.server.rooms import SEAT_SCOPE, RoomRegistry, SeatTokens, seat_of_request

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


def build_http_mcp(registry: RoomRegistry, *, host: str, port: int) -> MCPServer:
    """The MCP server of an HTTP room server (tools act for the token's seat)."""
    return build_app(
        seat_of_request(registry),
        token_verifier=SeatTokens(registry),
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
) -> Starlette:
    """The ASGI app: MCP at /mcp, the admin API and a health check."""
    app = build_http_mcp(registry, host=host, port=port)
    admin = _AdminApi(registry, admin_token)
    app.custom_route("/admin/rooms", methods=["POST"])(admin.create)
    app.custom_route("/admin/rooms/{room}", methods=["GET"])(admin.show)
    app.custom_route("/healthz", methods=["GET"])(_health)
    return app.streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=transport_security(host, allowed_hosts),
        host=host,
    )


async def _health(request: Request) -> Response:
    del request
    return JSONResponse({"ok": True})


class _AdminApi:
    def __init__(self, registry: RoomRegistry, token: str | None) -> None:
        self.registry = registry
        self._token = token.encode() if token else None

    def _refused(self, request: Request) -> Response | None:
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
        if (refused := self._refused(request)) is not None:
            return refused
        try:
            body = await request.body()
            room_request = RoomRequest.model_validate_json(body or b"{}")
            created = self.registry.create(room_request)
        except ValidationError as exc:
            return _error(400, _first_error(exc))
        except ValueError as exc:
            return _error(400, str(exc))
        return JSONResponse(created.model_dump(mode="json"), status_code=201)

    async def show(self, request: Request) -> Response:
        if (refused := self._refused(request)) is not None:
            return refused
        room = self.registry.rooms.get(request.path_params["room"])
        if room is None:
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
                "key": room.key(n),
            }
        ]
        body = {
            "room": room.id,
            "clock": room.clock,
            "seats": {role: room.name(role) for role in ("buyer", "seller")},
            "finished": room.finished,
            "pending": room.has_pending(),
            "negotiations": negotiations,
        }
        return JSONResponse(body)


def _error(status: int, message: str, *, www_authenticate: bool = False) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="dealroom-admin"'} if www_authenticate else None
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "body"
    return f"{where}: {first['msg']}"


async def serve_http(
    registry: RoomRegistry,
    *,
    host: str,
    port: int,
    admin_token: str | None,
    allowed_hosts: Sequence[str] = (),
    reap_interval: float = 1.0,
) -> None:
    """Run uvicorn and the rooms' reaper until interrupted."""
    app = build_http_app(
        registry, admin_token=admin_token, host=host, port=port, allowed_hosts=allowed_hosts
    )
    config = uvicorn.Config(
        app, host=host, port=port, log_config=None, access_log=False, lifespan="on"
    )
    server = uvicorn.Server(config)
    # Everything imported and built so far lives as long as the server: keep it out of the
    # garbage collector's full passes, which would otherwise stall every request now and then.
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)  # fewer, not longer, collections: requests make garbage
    async with anyio.create_task_group() as group:
        group.start_soon(registry.reap, reap_interval)
        log.info("serving", url=f"http://{host}:{port}/mcp")
        await server.serve()
        group.cancel_scope.cancel()

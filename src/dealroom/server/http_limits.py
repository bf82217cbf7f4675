"""Connection limits of the HTTP server: slow clients time out, file descriptors never run out.

uvicorn on its own never times out a request that is still being sent (a client can hold a
connection open forever by sending one header byte at a time) and accepts connections until the
process runs out of file descriptors, after which no client, old or new, gets through. The
protocol here, uvicorn's httptools protocol with three additions, bounds both:

- **request deadline**: a connection that is sending a request (or has connected and sent nothing
  yet) must deliver the whole request, headers and body, within ``request_timeout_s``, or it is
  closed. A request that has been received is never timed out here: a long-poll can take a
  minute.
- **keep-alive**: an idle connection is kept ``keep_alive_s``, longer than HTTP clients keep an
  idle pooled connection (httpx: 5 s), so that it is always the client that closes an idle
  connection and never the server just as the client reuses it (that race was a ReadError).
- **connection cap**: at most ``max_connections`` connections are open; one more sheds the
  connection that has been sending its request the longest or, if none is, the one idle the
  longest; never one whose request is being served (a live session's long-poll or tool call).
  When every connection is serving a request, the newcomer is closed instead.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, ClassVar, cast

import structlog
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from pydantic import BaseModel, ConfigDict, Field
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from dealroom.server._sdk import check_internals

log = structlog.stdlib.get_logger(__name__)

FD_RESERVE = 64
"""File descriptors kept free of connections: the results store, logs, a spool, the listener."""


class HttpLimits(BaseModel):
    """How long clients may take and how many connections and sessions they may hold."""

    model_config = ConfigDict(frozen=True)

    request_timeout_s: float = Field(default=10.0, gt=0)
    """Most seconds to send one request, headers and body, from its first byte."""
    keep_alive_s: float = Field(default=30.0, gt=0)
    """Seconds an idle connection is kept open (more than clients' pool expiry)."""
    max_connections: int | None = Field(default=None, gt=0)
    """Most open connections; None: the open-file limit minus ``FD_RESERVE``."""
    sessions_per_seat: int = Field(default=8, gt=0)
    """Most MCP sessions one seat token holds; opening one more closes its oldest."""
    session_idle_s: float = Field(default=300.0, gt=0)
    """An MCP session with no request in flight for this long is closed."""
    max_sessions: int = Field(default=10_000, gt=0)
    """Most MCP sessions on the whole server (on each worker of a cluster: each is its own
    process, with its own memory)."""
    shutdown_grace_s: float = Field(default=5.0, gt=0)
    """Seconds a stopping server waits for requests in flight (long polls, page streams)
    before it closes them."""


DEFAULT_HTTP_LIMITS = HttpLimits()


def raise_open_file_limit() -> int:
    """Raise this process's soft open-file limit to its hard limit; the limit now in force."""
    if sys.platform == "win32":  # pragma: no cover
        return 8192
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            log.warning("could not raise the open-file limit", soft=soft, hard=hard)
    return int(soft)


def connection_cap(limits: HttpLimits, open_files: int) -> int:
    """The connection cap: the configured one, or what the open-file limit leaves."""
    if limits.max_connections is not None:
        return limits.max_connections
    return max(open_files - FD_RESERVE, 16)


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a request deadline and a connection cap."""

    request_timeout_s: ClassVar[float] = DEFAULT_HTTP_LIMITS.request_timeout_s
    max_connections: ClassVar[int] = 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._reading = True
        self._since = 0.0
        """When it started sending its request, or, idle, when its last response ended."""

    @classmethod
    def configured(cls, timeout_s: float, max_connections: int) -> type[GuardedHttpProtocol]:
        """A subclass with these limits (uvicorn builds protocols from a class)."""
        attributes = {"request_timeout_s": timeout_s, "max_connections": max_connections}
        return type("GuardedHttpProtocol", (cls,), attributes)

    @property
    def serving(self) -> bool:
        """A request has been received and its response is not finished (never shed)."""
        # uvicorn annotates `cycle` as always set, but it is None until the first request.
        cycle = cast("RequestResponseCycle | None", self.cycle)
        return not self._reading and cycle is not None and not cycle.response_complete

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._since = self.loop.time()
        self._arm()
        if len(self.connections) > self.max_connections:
            self._shed_one()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if not self.serving:
            if not self._reading:  # a kept-alive connection starts its next request now
                self._reading = True
                self._since = self.loop.time()
            self._arm()
        super().data_received(data)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._reading = False
        self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._since = self.loop.time()

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(self.request_timeout_s, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self._reading and not self.transport.is_closing():
            log.debug("request timed out", client=_peer(self))
            self.transport.close()

    def _shed_one(self) -> None:
        """Close the connection idle or sending the longest (this one if all others serve)."""
        live = [c for c in self.connections if not c.transport.is_closing()]
        if len(live) <= self.max_connections:
            return  # the ones shed before are closing already
        candidates = [
            c
            for c in live
            if isinstance(c, GuardedHttpProtocol) and c is not self and not c.serving
        ]
        # Sending the longest first (slow or stalled), then idle the longest (keep-alive).
        victim = min(candidates, key=lambda c: (not c._reading, c._since), default=self)
        victim._disarm()
        victim.transport.close()
        _report_shed(self.loop.time(), len(live))


_shed = {"count": 0, "logged_at": -1e9}


def _report_shed(now: float, open_connections: int) -> None:
    """One warning a second at most, with how many connections were shed since the last."""
    _shed["count"] += 1
    if now - _shed["logged_at"] >= 1.0:
        log.warning("too many connections: shed", shed=_shed["count"], open=open_connections)
        _shed.update(count=0, logged_at=now)


def _peer(protocol: HttpToolsProtocol) -> str:
    client = protocol.client
    return f"{client[0]}:{client[1]}" if client else "?"


_SESSION_INTERNALS = ("_admit_session", "_session_owners", "_server_instances")
"""What ``cap_sessions_per_seat`` reads and wraps of the SDK's session manager (mcp 2.3)."""


def cap_sessions_per_seat(manager: StreamableHTTPSessionManager, per_seat: int) -> None:
    """Hold each seat token to ``per_seat`` open MCP sessions: opening one more closes the
    oldest of that seat's sessions (its id answers 404 from then on), so one client can neither
    fill the server's session table nor lock another room out.

    Evicting the oldest rather than refusing the newest keeps a client that crashed and
    reconnected from locking itself out; a client holding the token can already play the seat.
    This wraps the session manager's admission step (the one place sessions are created).
    """
    check_internals(manager, _SESSION_INTERNALS)
    admit = manager._admit_session  # pyright: ignore[reportPrivateUsage]
    owners = manager._session_owners  # pyright: ignore[reportPrivateUsage]
    sessions = manager._server_instances  # pyright: ignore[reportPrivateUsage]

    def admit_capped(
        requestor: AuthorizationContext | None,
    ) -> StreamableHTTPServerTransport | None:
        if requestor is not None:
            mine = [sid for sid, owner in owners.items() if owner == requestor]  # oldest first
            for sid in mine[: max(len(mine) - per_seat + 1, 0)]:
                _evict(sid)
        return admit(requestor)

    def _evict(session_id: str) -> None:
        transport = sessions.pop(session_id, None)
        owners.pop(session_id, None)
        if transport is not None and transport.idle_scope is not None:
            transport.idle_scope.cancel()  # ends the session's task, which terminates it
        log.info("session evicted: too many for its seat", session=session_id[:8])

    manager._admit_session = admit_capped  # type: ignore[method-assign]

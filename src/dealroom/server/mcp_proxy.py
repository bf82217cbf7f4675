"""The seat proxy: a stdio MCP server that forwards every call to one seat of an HTTP room.

For stdio-only hosts (Claude Desktop): the host launches ``dealroom seat --server URL`` with the
seat token in ``DEALROOM_SEAT_TOKEN``; the proxy offers the same tools, resources and prompt,
and relays each call with ``Authorization: Bearer <token>``. Refusals keep their codes.

The proxy answers the host at once and connects upstream meanwhile (again on the next call
after a failure): an unreachable or a dead room server is an ``upstream_unavailable`` tool error
within seconds (every upstream call is bounded), never a crash before ``initialize`` or a hang.
A seat token the room server refuses (401 or 403) is refused for good: ``seat_token_refused``,
said once on stderr (``on_refused``) and, without asking the room server again, to every later
call (a read of a resource or the prompt gets it as a JSON-RPC error). Upstream failures are one
log line each.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, cast

import anyio
import anyio.abc
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
from dealroom.protocol.arguments import arguments_of
from dealroom.server.mcp_app import (
    MODEL_TOOLS_URI,
    OBSERVATION_URI,
    TRANSCRIPT_URI,
    build_app,
)
from dealroom.server.seat import CallRefused
from dealroom.server.stdio_wire import serve_stdio_wire

log = structlog.stdlib.get_logger(__name__)

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")

_UPSTREAM_ERRORS = (httpx2.HTTPError, MCPError, OSError, anyio.BrokenResourceError)


class Upstream:
    """The MCP connection to the room server, opened on first use and again after a failure.

    The client lives in its own task (``run``): whatever breaks inside it (the server gone, a
    401) ends that task with one log line and leaves the proxy serving, instead of escaping
    into the stdio server.
    """

    def __init__(
        self,
        server: str,
        token: str,
        *,
        connect_timeout_s: float = 10.0,
        on_refused: Callable[[str], None] | None = None,
    ) -> None:
        self.server = server
        self.token = token
        self.connect_timeout_s = connect_timeout_s
        self.on_refused = on_refused
        """Called once, with the refusal's line, when the room server refuses the token."""
        self.refused_status: int | None = None
        """The HTTP status the room server refused the token with (then every call fails)."""
        self._group: anyio.abc.TaskGroup | None = None
        self._client: Client | None = None
        self._scope: anyio.CancelScope | None = None
        self._failure = "not connected"
        self._lock = anyio.Lock()

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Hold the task group that connections live in (until cancelled)."""
        async with anyio.create_task_group() as group:
            self._group = group
            task_status.started()
            await anyio.sleep_forever()

    async def client(self) -> Client:
        """The connected client; raises CallRefused (seat_token_refused, or
        upstream_unavailable) if it cannot be."""
        async with self._lock:
            if self.refused_status is not None:
                raise _token_refused(self.refused_status)
            if self._client is None:
                assert self._group is not None, "Upstream.run is not running"
                try:
                    with anyio.fail_after(self.connect_timeout_s):
                        await self._group.start(self._connection)
                except TimeoutError:
                    self.reset()
                    self._failure = f"no answer within {self.connect_timeout_s:g} s"
                if self.refused_status is not None:
                    raise _token_refused(self.refused_status)
                if self._client is None:
                    raise _unavailable(self._failure)
            return self._client

    async def check(self) -> None:
        """Connect once at start-up, so that a refused token is said at once."""
        with contextlib.suppress(CallRefused):
            await self.client()

    def refuse(self, status: int) -> None:
        """The room server refused the token: every later call is refused without asking."""
        if self.refused_status is None:
            self.refused_status = status
            if self.on_refused is not None:  # said there, not also in the log
                self.on_refused(_token_refused(status).payload.text())
            else:
                log.warning("seat token refused", upstream=self.server, status=status)

    def reset(self) -> None:
        """Drop the connection (the next call opens a new one)."""
        if self._scope is not None:
            self._scope.cancel()
        self._client = None

    async def _connection(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        started = False
        headers = {"Authorization": f"Bearer {self.token}"}
        timeout = httpx2.Timeout(self.connect_timeout_s, read=90.0)
        refused: list[int] = []

        async def watch(response: httpx2.Response) -> None:
            if response.status_code in (401, 403):
                refused.append(response.status_code)

        hooks = {"response": [watch]}
        try:
            with anyio.CancelScope() as self._scope:
                async with (
                    httpx2.AsyncClient(headers=headers, timeout=timeout, event_hooks=hooks) as http,
                    Client(streamable_http_client(self.server, http_client=http)) as client,
                ):
                    self._client = client
                    started = True
                    task_status.started()
                    await anyio.sleep_forever()
        except Exception as exc:  # any failure inside the client ends this connection alone
            status = refused[0] if refused else refusal_status(exc)
            if status is not None:
                self.refuse(status)
            else:
                self._failure = describe_failure(exc)
                log.warning("upstream connection failed", upstream=self.server, error=self._failure)
        finally:
            self._client = None
            if not started:
                task_status.started()


def refusal_status(exc: BaseException) -> int | None:
    """401 or 403 if ``exc`` is, or holds, the room server refusing the token; else None."""
    for leaf in _leaves(exc):
        if isinstance(leaf, httpx2.HTTPStatusError) and leaf.response.status_code in (401, 403):
            return leaf.response.status_code
    return None


def describe_failure(exc: BaseException) -> str:
    """One line saying why the room server could not be used (other than refusing the token)."""
    leaves = list(_leaves(exc))
    for leaf in leaves:
        if isinstance(leaf, httpx2.HTTPStatusError):
            return f"HTTP {leaf.response.status_code} from the room server"
    for leaf in leaves:
        if isinstance(leaf, httpx2.ConnectError | ConnectionError):
            return "cannot connect to the room server"
    first = leaves[0] if leaves else exc
    return f"{type(first).__name__}: {str(first)[:120]}".rstrip(": ").replace("\n", " ")


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", exc)
        return [leaf for inner in group.exceptions for leaf in _leaves(inner)]
    found = [exc]
    if exc.__cause__ is not None:
        found += _leaves(exc.__cause__)
    return found


class UpstreamSeat:
    """A ServedSeat that relays to a seat of an HTTP room through an MCP client."""

    def __init__(self, upstream: Upstream | Client, server: str, *, call_s: float = 20.0) -> None:
        self.upstream = upstream
        self.server = server
        self.call_s = call_s
        """Most seconds an upstream call may take beyond the time it asks to wait."""
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
                raise _unavailable("the server's answer was not understood") from None
            self._viewer = (observation.role, observation.scenario.currency)
        return self._viewer

    async def tool_descriptions(self) -> Mapping[str, str]:
        """The upstream server's own descriptions (rendered there from the room's rules)."""
        if self._descriptions is None:
            try:
                listed = await self._call(lambda c: c.list_tools())
            except CallRefused:
                return {}  # the local descriptions, until the room server answers
            self._descriptions = {t.name: t.description or "" for t in listed.tools}
        return self._descriptions

    async def act(self, action: Action) -> ActionResult:
        """Relay one action."""
        return await self._tool(action.type, arguments_of(action), ActionResult)

    async def wait(self, timeout_s: float) -> WaitResult:
        """Relay a long-poll."""
        return await self._tool(
            "wait_for_opponent", {"timeout_s": timeout_s}, WaitResult, extra_s=timeout_s
        )

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

    async def model_tools(self) -> str:
        """The upstream model_tools resource."""
        return await self._resource(MODEL_TOOLS_URI)

    async def briefing(self) -> str:
        """The upstream briefing prompt."""
        prompt = await self._call(lambda c: c.get_prompt("briefing"))
        return "\n".join(
            m.content.text for m in prompt.messages if isinstance(m.content, TextContent)
        )

    async def _call(self, run: Callable[[Client], Awaitable[R]], extra_s: float = 0.0) -> R:
        """One upstream request, bounded; a refused token is seat_token_refused, any other
        failure upstream_unavailable."""
        upstream = self.upstream
        client = await upstream.client() if isinstance(upstream, Upstream) else upstream
        try:
            with anyio.fail_after(self.call_s + extra_s):
                return await run(client)
        except (*_UPSTREAM_ERRORS, TimeoutError) as exc:
            if isinstance(upstream, Upstream):
                upstream.reset()
            status = None if isinstance(exc, TimeoutError) else refusal_status(exc)
            if status is not None:
                if isinstance(upstream, Upstream):
                    upstream.refuse(status)
                raise _token_refused(status) from None
            reason = describe_failure(exc) if not isinstance(exc, TimeoutError) else "timed out"
            raise _unavailable(reason) from None

    async def _tool(
        self, name: str, arguments: dict[str, Any], model: type[M], extra_s: float = 0.0
    ) -> M:
        result = await self._call(lambda c: c.call_tool(name, arguments), extra_s)
        text = "".join(c.text for c in result.content if isinstance(c, TextContent))
        if result.is_error:
            raise CallRefused(ToolErrorPayload.parse(text))
        try:
            return model.model_validate(result.structured_content)
        except ValidationError:
            log.warning("unexpected upstream result", tool=name)
            raise _unavailable("the server's answer was not understood") from None

    async def _resource(self, uri: str) -> str:
        result = await self._call(lambda c: c.read_resource(uri))
        return "".join(getattr(c, "text", "") for c in result.contents)


def _unavailable(reason: str) -> CallRefused:
    log.warning("upstream call failed", error=reason)
    return CallRefused(
        seat_text.error_payload(
            SessionErrorCode.UPSTREAM_UNAVAILABLE, f"The room server did not answer ({reason})."
        )
    )


def _token_refused(status: int) -> CallRefused:
    return CallRefused(
        seat_text.error_payload(
            SessionErrorCode.SEAT_TOKEN_REFUSED,
            f"The room server refused the seat token (HTTP {status}).",
        )
    )


async def serve_proxy(
    server: str, token: str, *, on_refused: Callable[[str], None] | None = None
) -> None:
    """Relay stdin/stdout MCP to ``server`` (the room server's /mcp URL) until stdin closes;
    ``on_refused`` is told, once, the line of a token the room server refuses."""
    upstream = Upstream(server, token, on_refused=on_refused)
    seat = UpstreamSeat(upstream, server)
    app = build_app(lambda: seat, name="dealroom-seat")
    async with anyio.create_task_group() as group:
        await group.start(upstream.run)
        group.start_soon(upstream.check)
        await serve_stdio_wire(app)
        group.cancel_scope.cancel()

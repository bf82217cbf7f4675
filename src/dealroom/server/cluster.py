"""Several server processes behind one address: a front that routes each request to the worker
that owns its room (``dealroom serve --transport http --workers N``).

Rooms are independent, so a cluster is N complete room servers (workers, each a process with its
own event loop, on a private Unix socket, with its own room journals and the shared results
store) and one front process on the public address that only carries bytes. A worker starts
every token it issues with ``w<index>.`` (``RoomRegistry.token_prefix``; no secret: the server
still keeps only digests and compares them in constant time), so the front routes by the
bearer token alone:

    /mcp, /web/api/room*, /web/api/seat*,  the worker named by the token's prefix; a token
    /web/api/study*                        with no valid prefix (or none) goes to worker 0,
                                           which answers 401 for what it does not know
    POST /admin/rooms, /admin/studies      the next live worker, round robin (a study's rooms
                                           open on its own worker); a study only once no
                                           worker has its id (409 otherwise; creations one
                                           at a time, ``_create_study``)
    GET  /admin/rooms/{room},              each worker in turn, until one knows the room (or
         /admin/studies/{study}[/...],     the study; the others answer 404 and change nothing)
         /web/study/{study}/join
    GET  /healthz                          the front itself: which workers are up
    anything else (pages, /web/api/runs)   any live worker (the store is shared)

The front is uvicorn with the public side's limits (``http_limits``: request deadline,
keep-alive, connection cap) and an aiohttp client per worker (aiohttp rather than httpx2: about a
fifth of the CPU per request, and it speaks to Unix sockets). Requests are read whole (a
JSON-RPC message, at most ``MAX_REQUEST_BYTES``) and sent on a pooled keep-alive connection;
responses with a length are relayed whole, streams (SSE) chunk by chunk as they come, the
upstream closed as soon as the client goes. Every header but the hop-by-hop ones goes through
unchanged both ways (``Host``, ``Origin``, ``Authorization``, ``Mcp-Session-Id``): each worker
does the Host, Origin and token checks itself, exactly as a single server does. A worker that
is down makes its own rooms answer 502 with one line; the other workers' rooms go on.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Sequence
from typing import Any, cast

import aiohttp
import anyio
import anyio.abc
import structlog
import uvicorn
from multidict import CIMultiDict
from starlette.types import Message, Receive, Scope, Send
from yarl import URL

from dealroom.protocol.study import LABEL
from dealroom.server.cluster_owners import owner_of
from dealroom.server.cluster_workers import Workers
from dealroom.server.http_limits import DEFAULT_HTTP_LIMITS, HttpLimits, raise_open_file_limit
from dealroom.server.mcp_http import StoppingServer, listen_url, uvicorn_config
from dealroom.server.studies import study_exists

log = structlog.stdlib.get_logger(__name__)

MAX_REQUEST_BYTES = 4 * 1024 * 1024
"""Largest request body the front relays, in bytes."""
CONNECT_S = 5.0
"""Longest the front waits to connect to a worker's socket."""
POOL_KEEP_ALIVE_S = 15.0
"""An idle connection to a worker is closed after this (less than the worker's keep-alive,
so that the front, never the worker, closes it)."""

_HOP = frozenset(
    [
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"content-length",
    ]
)
_BY_TOKEN = ("/web/api/room", "/web/api/seat", "/web/api/study")


def _bearer(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return ""


async def _body(receive: Receive) -> bytes | None:
    """The whole request body, or None if it is over ``MAX_REQUEST_BYTES``."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _is_join(path: str) -> bool:
    """A visit to a study's one URL (``/web/study/<id>/join``): only the study's worker admits."""
    return path.startswith("/web/study/") and path.endswith("/join")


def _study_id(body: bytes) -> str | None:
    """The id a study request names, if it is a valid one (``StudyRequest.id``)."""
    try:
        request = json.loads(body)
    except (ValueError, RecursionError):
        return None
    study = cast("dict[str, object]", request).get("id") if isinstance(request, dict) else None
    return study if isinstance(study, str) and re.fullmatch(LABEL, study) else None


async def _reply(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


class Front:
    """The front's ASGI app: routes each request to a worker's socket and relays the answer."""

    def __init__(self, sockets: Sequence[str], alive: Callable[[int], bool]) -> None:
        self.sockets = tuple(sockets)
        self.alive = alive
        self._sessions: list[aiohttp.ClientSession] = []
        self._turn = itertools.cycle(range(len(self.sockets)))
        self._failing: set[int] = set()
        self._creating = anyio.Lock()

    async def __aenter__(self) -> Front:
        timeout = aiohttp.ClientTimeout(total=None, connect=CONNECT_S)
        for path in self.sockets:
            connector = aiohttp.UnixConnector(
                path=path, limit=0, keepalive_timeout=POOL_KEEP_ALIVE_S
            )
            session = aiohttp.ClientSession(
                connector=connector,
                timeout=timeout,
                auto_decompress=False,
                cookie_jar=aiohttp.DummyCookieJar(),
                skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            )
            self._sessions.append(session)
        return self

    async def __aexit__(self, *exc: object) -> None:
        with anyio.CancelScope(shield=True):
            for session in self._sessions:
                await session.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if path == "/healthz":
            up = [self.alive(i) for i in range(len(self.sockets))]
            workers = [{"worker": i, "up": u} for i, u in enumerate(up)]
            await _reply(send, 200 if all(up) else 503, {"ok": all(up), "workers": workers})
            return
        body = await _body(receive)
        if body is None:
            await _reply(send, 413, {"error": f"a request is at most {MAX_REQUEST_BYTES} bytes"})
            return
        if path == "/admin/studies" and scope["method"] == "POST":
            await self._create_study(scope, body, receive, send)
        elif path == "/admin/rooms" and scope["method"] == "POST":
            await self._first_live(scope, body, receive, send)
        elif path.startswith(("/admin/rooms/", "/admin/studies/")) or _is_join(path):
            await self._find_owner(scope, body, receive, send)
        elif path == "/mcp" or path.startswith(_BY_TOKEN):
            index = owner_of(_bearer(scope), len(self.sockets))
            await self._forward(index or 0, scope, body, receive, send)
        else:
            await self._first_live(scope, body, receive, send)

    async def _forward(
        self, index: int, scope: Scope, body: bytes, receive: Receive, send: Send
    ) -> None:
        try:
            response = await self._open(index, scope, body)
        except (aiohttp.ClientError, OSError) as exc:
            await self._down(index, send, exc)
            return
        await self._relay(index, response, receive, send)

    async def _first_live(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        """The next live worker in turn; one that cannot be connected to is skipped (nothing
        reached it, so the request is safe to send to the next)."""
        last: Exception = OSError("no worker is up")
        for _ in range(len(self.sockets)):
            index = next(self._turn)
            if not self.alive(index):
                continue
            try:
                response = await self._open(index, scope, body)
            except (aiohttp.ClientConnectorError, ConnectionRefusedError) as exc:
                last = exc
                continue
            except (aiohttp.ClientError, OSError) as exc:
                await self._down(index, send, exc)
                return
            await self._relay(index, response, receive, send)
            return
        log.error("no worker answers", path=scope["path"], error=str(last))
        await _reply(send, 502, {"error": "no worker of this server is answering"})

    async def _create_study(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        """A study id names one study in the cluster, whichever worker a request lands on (each
        worker checks only its own): creations wait for each other, and each worker is asked
        for the id first; one that has it (or holds its journal unrestored) makes this a 409, as
        a single server answers. A worker that cannot be asked refuses the creation (502)."""
        study = _study_id(body)
        if study is None:  # the worker answers 400 for a request that names no valid id
            await self._first_live(scope, body, receive, send)
            return
        async with self._creating:
            path = f"/admin/studies/{study}"
            ask: Scope = {
                **scope,
                "method": "GET",
                "path": path,
                "raw_path": path.encode(),
                "query_string": b"",
                "headers": [(k, v) for k, v in scope["headers"] if k != b"content-type"],
            }
            for index in range(len(self.sockets)):
                try:
                    response = await self._open(index, ask, b"")
                except (aiohttp.ClientError, OSError) as exc:
                    log.error("study id not checked", worker=index, error=str(exc))
                    message = (
                        f"worker {index} is not answering: no study is created until every "
                        "worker can say that its id is unused"
                    )
                    await _reply(send, 502, {"error": message})
                    return
                status = response.status
                if status in (200, 410):
                    response.release()
                    await _reply(send, 409, {"error": str(study_exists(study))})
                    return
                if status != 404:  # the admin token refused: said as the worker says it
                    await self._relay(index, response, receive, send)
                    return
                response.release()
            await self._first_live(scope, body, receive, send)

    async def _find_owner(self, scope: Scope, body: bytes, receive: Receive, send: Send) -> None:
        """Ask each worker for the room (or study) until one has it (an admin read: rare)."""
        study = scope["path"].startswith("/admin/studies/") or _is_join(scope["path"])
        noun = "study" if study else "room"
        down: list[int] = []
        for index in range(len(self.sockets)):
            try:
                response = await self._open(index, scope, body)
            except (aiohttp.ClientError, OSError):
                down.append(index)
                continue
            if response.status == 404:
                response.release()
                continue
            await self._relay(index, response, receive, send)
            return
        if down:
            names = ", ".join(map(str, down))
            message = f"no such {noun} on the workers that answer (not answering: {names})"
            await _reply(send, 502, {"error": message})
            return
        await _reply(send, 404, {"error": f"no such {noun}"})

    async def _open(self, index: int, scope: Scope, body: bytes) -> aiohttp.ClientResponse:
        headers = CIMultiDict[str](
            (name.decode("latin-1"), value.decode("latin-1"))
            for name, value in scope["headers"]
            if name not in _HOP
        )
        target = scope["raw_path"] or scope["path"].encode()
        if scope["query_string"]:
            target += b"?" + scope["query_string"]
        url = URL(f"http://worker{target.decode('latin-1')}", encoded=True)
        return await self._sessions[index].request(
            scope["method"], url, headers=headers, data=body, allow_redirects=False
        )

    async def _relay(
        self, index: int, response: aiohttp.ClientResponse, receive: Receive, send: Send
    ) -> None:
        """The worker's answer to the client: whole if it has a length, else as it streams."""
        headers = [(k, v) for k, v in response.raw_headers if k.lower() not in _HOP]
        start = {"type": "http.response.start", "status": response.status, "headers": headers}
        try:
            if response.content_length is not None:
                data = await response.read()
                length = response.content_length if response.method == "HEAD" else len(data)
                headers.append((b"content-length", str(length).encode()))
                await send(start)
                await send({"type": "http.response.body", "body": data})
            else:
                await send(start)
                await _stream(response, receive, send)
        except (aiohttp.ClientError, OSError) as exc:
            if response.content_length is not None:  # nothing sent yet
                await self._down(index, send, exc)
                return
            log.error("worker stopped answering mid-stream", worker=index, error=str(exc))
            await send({"type": "http.response.body", "body": b""})
        finally:
            response.release()
        self._failing.discard(index)

    async def _down(self, index: int, send: Send, exc: BaseException) -> None:
        if index not in self._failing:  # once per failure, not once per request
            self._failing.add(index)
            log.error("worker not answering", worker=index, error=f"{type(exc).__name__}: {exc}")
        message = f"worker {index} is not answering: its rooms are unavailable until it is back"
        await _reply(send, 502, {"error": message})


async def _stream(response: aiohttp.ClientResponse, receive: Receive, send: Send) -> None:
    """Relay a stream chunk by chunk until it ends or the client goes away."""
    async with anyio.create_task_group() as group:

        async def until_gone() -> None:
            message: Message = await receive()
            while message["type"] != "http.disconnect":
                message = await receive()
            group.cancel_scope.cancel()

        group.start_soon(until_gone)
        async for chunk in response.content.iter_any():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        group.cancel_scope.cancel()


async def serve_cluster(
    workers: Workers,
    *,
    host: str,
    port: int,
    limits: HttpLimits = DEFAULT_HTTP_LIMITS,
    on_ready: Callable[[], None] | None = None,
    task_status: anyio.abc.TaskStatus[uvicorn.Server] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Start the workers, then serve the front on ``host:port`` until interrupted (or the
    uvicorn server reported to ``task_status`` is told to exit); then stop the workers.
    ``on_ready`` is called once the front listens. Raises WorkerFailed if a worker cannot be
    started, ListenFailed if the front cannot listen."""
    open_files = raise_open_file_limit()
    front = Front(workers.sockets, workers.alive)
    config = uvicorn_config(
        front,
        host=host,
        port=port,
        limits=limits,
        open_files=open_files // 2,  # each client connection may hold one to a worker
        lifespan="off",
        server_header=False,  # the workers' own Server and Date headers go through
        date_header=False,
    )
    server = StoppingServer(config, on_ready)
    async with anyio.create_task_group() as group:
        await group.start(workers.run)
        async with front:
            log.info("serving", url=f"{listen_url(host, port)}/mcp", workers=len(workers.sockets))
            task_status.started(server)
            await server.serve()
        group.cancel_scope.cancel()

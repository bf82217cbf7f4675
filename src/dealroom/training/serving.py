"""A trained checkpoint behind a loopback OpenAI-compatible endpoint, for evaluation.

What is trained is what is served: the checkpoint's own chat template renders the conversation
(tools included) exactly as in training, and TRL's response parser reads its tool calls back,
so an ``llm:NAME`` seat in ``dealroom match`` or ``dealroom tournament --base-url URL`` plays the
model on the same surface it was trained on. ``temperature`` 0 is greedy decoding.

Requests are served concurrently but generated one at a time (a small model on a CPU or one
GPU), in arrival order:

- at most ``max_queue`` requests wait behind the one being generated; one more is answered
  ``503`` with a one-line reason at once, so a round robin's retries back off instead of piling
  up;
- a request whose client disconnected (timed out, gave up) is dropped: before its generation
  starts, and between generated tokens (a stopping criterion polls the socket), so the model
  never computes answers nobody reads;
- a prompt longer than the model's context (``max_position_embeddings``) is a one-line ``400``;
  one that fits gets at most what is left of the context to generate.

Only ``POST /v1/chat/completions`` (non-streaming) and ``GET /v1/models`` (with the training
horizon, ``runlog.model_entry``) are served, on
127.0.0.1 by default. Needs the ``train`` extra (only ``ChatModel`` does: the HTTP side takes
any ``Completer``; the checkpoint's is ``dealroom.training.chat_model.ChatModel``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import select
import socket
import threading
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

import structlog

from dealroom.protocol.errors import DealroomError
from dealroom.training._chat import (
    JsonObject,
    json_object,
)
from dealroom.training.runlog import model_entry

log = structlog.get_logger(__name__)

MAX_BODY = 4 * 1024 * 1024
"""Largest request body accepted (bytes)."""
MAX_QUEUE = 8
"""Requests that may wait behind the one being generated (``--max-queue``)."""


class ContextTooLong(DealroomError, ValueError):
    """The prompt does not fit the model's context (answered 400)."""

    kind = "context_too_long"


class Cancelled(DealroomError):
    """The client went away; nothing is sent."""

    kind = "cancelled"


class Completer(Protocol):
    """What the endpoint serves: ``ChatModel``, or a stand-in in tests."""

    name: str

    def complete(
        self, body: Mapping[str, Any], cancelled: Callable[[], bool] = ...
    ) -> Mapping[str, object]:
        """One chat completion (JSON: ``ChatModel``'s is a ``ChatCompletion``); raises
        ValueError (400), Cancelled when ``cancelled()``."""
        ...


def generation_budget(prompt_tokens: int, context: int | None, wanted: int) -> int:
    """Tokens to generate: ``wanted``, capped by what the context leaves; ContextTooLong when
    the prompt alone fills it."""
    if context is None:
        return wanted
    if prompt_tokens >= context:
        raise ContextTooLong(
            f"the prompt is {prompt_tokens:,} tokens and the model's context is {context:,}: "
            "shorten the conversation"
        )
    return min(wanted, context - prompt_tokens)


def not_cancelled() -> bool:
    """The ``cancelled`` of a caller that waits for its answer."""
    return False


@dataclass(slots=True)
class Queue:
    """Admission and order: one request generates, at most ``limit`` wait, first come first
    served. Counts what it turned away and dropped (for logs and tests)."""

    limit: int = MAX_QUEUE
    refused: int = 0
    dropped: int = 0
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _next: int = 0
    _serving: int = 0

    def enter(self) -> int | None:
        """A ticket, or None when ``limit`` requests already wait behind a running one."""
        with self._cond:
            if self._next - self._serving > self.limit:
                self.refused += 1
                return None
            ticket = self._next
            self._next += 1
            return ticket

    @contextmanager
    def turn(self, ticket: int) -> Generator[None]:
        """Hold the model while the block runs, after every earlier ticket."""
        with self._cond:
            self._cond.wait_for(lambda: self._serving == ticket)
        try:
            yield
        finally:
            with self._cond:
                self._serving += 1
                self._cond.notify_all()

    def waiting(self) -> int:
        """Requests admitted and not yet done (the running one included)."""
        with self._cond:
            return self._next - self._serving


MAX_TOKENS_LIMIT = 1_000_000
GREEDY_BELOW = 1e-4
"""A temperature below this decodes greedily: dividing logits by it would overflow."""


def sampling_params(body: Mapping[str, Any]) -> tuple[int, float]:
    """The request's token limit (0: the server's) and temperature (default 1), checked:
    a ValueError of one line for anything but an integer in [0, 1,000,000] and a finite number
    in [0, 2]; a temperature below ``GREEDY_BELOW`` is 0 (greedy)."""
    raw_limit = body.get("max_completion_tokens", body.get("max_tokens"))
    if raw_limit is None:
        limit = 0
    elif isinstance(raw_limit, int) and not isinstance(raw_limit, bool):
        limit = raw_limit
    else:
        raise ValueError(f"max_tokens must be an integer, not {str(raw_limit)[:40]}")
    if not 0 <= limit <= MAX_TOKENS_LIMIT:
        raise ValueError(f"max_tokens must be in [0, {MAX_TOKENS_LIMIT:,}]")
    raw = body.get("temperature")
    if raw is None:
        return limit, 1.0
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 <= raw <= 2:
        raise ValueError(f"temperature must be a number in [0, 2], not {str(raw)[:40]}")
    return limit, 0.0 if raw < GREEDY_BELOW else float(raw)


def client_gone(sock: socket.socket) -> bool:
    """True when the peer closed the connection (readable with nothing to read)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        return sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


MAX_CONNECTIONS = 64
"""Connections served at once (a thread each); one more is answered 503 and closed."""
REQUEST_TIMEOUT_S = 30.0
"""Seconds a connection may stay silent while its request is read."""


_BUSY_BODY = json.dumps({"error": {"message": "busy: too many connections"}}).encode()
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    + f"Content-Length: {len(_BUSY_BODY)}\r\nConnection: close\r\n\r\n".encode()
    + _BUSY_BODY
)


class _BoundedServer(ThreadingHTTPServer):
    """A thread per connection, at most ``MAX_CONNECTIONS`` of them: 300 slow clients holding
    half-sent requests once made 307 threads."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.sendall(_BUSY)
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


@dataclass(frozen=True, slots=True)
class ServedEndpoint:
    """A running endpoint."""

    base_url: str
    server: ThreadingHTTPServer
    queue: Queue


def _handler(chat: Completer, queue: Queue) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = REQUEST_TIMEOUT_S  # a client that stops sending mid-request is dropped

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("serve.request", line=format % args)

        def _send(self, code: int, payload: Mapping[str, Any]) -> None:
            body = json.dumps(payload).encode()
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up

        def _error(self, status: int, message: str, code: str | None = None) -> None:
            error = {"message": message, "type": "invalid_request_error", "code": code}
            self._send(status, {"error": error})

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                entry = model_entry(chat.name, getattr(chat, "horizon", None))
                self._send(200, {"object": "list", "data": [entry]})
            else:
                self._error(404, "not found")

        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._error(404, "not found")
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 < length <= MAX_BODY:
                self._error(400, f"body must be 1 to {MAX_BODY} bytes")
                return
            try:
                body = json_object(json.loads(self.rfile.read(length)))
                if body is None:
                    raise ValueError("body must be a JSON object")
                if body.get("stream"):
                    raise ValueError("streaming is not supported")
            except (ValueError, TypeError) as exc:
                self._error(400, _one_line(exc))
                return
            except RecursionError:
                self._error(400, "the JSON body is nested too deep")
                return
            self._complete(body)

        def _complete(self, body: JsonObject) -> None:
            ticket = queue.enter()
            if ticket is None:
                log.warning("serve.busy", limit=queue.limit)
                self._error(
                    503,
                    f"busy: {queue.limit} requests already wait for the model; retry later",
                )
                return
            gone = functools.partial(client_gone, self.connection)
            try:
                with queue.turn(ticket):
                    if gone():
                        raise Cancelled
                    reply = chat.complete(body, gone)
            except Cancelled:
                queue.dropped += 1
                log.info("serve.dropped", reason="client disconnected")
                self.close_connection = True
                return
            except ContextTooLong as exc:  # OpenAI's code, which clients recognise
                self._error(400, _one_line(exc), code="context_length_exceeded")
                return
            except (ValueError, TypeError, KeyError) as exc:
                self._error(400, _one_line(exc))
                return
            self._send(200, reply)

    return Handler


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


@contextmanager
def serve(
    chat: Completer, host: str = "127.0.0.1", port: int = 0, *, max_queue: int = MAX_QUEUE
) -> Generator[ServedEndpoint]:
    """Serve ``chat`` in a background thread for the duration of the block."""
    queue = Queue(max_queue)
    server = _BoundedServer((host, port), _handler(chat, queue))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    endpoint = ServedEndpoint(f"http://{host}:{server.server_address[1]}/v1", server, queue)
    log.info("serve.started", base_url=endpoint.base_url, model=chat.name)
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)

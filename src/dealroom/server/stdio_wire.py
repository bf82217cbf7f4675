"""The stdio wire of both stdio servers (house mode and the seat proxy).

The MCP SDK's stdio transport reads stdin in a worker thread that a cancellation waits for, so
SIGINT left the server running until the host closed stdin, and it drops a line that is not
JSON without a reply. Here stdin is read by a daemon thread (a signal ends the server at once,
whatever stdin does), a line that is not JSON, or nests too deep for the parser, gets the
JSON-RPC parse error (-32700, id null) and the server reads on, and SIGINT or SIGTERM end
serving cleanly (the room's ``finally`` blocks run).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from typing import Any, BinaryIO, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

from dealroom.server._sdk import check_internals

log = structlog.stdlib.get_logger(__name__)

PARSE_ERROR = -32700


def parse_error(detail: str) -> str:
    """The JSON-RPC answer to a line that is not JSON (one line)."""
    error = {"code": PARSE_ERROR, "message": f"Parse error: {detail}"}
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": error})


class _Stdout:
    """The wire out: one line per write, written and flushed whole under a lock."""

    def __init__(self, binary: BinaryIO) -> None:
        self.binary = binary
        self.lock = anyio.Lock()

    async def write(self, text: str) -> None:
        data = text.encode("utf-8")

        def put() -> None:
            self.binary.write(data)
            self.binary.flush()

        async with self.lock:
            await anyio.to_thread.run_sync(put)

    async def flush(self) -> None:
        """Each write flushes already."""


class _Stdin:
    """The wire in: lines from a daemon thread; lines that are not JSON are answered here."""

    def __init__(self, binary: BinaryIO, out: _Stdout) -> None:
        self.out = out
        send: MemoryObjectSendStream[bytes]
        receive: MemoryObjectReceiveStream[bytes]
        send, receive = anyio.create_memory_object_stream[bytes](16)
        self.receive = receive
        token = anyio.lowlevel.current_token()

        fd = binary.fileno()

        def pump() -> None:
            # os.read on the descriptor, not the buffered file: a daemon thread blocked in it
            # holds no lock that the interpreter needs at exit.
            pending = bytearray()
            try:
                while chunk := os.read(fd, 1 << 16):
                    pending += chunk
                    while (end := pending.find(b"\n")) >= 0:
                        line = bytes(pending[: end + 1])
                        del pending[: end + 1]
                        anyio.from_thread.run(send.send, line, token=token)
                if pending:
                    anyio.from_thread.run(send.send, bytes(pending), token=token)
                anyio.from_thread.run_sync(send.close, token=token)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, RuntimeError, OSError):
                return  # the server stopped

        threading.Thread(target=pump, name="stdin", daemon=True).start()

    def __aiter__(self) -> _Stdin:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                raw = await self.receive.receive()
            except anyio.EndOfStream:
                raise StopAsyncIteration from None
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            try:
                json.loads(line)
            except (ValueError, RecursionError) as exc:  # nested too deep: RecursionError
                detail = str(exc) if isinstance(exc, ValueError) else "nested too deep"
                log.info("stdin line is not JSON", error=detail[:80])
                await self.out.write(parse_error(detail[:200]) + "\n")
                continue
            return line


async def serve_stdio_wire(app: MCPServer) -> None:
    """Serve ``app`` on stdin/stdout until stdin closes or SIGINT/SIGTERM arrives."""
    out = _Stdout(sys.stdout.buffer)
    lines = _Stdin(sys.stdin.buffer, out)
    check_internals(app, ("_lowlevel_server",))
    server = app._lowlevel_server  # pyright: ignore[reportPrivateUsage]
    async with anyio.create_task_group() as group:
        if sys.platform != "win32":
            group.start_soon(_stop_on_signal, group.cancel_scope)
        async with stdio_server(cast(Any, lines), cast(Any, out)) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        group.cancel_scope.cancel()


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for received in signals:
            log.info("stopping", signal=signal.Signals(received).name)
            scope.cancel()
            return

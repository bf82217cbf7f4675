"""Test helpers for seats: fast MCP sessions and a loopback dealroom HTTP server."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from mcp import ClientSession

from dealroom.agents import resolve
from dealroom.server.mcp_http import build_http_app, uvicorn_config
from dealroom.server.rooms import RoomRegistry
from dealroom.store.results import ResultsStore
from dealroom.store.writer import ResultWriter

ADMIN = "admin-token-for-llm-tests"

_compile = ClientSession._output_schema_validator  # pyright: ignore[reportPrivateUsage]
_VALIDATORS: dict[str, Any] = {}


def share_schema_validators(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compile each tool's output schema once per test run, not once per MCP session.

    Results are still validated against the schemas; only jsonschema's compile step (about
    150 ms per tool per session) is shared, so that tests opening many seats stay fast.
    """

    def cached(self: ClientSession, name: str, output_schema: dict[str, Any]) -> Any:
        key = json.dumps(output_schema, sort_keys=True)
        if key not in _VALIDATORS:
            _VALIDATORS[key] = _compile(self, name, output_schema)
        return _VALIDATORS[key]

    monkeypatch.setattr(ClientSession, "_output_schema_validator", cached)


def free_port() -> int:
    """An unused loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RoomServer:
    """A running loopback ``dealroom serve --transport http``."""

    url: str
    registry: RoomRegistry
    store: ResultsStore


@asynccontextmanager
async def room_server(tmp_path: Path) -> AsyncIterator[RoomServer]:
    """The HTTP room server on a free loopback port, in a task group; admin token ``ADMIN``."""
    port = free_port()
    with ResultsStore(tmp_path / "server.db") as store:
        registry = RoomRegistry(writer=ResultWriter(store), resolve_house=resolve)
        app = build_http_app(registry, admin_token=ADMIN, host="127.0.0.1", port=port)
        config = uvicorn_config(app, host="127.0.0.1", port=port, timeout_graceful_shutdown=2)
        server = uvicorn.Server(config)
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve)
            with anyio.fail_after(10):
                while not server.started:  # noqa: ASYNC110  (uvicorn has no started event)
                    await anyio.sleep(0.01)
            try:
                yield RoomServer(f"http://127.0.0.1:{port}", registry, store)
            finally:
                server.should_exit = True


@contextmanager
def room_server_thread(tmp_path: Path) -> Iterator[RoomServer]:
    """The HTTP room server in a background thread (for code that runs its own event loop).

    The server writes its results store from its own thread; ``store`` is a second connection
    to the same file, for the test to read.
    """
    port = free_port()
    path = tmp_path / "server.db"
    started = threading.Event()
    box: dict[str, Any] = {}

    def run() -> None:
        with ResultsStore(path) as store:
            registry = RoomRegistry(writer=ResultWriter(store), resolve_house=resolve)
            app = build_http_app(registry, admin_token=ADMIN, host="127.0.0.1", port=port)
            config = uvicorn_config(app, host="127.0.0.1", port=port)
            box["server"] = server = uvicorn.Server(config)
            box["registry"] = registry
            started.set()
            server.run()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(10), "server thread did not start"
    server: uvicorn.Server = box["server"]
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.01)
    try:
        with ResultsStore(path) as reader:
            yield RoomServer(f"http://127.0.0.1:{port}", box["registry"], reader)
    finally:
        server.should_exit = True
        thread.join(timeout=10)

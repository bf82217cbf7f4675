"""Helpers for the MCP server tests: rooms, in-memory clients, a loopback HTTP server."""

from __future__ import annotations

import hashlib
import json
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from dealroom.agents import resolve
from dealroom.protocol import DEFAULT_RULES, Action, AgentFactory, Decision, Role, Rules, Scenario
from dealroom.protocol.generator import DEFAULT_SPEC, scenario_at
from dealroom.protocol.secret import Secret, Seed
from dealroom.protocol.wire import ClockKind
from dealroom.server.http_limits import DEFAULT_HTTP_LIMITS, HttpLimits
from dealroom.server.mcp_app import build_app
from dealroom.server.mcp_http import build_http_app, uvicorn_config
from dealroom.server.negotiation import DEFAULT_LIMITS, RoomLimits
from dealroom.server.room import Room
from dealroom.server.room_settings import House, RoomSettings
from dealroom.server.rooms import RoomRegistry, SellerResolver
from dealroom.server.seat import RoomSeat
from dealroom.store.results import ResultsStore
from dealroom.store.writer import ResultWriter
from dealroom.testing import ScriptedAgent

ADMIN = "admin-token-for-tests"

_TLS: list[ssl.SSLContext] = []
_VALIDATORS: dict[str, Any] = {}


def tls() -> ssl.SSLContext:
    """One TLS context for every test HTTP client (building one loads the CA bundle: ~80 ms)."""
    if not _TLS:
        _TLS.append(ssl.create_default_context())
    return _TLS[0]


_compile = ClientSession._output_schema_validator  # pyright: ignore[reportPrivateUsage]


def share_schema_validators(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compile each tool output schema once per test run instead of once per client session.

    The mcp client still validates every structured result against the tool's output schema;
    only jsonschema's schema check and compile (about 150 ms per tool per session) is shared,
    so that tests opening many sessions stay fast.
    """

    def cached(self: ClientSession, name: str, output_schema: dict[str, Any]) -> Any:
        key = json.dumps(output_schema, sort_keys=True)
        if key not in _VALIDATORS:
            _VALIDATORS[key] = _compile(self, name, output_schema)
        return _VALIDATORS[key]

    monkeypatch.setattr(ClientSession, "_output_schema_validator", cached)


def secret_of(n: int) -> Secret:
    """A fixed secret for tests (served rooms take secrets, not small seeds)."""
    return Secret(hashlib.sha256(f"dealroom-test:{n}".encode()).digest())


def scenario(seed: Seed = 0, *, tier: str = "mid", index: int = 0, deadline: float | None = None):
    """A generated scenario, optionally with another deadline."""
    spec = (
        DEFAULT_SPEC if deadline is None else DEFAULT_SPEC.model_copy(update={"deadline": deadline})
    )
    return scenario_at(seed, index, tier, spec)  # type: ignore[arg-type]


def secret_with_gains(tier: str = "mid", *, start: int = 0) -> Secret:
    """The first test secret from ``start`` whose first scenario allows a deal."""
    found = (secret_of(n) for n in range(start, start + 100))
    return next(s for s in found if scenario(s, tier=tier).gains > 0)


def scripted(*decisions: Decision) -> House:
    """A house agent replaying ``decisions``, one per wake."""
    return House("scripted", lambda view, rng: ScriptedAgent(list(decisions)))


def acts(*actions: Action, wait: float | None = None) -> House:
    """A house agent doing one action per wake."""
    return scripted(*(Decision(actions=(a,), wait=wait) for a in actions))


def house_room(
    *,
    room_id: str = "room-test",
    role: Role = "buyer",
    opponent: House | str = "hardliner",
    seed: Seed = 0,
    tier: str = "mid",
    deadline: float | None = None,
    clock: ClockKind = "virtual",
    store: ResultsStore | None = None,
    writer: ResultWriter | None = None,
    scenarios: Callable[[int], Scenario | None] | None = None,
    limits: RoomLimits = DEFAULT_LIMITS,
    rules: Rules = DEFAULT_RULES,
) -> Room:
    """A room where the client plays ``role`` against a house agent."""
    house = opponent if isinstance(opponent, House) else House(opponent, resolve(opponent))
    other: Role = "seller" if role == "buyer" else "buyer"
    return Room(
        room_id,
        RoomSettings(
            scenarios=scenarios
            or (lambda i: scenario(seed, tier=tier, index=i, deadline=deadline)),
            occupants={other: house},
            clock=clock,
            seed=seed,
            limits=limits,
            rules=rules,
        ),
        writer=writer if store is None else ResultWriter(store),
    )


def client_for(room: Room, role: Role) -> Client:
    """An in-memory MCP client in ``role`` of ``room`` (every tool, as over HTTP)."""
    seat = RoomSeat(room, role)
    return Client(build_app(lambda: seat))


def text_of(result: CallToolResult) -> str:
    """The text content of a tool result."""
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured result."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return result.structured_content


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must be refused; its error text, ``code: sentence. hint.``"""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} was not refused: {text_of(result)[:200]}"
    text = text_of(result)
    code = text.partition(": ")[0]
    assert code and code.replace("_", "").isalnum() and code.islower(), text
    assert "Error executing tool" not in text and "\n" not in text, text
    return text


def free_port() -> int:
    """An unused loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class HttpServer:
    """A running loopback server."""

    url: str
    """Root URL, e.g. http://127.0.0.1:PORT."""
    registry: RoomRegistry

    @property
    def mcp(self) -> str:
        """The MCP endpoint."""
        return f"{self.url}/mcp"

    async def create_room(self, **request: Any) -> dict[str, Any]:
        """POST /admin/rooms with the admin token."""
        async with httpx2.AsyncClient(verify=tls()) as http:
            response = await http.post(
                f"{self.url}/admin/rooms",
                json=request,
                headers={"Authorization": f"Bearer {ADMIN}"},
            )
        assert response.status_code == 201, response.text
        return dict(response.json())

    @asynccontextmanager
    async def seat(self, token: str, *, mode: str = "auto") -> AsyncIterator[Client]:
        """An MCP client holding ``token``."""
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(
                headers=headers, timeout=httpx2.Timeout(30.0, read=90.0), verify=tls()
            ) as http,
            Client(streamable_http_client(self.mcp, http_client=http), mode=mode) as client,  # type: ignore[arg-type]
        ):
            yield client


def house_resolver(spec: str) -> AgentFactory:
    """Registry agents, plus ``accept-any``: accepts the first offer it sees."""
    if spec == "accept-any":

        def build(view: Any, rng: Any) -> Any:
            return _AcceptAny()

        return build
    return resolve(spec)


class _AcceptAny:
    def act(self, observation: Any) -> Decision:
        from dealroom.protocol import Accept

        theirs = observation.their_offer
        if theirs is None:
            return Decision()
        return Decision(actions=(Accept(offer_id=theirs.offer_id),))


@asynccontextmanager
async def http_server(
    tmp_path: Path,
    *,
    admin_token: str | None = ADMIN,
    limits: RoomLimits = DEFAULT_LIMITS,
    http_limits: HttpLimits = DEFAULT_HTTP_LIMITS,
    resolve_seller: SellerResolver | None = None,
) -> AsyncIterator[HttpServer]:
    """uvicorn on a free loopback port, in a task group, with a results store under tmp_path."""
    port = free_port()
    tmp_path.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240  (test set-up)
    with ResultsStore(tmp_path / "results.db") as store:
        registry = RoomRegistry(
            writer=ResultWriter(store),
            resolve_house=house_resolver,
            limits=limits,
            resolve_seller=resolve_seller,
        )
        app = build_http_app(
            registry, admin_token=admin_token, host="127.0.0.1", port=port, limits=http_limits
        )
        config = uvicorn_config(app, host="127.0.0.1", port=port, limits=http_limits)
        server = uvicorn.Server(config)
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve)
            with anyio.fail_after(10):
                while not server.started:  # noqa: ASYNC110  (uvicorn offers no started event)
                    await anyio.sleep(0.01)
            try:
                yield HttpServer(f"http://127.0.0.1:{port}", registry)
            finally:
                server.should_exit = True


def dumps(value: Any) -> str:
    """JSON text of anything a client received."""
    return json.dumps(value, sort_keys=True, default=str)

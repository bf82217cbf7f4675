"""The HTTP server's limits, over real loopback connections: sessions per seat token, request
deadlines, keep-alive, the connection cap at a small open-file limit, Host checks everywhere."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp_support import (
    ADMIN,
    free_port,
    http_server,
    ok,
    share_schema_validators,
    tls,
)

from dealroom.server.http_limits import DEFAULT_HTTP_LIMITS, HttpLimits
from dealroom.server.mcp_http import uvicorn_config
from dealroom.server.seat import SEAT_CALLS_IN_FLIGHT

pytestmark = pytest.mark.anyio

RPC_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


@pytest.fixture(autouse=True)
def _shared_validators(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)


async def open_session(http: httpx2.AsyncClient, url: str, token: str) -> str:
    """A new MCP session (raw initialize); its id."""
    auth = {"Authorization": f"Bearer {token}"}
    response = await http.post(url, json=INITIALIZE, headers=RPC_HEADERS | auth)
    assert response.status_code == 200, response.text
    return response.headers["mcp-session-id"]


async def session_status(http: httpx2.AsyncClient, url: str, token: str, session: str) -> int:
    headers = RPC_HEADERS | {
        "Authorization": f"Bearer {token}",
        "Mcp-Session-Id": session,
        "Mcp-Protocol-Version": "2025-11-25",
    }
    return (await http.post(url, json=TOOLS_LIST, headers=headers)).status_code


# -- sessions per seat token -----------------------------------------------------------------------


async def test_one_seat_token_holds_a_few_sessions_and_opening_more_closes_its_oldest(
    tmp_path: Path,
) -> None:
    cap = DEFAULT_HTTP_LIMITS.sessions_per_seat
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        token = (await server.create_room())["tokens"]["buyer"]
        with anyio.fail_after(60):
            sessions = [await open_session(http, server.mcp, token) for _ in range(cap + 5)]
            statuses = [await session_status(http, server.mcp, token, s) for s in sessions]
    assert statuses == [404] * 5 + [200] * cap


async def test_a_client_flooding_sessions_never_locks_another_room_out(tmp_path: Path) -> None:
    limits = HttpLimits(max_sessions=12, sessions_per_seat=4)
    async with (
        http_server(tmp_path, http_limits=limits) as server,
        httpx2.AsyncClient(verify=tls()) as http,
    ):
        flooder = (await server.create_room())["tokens"]["buyer"]
        others = [(await server.create_room(house_seller="accept-any")) for _ in range(2)]
        with anyio.fail_after(60):
            for _ in range(100):
                await open_session(http, server.mcp, flooder)
            for room in others:
                async with server.seat(room["tokens"]["buyer"]) as client:
                    await ok(client, "make_offer", price=100)
                    update = await ok(client, "wait_for_opponent", timeout_s=10)
                    assert update["outcome"]["status"] == "deal"


async def test_one_token_flooding_long_polls_never_cuts_another_room_off(tmp_path: Path) -> None:
    limits = HttpLimits(max_connections=60)
    async with http_server(tmp_path, http_limits=limits) as server:
        flooder = (await server.create_room())["tokens"]["buyer"]  # its seller never comes
        victim = (await server.create_room(house_seller="hardliner"))["tokens"]["buyer"]
        pool = httpx2.Limits(max_connections=None, max_keepalive_connections=None)
        async with httpx2.AsyncClient(verify=tls(), timeout=60, limits=pool) as http:
            session = await open_session(http, server.mcp, flooder)
            headers = RPC_HEADERS | {
                "Authorization": f"Bearer {flooder}",
                "Mcp-Session-Id": session,
                "Mcp-Protocol-Version": "2025-11-25",
            }
            replies: list[str] = []  # "" for a connection the server closed (its cap)

            async def long_poll(n: int) -> None:
                arguments = {"name": "wait_for_opponent", "arguments": {"timeout_s": 20}}
                call = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": arguments}
                try:
                    replies.append((await http.post(server.mcp, json=call, headers=headers)).text)
                except httpx2.HTTPError:
                    replies.append("")

            answered = 0
            async with anyio.create_task_group() as group:
                for n in range(100, 250):
                    group.start_soon(long_poll, n)
                with anyio.move_on_after(5):  # the flood is in: all but the calls in flight
                    while len(replies) < 150 - SEAT_CALLS_IN_FLIGHT:  # noqa: ASYNC110
                        await anyio.sleep(0.05)
                async with server.seat(victim) as client:
                    for _ in range(25):
                        with anyio.move_on_after(5), suppress(Exception):
                            await ok(client, "get_state")
                            answered += 1
                group.cancel_scope.cancel()
    assert answered == 25
    assert len(replies) == 150 - SEAT_CALLS_IN_FLIGHT  # the rest answered at once
    assert all("too_many_calls: " in reply for reply in replies if reply), replies[:2]
    assert any(replies)


async def test_long_polls_whose_connections_dropped_hold_no_slot_of_their_seat(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path) as server:
        token = (await server.create_room())["tokens"]["buyer"]  # its seller never comes
        pool = httpx2.Limits(max_connections=None, max_keepalive_connections=None)
        async with httpx2.AsyncClient(verify=tls(), timeout=60, limits=pool) as http:
            session = await open_session(http, server.mcp, token)
            headers = RPC_HEADERS | {
                "Authorization": f"Bearer {token}",
                "Mcp-Session-Id": session,
                "Mcp-Protocol-Version": "2025-11-25",
            }

            def call(n: int, name: str, **arguments: Any) -> dict[str, Any]:
                params = {"name": name, "arguments": arguments}
                return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}

            async def long_poll(n: int) -> None:  # dropped as a killed client drops it
                await http.post(
                    server.mcp, json=call(n, "wait_for_opponent", timeout_s=50), headers=headers
                )

            with anyio.fail_after(30):
                async with anyio.create_task_group() as group:
                    for n in range(10, 10 + SEAT_CALLS_IN_FLIGHT):
                        group.start_soon(long_poll, n)
                    room = next(iter(server.registry.rooms.values()))
                    while room.seats["buyer"].in_flight < SEAT_CALLS_IN_FLIGHT:  # noqa: ASYNC110
                        await anyio.sleep(0.02)
                    group.cancel_scope.cancel()  # their connections close, no cancellation sent
                replies: list[str] = []
                for n in range(100, 120):  # the same seat's client, back: answered, not refused
                    reply = await http.post(server.mcp, json=call(n, "get_state"), headers=headers)
                    replies.append(reply.text)
                    if "too_many_calls" not in reply.text:
                        break
                    await anyio.sleep(0.1)
    assert "too_many_calls" not in replies[-1] and '"negotiation"' in replies[-1], replies[-1]
    assert len(replies) <= 5, replies[0]


# -- Host and Origin on every route ---------------------------------------------------------------


async def test_the_admin_api_and_health_check_refuse_a_foreign_host_or_origin(
    tmp_path: Path,
) -> None:
    admin = {"Authorization": f"Bearer {ADMIN}"}
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        room = (await server.create_room())["room"]
        calls = [
            ("POST", f"{server.url}/admin/rooms"),
            ("GET", f"{server.url}/admin/rooms/{room}"),
            ("GET", f"{server.url}/healthz"),
        ]
        for method, url in calls:
            host = await http.request(method, url, json={}, headers=admin | {"Host": "evil.test"})
            origin = {"Origin": "http://evil.test"}
            cross = await http.request(method, url, json={}, headers=admin | origin)
            assert (host.status_code, cross.status_code) == (421, 403), url
        assert list(server.registry.rooms) == [room]
        allowed = await http.get(f"{server.url}/healthz", headers={"Origin": server.url})
    assert allowed.status_code == 200


async def test_an_origin_or_host_that_only_starts_like_an_allowed_one_is_refused(
    tmp_path: Path,
) -> None:
    admin = {"Authorization": f"Bearer {ADMIN}"}
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        port = server.url.rsplit(":", 1)[1]
        origins = [
            f"http://127.0.0.1:{port}.evil.example",
            f"http://localhost:{port}@evil.example",
            f"http://127.0.0.1:{port}/path",
            "http://127.0.0.1:",
        ]
        hosts = [f"127.0.0.1:{port}.evil.example", f"localhost:{port}@evil.example"]
        for url in (server.mcp, f"{server.url}/admin/rooms", f"{server.url}/healthz"):
            for origin in origins:
                response = await http.post(url, json={}, headers=admin | {"Origin": origin})
                assert response.status_code == 403, (url, origin)
            for host in hosts:
                response = await http.post(url, json={}, headers=admin | {"Host": host})
                assert response.status_code == 421, (url, host)
        assert server.registry.rooms == {}
        allowed = await http.get(f"{server.url}/healthz", headers={"Origin": server.url})
    assert allowed.status_code == 200


# -- slow requests and keep-alive -----------------------------------------------------------------


async def receive_until_closed(stream: anyio.abc.SocketStream, seconds: float) -> bool:
    """Read until the server closes (True) or ``seconds`` pass (False)."""
    with anyio.move_on_after(seconds):
        try:
            while await stream.receive():
                pass
        except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
            pass
        return True
    return False


async def test_a_request_sent_too_slowly_is_cut_off_and_live_calls_go_on(tmp_path: Path) -> None:
    limits = HttpLimits(request_timeout_s=0.5)
    async with http_server(tmp_path, http_limits=limits) as server:
        port = int(server.url.rsplit(":", 1)[1])
        room = await server.create_room(house_seller="accept-any")
        with anyio.fail_after(30):
            async with server.seat(room["tokens"]["buyer"]) as client:
                silent = await anyio.connect_tcp("127.0.0.1", port)
                headers = await anyio.connect_tcp("127.0.0.1", port)
                await headers.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                body = await anyio.connect_tcp("127.0.0.1", port)
                await body.send(
                    b"POST /admin/rooms HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
                )
                long_poll = await ok(client, "wait_for_opponent", timeout_s=2)  # > the deadline
                closed = [await receive_until_closed(s, 5) for s in (silent, headers, body)]
                for stream in (silent, headers, body):
                    await stream.aclose()
                await ok(client, "make_offer", price=100)
    assert closed == [True, True, True]
    assert long_poll["woke"] == "timeout"


async def test_a_stopping_server_cuts_long_polls_after_its_shutdown_grace(tmp_path: Path) -> None:
    """Without a grace, stopping the server waited for every open long poll (up to a minute)."""
    limits = HttpLimits(shutdown_grace_s=0.5)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as outer:
            polled: list[BaseException | None] = []
            async with http_server(tmp_path, http_limits=limits) as server:
                room = await server.create_room()
                started = anyio.Event()

                async def long_poll() -> None:
                    try:
                        async with server.seat(room["tokens"]["buyer"]) as client:
                            started.set()
                            await client.call_tool("wait_for_opponent", {"timeout_s": 60})
                        polled.append(None)
                    except BaseException as exc:  # the cut connection, whatever the client raises
                        polled.append(exc)

                outer.start_soon(long_poll)
                await started.wait()
                await anyio.sleep(0.2)  # the call is in flight
                stopping = anyio.current_time()
            stopped_after = anyio.current_time() - stopping
    assert stopped_after < 10  # the grace, not the poll's 60 s
    assert len(polled) == 1


def test_the_server_keeps_an_idle_connection_longer_than_http_clients_do() -> None:
    config = uvicorn_config(lambda *_: None, host="127.0.0.1", port=1)  # type: ignore[arg-type]
    assert config.timeout_keep_alive > (httpx2.Limits().keepalive_expiry or 0) + 5


@pytest.mark.slow
async def test_an_idle_keep_alive_connection_outlives_the_clients_pool_expiry(
    tmp_path: Path,
) -> None:
    # The client reuses a pooled connection for up to 5 s (httpx); a server closing it sooner
    # races the client's next request on it (ReadError under load).
    expiry = httpx2.Limits().keepalive_expiry or 0
    async with http_server(tmp_path) as server:
        port = int(server.url.rsplit(":", 1)[1])
        with anyio.fail_after(30):
            stream = await anyio.connect_tcp("127.0.0.1", port)
            await stream.send(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            first = await stream.receive()
            closed = await receive_until_closed(stream, expiry + 1)
            await stream.aclose()
    assert first.startswith(b"HTTP/1.1 200")
    assert not closed


async def test_a_kept_alive_connection_starting_its_next_request_is_not_the_oldest_sender(
    tmp_path: Path,
) -> None:
    # A connection that served a request long ago and now sends the next one is the newest
    # sender, not the oldest: measured from its last response it was shed first under a flood,
    # with its request half-received (a real client's ReadError).
    limits = HttpLimits(max_connections=4)
    async with http_server(tmp_path, http_limits=limits) as server:
        port = int(server.url.rsplit(":", 1)[1])
        health = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        with anyio.fail_after(30):
            kept = await anyio.connect_tcp("127.0.0.1", port)
            await kept.send(health)
            first = await kept.receive()
            await anyio.sleep(0.2)  # its last response is now older than any flood connection
            flood = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(2)]
            for stream in flood:
                await stream.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            await kept.send(health[:20])  # the next request, half sent
            await anyio.sleep(0.2)
            flood += [await anyio.connect_tcp("127.0.0.1", port) for _ in range(3)]  # over the cap
            await anyio.sleep(0.2)
            await kept.send(health[20:])
            second = await kept.receive()
            for stream in [kept, *flood]:
                await stream.aclose()
    assert first.startswith(b"HTTP/1.1 200")
    assert second.startswith(b"HTTP/1.1 200")


# -- the connection cap at the usual open-file limit ----------------------------------------------


@contextmanager
def open_files(at_least: int) -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < at_least:
        pytest.skip(f"needs {at_least} open files (hard limit {hard})")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, at_least), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@asynccontextmanager
async def served_with_open_files(tmp_path: Path, limit: int) -> AsyncIterator[str]:
    """``dealroom serve --transport http`` in its own process, limited to ``limit`` files."""
    port = free_port()
    command = [sys.executable, "-c", "import sys; from dealroom.cli import main; sys.exit(main())"]
    command += ["serve", "--transport", "http", "--port", str(port)]
    command += ["--results", str(tmp_path / "results.db")]

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    env = {**os.environ, "DEALROOM_ADMIN_TOKEN": ADMIN}
    process = subprocess.Popen(  # noqa: ASYNC220
        command, env=env, stderr=subprocess.DEVNULL, preexec_fn=limited
    )
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx2.AsyncClient(verify=tls()) as http:
            with anyio.fail_after(30):
                while True:
                    with suppress(httpx2.HTTPError):
                        if (await http.get(f"{url}/healthz")).status_code == 200:
                            break
                    await anyio.sleep(0.05)
        yield url
    finally:
        process.kill()
        process.wait(10)


def half_sent_requests(port: int, count: int) -> list[socket.socket]:
    """``count`` connections, each with a request whose headers never end."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sockets.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            sockets[-1].sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    except OSError:
        for s in sockets:
            s.close()
        raise
    return sockets


async def create_room(url: str, **request: Any) -> dict[str, Any]:
    async with httpx2.AsyncClient(verify=tls(), timeout=10) as http:
        response = await http.post(
            f"{url}/admin/rooms", json=request, headers={"Authorization": f"Bearer {ADMIN}"}
        )
    assert response.status_code == 201, response.text
    return dict(response.json())


@asynccontextmanager
async def seat(url: str, token: str) -> AsyncIterator[Any]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(10.0), verify=tls()) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        yield client


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX open-file limits")
async def test_a_thousand_half_sent_requests_at_1024_open_files_cut_off_no_real_client(
    tmp_path: Path,
) -> None:
    with open_files(4096):
        async with served_with_open_files(tmp_path, 1024) as url:
            port = int(url.rsplit(":", 1)[1])
            live_room = await create_room(url, house_seller="hardliner")
            new_room = await create_room(url, house_seller="hardliner")
            with anyio.fail_after(90):
                async with seat(url, live_room["tokens"]["buyer"]) as live:
                    await ok(live, "get_state")
                    flood = await anyio.to_thread.run_sync(half_sent_requests, port, 1100)
                    try:
                        await ok(live, "make_offer", price=100)
                        live_end = await ok(live, "walk_away")
                        async with seat(url, new_room["tokens"]["buyer"]) as newcomer:
                            await ok(newcomer, "make_offer", price=100)
                            new_end = await ok(newcomer, "walk_away")
                    finally:
                        for s in flood:
                            s.close()
    assert live_end["outcome"]["end_reason"] == "walk_away"
    assert new_end["outcome"]["end_reason"] == "walk_away"

"""The seat proxy (`dealroom seat`) as a stdio host runs it: an unreachable room server and one
that dies mid-call are `upstream_unavailable` tool errors within seconds, after a normal
initialize, and a refused token is `seat_token_refused` for good, said once at start-up; the
proxy never crashes, never hangs and logs one line per failure."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_REQUEST
from mcp_support import ADMIN, free_port, http_server, ok, share_schema_validators, text_of, tls

from dealroom.server.mcp_app import OBSERVATION_URI

pytestmark = pytest.mark.anyio

DEALROOM = str(Path(sys.executable).parent / "dealroom")


@pytest.fixture(autouse=True)
def _shared_validators(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)


@asynccontextmanager
async def proxy(server: str, token: str, stderr: Path) -> AsyncIterator[Client]:
    env = {k: v for k, v in os.environ.items() if k != "DEALROOM_SEAT_TOKEN"}
    env["DEALROOM_SEAT_TOKEN"] = token
    params = StdioServerParameters(command=DEALROOM, args=["seat", "--server", server], env=env)
    with stderr.open("w") as errors:
        async with Client(stdio_client(params, errlog=errors), mode="legacy") as client:
            yield client


async def unavailable(client: Client, tool: str, **arguments: object) -> tuple[str, float]:
    """Call a tool that must fail with upstream_unavailable; (text, seconds it took)."""
    start = time.monotonic()
    result = await client.call_tool(tool, dict(arguments))
    took = time.monotonic() - start
    assert result.is_error, text_of(result)[:200]
    text = text_of(result).removeprefix(f"Error executing tool {tool}: ")
    assert text.startswith("upstream_unavailable: "), text
    return text, took


REFUSED = (
    "seat_token_refused: The room server refused the seat token (HTTP 401). "
    "Start the seat again with a token the room issued."
)


async def test_a_refused_token_is_said_once_at_start_and_refused_for_good(tmp_path: Path) -> None:
    errors = tmp_path / "err.txt"
    async with http_server(tmp_path) as server:
        await server.create_room()
        with anyio.fail_after(60):
            async with proxy(server.url, "not-a-seat-token", errors) as client:
                while "seat_token_refused" not in errors.read_text():  # noqa: ASYNC110 (at start)
                    await anyio.sleep(0.05)
                tools = {t.name for t in (await client.list_tools()).tools}
                first = await client.call_tool("get_state", {})
                again = await client.call_tool("make_offer", {"price": 100})
                reads: list[MCPError] = []
                for read in (client.get_prompt("briefing"), client.read_resource(OBSERVATION_URI)):
                    with pytest.raises(MCPError) as refused:
                        await read
                    reads.append(refused.value)
    assert "get_state" in tools
    assert (first.is_error, again.is_error) == (True, True)
    assert text_of(first) == text_of(again) == REFUSED
    assert [(e.code, e.message) for e in reads] == [(INVALID_REQUEST, REFUSED)] * 2
    assert errors.read_text() == f"dealroom seat: error: {REFUSED}\n"  # said once, and only


async def test_an_unreachable_room_server_is_a_tool_error_within_seconds(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with anyio.fail_after(60):
        async with proxy(url, "some-token", tmp_path / "err.txt") as client:
            text, took = await unavailable(client, "get_state")
            with pytest.raises(Exception, match="upstream_unavailable"):
                await client.get_prompt("briefing")
    assert "cannot connect" in text and took < 15
    assert "Traceback" not in (tmp_path / "err.txt").read_text()


@asynccontextmanager
async def room_server_process(results: Path) -> AsyncIterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    command = [DEALROOM, "serve", "--transport", "http", "--port", str(port)]
    command += ["--results", str(results)]
    env = {**os.environ, "DEALROOM_ADMIN_TOKEN": ADMIN}
    process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)  # noqa: ASYNC220
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx2.AsyncClient(verify=tls()) as http:
            with anyio.fail_after(30):
                while True:
                    with suppress(httpx2.HTTPError):
                        if (await http.get(f"{url}/healthz")).status_code == 200:
                            break
                    await anyio.sleep(0.05)
        yield url, process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)


@pytest.mark.slow
async def test_a_room_server_that_dies_mid_call_is_a_tool_error_and_the_proxy_goes_on(
    tmp_path: Path,
) -> None:
    async with room_server_process(tmp_path / "r.db") as (url, process):
        async with httpx2.AsyncClient(verify=tls()) as http:
            created = await http.post(
                f"{url}/admin/rooms",
                json={},  # two remote seats: the seller never acts, so the buyer's wait blocks
                headers={"Authorization": f"Bearer {ADMIN}"},
            )
        token = created.json()["tokens"]["buyer"]
        with anyio.fail_after(90):
            async with proxy(url, token, tmp_path / "err.txt") as client:
                await ok(client, "get_state")
                results: list[tuple[str, float]] = []

                async def long_poll() -> None:
                    results.append(await unavailable(client, "wait_for_opponent", timeout_s=60))

                async with anyio.create_task_group() as group:
                    group.start_soon(long_poll)
                    await anyio.sleep(1)  # the long-poll is in flight upstream
                    process.send_signal(signal.SIGKILL)
                _, after_took = await unavailable(client, "get_state")
    died_took = results[0][1]
    assert died_took < 30, "the proxy noticed the dead server within seconds"
    assert after_took < 15
    log = (tmp_path / "err.txt").read_text()
    assert "Traceback" not in log
    assert len(log.splitlines()) < 12, log

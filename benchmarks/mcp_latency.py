"""MCP tool-call latency: in memory, over loopback HTTP, and with many concurrent HTTP sessions.

    python benchmarks/mcp_latency.py [--calls 2000] [--sessions 200] [--seconds 20] [--rates 0.25,1]

Every figure is client-observed wall time per ``tools/call`` (an agent's mix: make_offer,
wait_for_opponent, get_state; against a house agent, virtual clock), in milliseconds. The HTTP
server runs in its own process (``dealroom serve --transport http``). The Python MCP client
re-validates every structured result against the tool's output schema with jsonschema; that
client-side cost is reported separately ("+ client validation"), the other rows measure the
round trip without it.

The concurrent figures: ``--sessions`` clients, each in its own room, each calling at random
(Poisson) times at each of ``--rates`` calls per second, as agents that think between calls do
(an LLM agent makes a call every few seconds); a closed-loop row (every client calling back to
back) shows the saturation throughput. The load generator is a minimal raw JSON-RPC client and
shares the machine's CPUs with the server.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from dealroom.agents import resolve
from dealroom.protocol.generator import scenario_at
from dealroom.server.mcp_app import build_app
from dealroom.server.room import Room
from dealroom.server.room_settings import House, RoomSettings
from dealroom.server.seat import RoomSeat

ADMIN = "bench-admin-token"
_validate = ClientSession.validate_tool_result


def client_validation(on: bool) -> None:
    """Turn the Python client's per-result jsonschema validation on or off."""

    async def skip(self: ClientSession, name: str, result: Any) -> None:
        del self, name, result

    ClientSession.validate_tool_result = _validate if on else skip  # type: ignore[method-assign]


Figures = dict[str, list[float]]
"""Latency samples (seconds) by row label."""


def quantiles_ms(samples: list[float]) -> tuple[float, float]:
    """(p50, p99) in milliseconds."""
    q = statistics.quantiles([s * 1000 for s in samples], n=100, method="inclusive")
    return q[49], q[98]


def percentiles(samples: list[float]) -> str:
    p50, p99 = quantiles_ms(samples)
    return f"p50 {p50:7.2f} ms   p99 {p99:7.2f} ms   (n={len(samples)})"


def pick(rng: random.Random, price: float) -> tuple[str, dict[str, Any]]:
    """An agent's loop: offer, wait for the answer, now and then read the whole state."""
    draw = rng.random()
    if draw < 0.4:
        return "make_offer", {"price": price}
    if draw < 0.8:
        return "wait_for_opponent", {"timeout_s": 5}
    return "get_state", {}


async def timed_calls(client: Client, calls: int, rng: random.Random) -> list[float]:
    """``calls`` tool calls: mostly get_state, some make_offer; new negotiations as they end."""
    samples: list[float] = []
    price = 100.0
    for _ in range(calls):
        tool, args = pick(rng, price)
        start = time.perf_counter()
        result = await client.call_tool(tool, args)
        samples.append(time.perf_counter() - start)
        structured = result.structured_content or {}
        over = structured.get("outcome") or (structured.get("observation") or {}).get("outcome")
        if result.is_error or over:
            await client.call_tool("new_negotiation", {})
        price += 1
    return samples


async def in_memory(calls: int) -> Figures:
    figures: Figures = {}
    scenarios: Callable[[int], Any] = lambda i: scenario_at(0, i, "mid")  # noqa: E731
    room = Room(
        "bench",
        RoomSettings(
            scenarios=scenarios, occupants={"seller": House("hardliner", resolve("hardliner"))}
        ),
    )
    seat = RoomSeat(room, "buyer")
    for validate in (False, True):
        client_validation(validate)
        async with Client(build_app(lambda: seat)) as client:
            await timed_calls(client, 50, random.Random(1))  # warm up
            samples = await timed_calls(client, calls, random.Random(2))
        label = "in memory" + (" + client validation" if validate else "")
        print(f"  {label:<46} {percentiles(samples)}")
        figures[label] = samples
    return figures


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def http_server(*flags: str) -> AsyncIterator[str]:
    """`dealroom serve --transport http [flags]` in its own process; yields its root URL."""
    port = free_port()
    results = Path(tempfile.mkdtemp()) / "bench.db"
    env = {**os.environ, "DEALROOM_ADMIN_TOKEN": ADMIN}
    command = [str(Path(sys.executable).parent / "dealroom"), "serve", "--transport", "http"]
    command += ["--port", str(port), "--results", str(results), *flags]
    command += ["--max-negotiations-per-minute", "0"]  # a benchmark's series run flat out
    process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)  # noqa: ASYNC220
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx2.AsyncClient() as http:
            for _ in range(600):  # workers of a cluster take a few seconds to start
                try:
                    if (await http.get(f"{url}/healthz")).status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                await anyio.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(10)


async def create_rooms(http: httpx2.AsyncClient, url: str, count: int) -> list[str]:
    tokens = []
    for i in range(count):
        response = await http.post(
            f"{url}/admin/rooms",
            json={"index": i, "house_seller": "hardliner"},
            headers={"Authorization": f"Bearer {ADMIN}"},
        )
        response.raise_for_status()
        tokens.append(response.json()["tokens"]["buyer"])
    return tokens


@asynccontextmanager
async def seat(
    url: str, token: str, http_factory: Callable[..., httpx2.AsyncClient]
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        http_factory(headers=headers) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        yield client


async def over_http(calls: int, sessions: int, seconds: float, rates: list[float]) -> Figures:
    figures: Figures = {}
    tls = __import__("ssl").create_default_context()

    def factory(**kwargs: Any) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(verify=tls, timeout=httpx2.Timeout(60.0), **kwargs)

    async with http_server() as url, factory() as admin:
        tokens = await create_rooms(admin, url, sessions + 1)
        for validate in (False, True):
            client_validation(validate)
            async with seat(url, tokens[-1], factory) as client:
                await timed_calls(client, 50, random.Random(1))
                samples = await timed_calls(client, calls // 2, random.Random(2))
            label = "loopback HTTP, 1 session" + (" + client validation" if validate else "")
            print(f"  {label:<46} {percentiles(samples)}")
            figures[label] = samples

        client_validation(False)
        # The load generator's own garbage-collection pauses would show up as server latency.
        gc.collect()
        gc.freeze()
        gc.set_threshold(50_000, 20, 20)
        for rate in [*rates, None]:
            samples: list[float] = []
            duration = 5.0 if rate is None else seconds
            errors = await concurrent(
                url, tokens[:sessions], factory, samples, duration, rate or 0.0
            )
            mode = "closed loop" if rate is None else f"{rate:g} call/s each"
            label = f"loopback HTTP, {sessions} sessions, {mode}"
            rate_seen = len(samples) / duration
            print(
                f"  {label:<46} {percentiles(samples)}   {rate_seen:,.0f} calls/s   "
                f"{errors} failed calls"
            )
            figures[label] = samples
    return figures


class RawSeat:
    """A minimal MCP client (2026-07-28: one JSON-RPC POST per call), so that the load
    generator's own CPU does not dominate what is measured."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self.http = http
        self.url = f"{url}/mcp"
        self.next_id = 0

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "tools/call",
            "params": {
                "name": name,
                "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        }
        headers = {
            "Accept": "application/json, text/event-stream",
            "Mcp-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": name,
        }
        response = await self.http.post(self.url, json=body, headers=headers)
        response.raise_for_status()
        result: dict[str, Any] = _message(response)["result"]
        return result


class BadReply(Exception):
    """A 2xx reply that held no JSON-RPC message (counted as a failed call)."""


def _message(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message of a reply: a JSON body, or the last ``data:`` line of an event
    stream (the server may answer a call as a stream)."""
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = data[-1] if data else ""
    try:
        message: dict[str, Any] = json.loads(text)
    except ValueError:
        raise BadReply(
            f"no JSON-RPC message in a {response.status_code} reply: {text[:80]!r}"
        ) from None
    return message


async def concurrent(
    url: str,
    tokens: list[str],
    factory: Callable[..., httpx2.AsyncClient],
    samples: list[float],
    duration: float,
    rate: float,
) -> int:
    """Every session calls at Poisson times at ``rate`` per second (0: back to back); the
    number of calls that failed (a connection error, or a reply with no JSON-RPC message:
    counted, then the session goes on)."""
    ready = anyio.Event()
    connected = [0]
    errors = [0]

    async def run(index: int, token: str) -> None:
        rng = random.Random(index)
        async with factory(headers={"Authorization": f"Bearer {token}"}) as http:
            seat = RawSeat(http, url)
            await seat.call("get_state", {})
            connected[0] += 1
            if connected[0] == len(tokens):
                ready.set()
            await ready.wait()
            end = time.perf_counter() + duration
            price = 100.0
            while time.perf_counter() < end:
                if rate > 0:
                    await anyio.sleep(rng.expovariate(rate))
                tool, args = pick(rng, price)
                start = time.perf_counter()
                try:
                    result = await seat.call(tool, args)
                except (httpx2.TransportError, BadReply):
                    errors[0] += 1
                    continue
                samples.append(time.perf_counter() - start)
                structured = result.get("structuredContent") or {}
                observation = structured.get("observation") or {}
                if result.get("isError") or structured.get("outcome") or observation.get("outcome"):
                    await seat.call("new_negotiation", {})
                price += 1

    async with anyio.create_task_group() as group:
        for index, token in enumerate(tokens):
            group.start_soon(run, index, token)
    return errors[0]


async def main(args: argparse.Namespace) -> Figures:
    mix = "make_offer 40%, wait_for_opponent 40%, get_state 20%"
    print(f"MCP tool-call latency ({mix}), {os.cpu_count()} CPUs")
    figures = await in_memory(args.calls)
    rates = [float(r) for r in args.rates.split(",") if r]
    figures |= await over_http(args.calls, args.sessions, args.seconds, rates)
    return figures


def parser() -> argparse.ArgumentParser:
    """The command line (``run_all`` parses its own defaults with it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument(
        "--rates", default="0.25,0.5,1", help="calls per second per session, comma-separated"
    )
    return parser


def cli(wrap: Callable[[argparse.Namespace], Awaitable[Any]] = main) -> None:
    anyio.run(wrap, parser().parse_args())


if __name__ == "__main__":
    cli()

"""The wire's edges on both transports: lines that are not JSON, unknown or mis-called prompts,
the server's version, and SIGINT, against real `dealroom serve` processes and loopback HTTP."""

from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from mcp_support import http_server, tls

pytestmark = pytest.mark.anyio

VERSION = importlib.metadata.version("dealroom")
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
BAD_PROMPTS = [
    ({"name": "no-such-prompt"}, "unknown prompt"),
    ({"name": "briefing", "arguments": {"role": "seller"}}, "takes no arguments"),
    ({"name": "briefing", "arguments": {"x": "1", "y": "2"}}, "takes no arguments"),
]


class Wire:
    """JSON-RPC lines to and from a stdio server process."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.lines = TextReceiveStream(process.stdout)
        self.buffer = ""

    async def send(self, line: str) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(line.encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        while "\n" not in self.buffer:
            self.buffer += await self.lines.receive()
        line, self.buffer = self.buffer.split("\n", 1)
        return dict(json.loads(line))


async def test_stdio_answers_bad_lines_and_prompts_with_codes_and_stops_on_sigint(
    tmp_path: Path,
) -> None:
    code = "import sys; from dealroom.cli import main; sys.exit(main())"
    command = [sys.executable, "-c", code, "--log-level", "INFO", "serve"]
    command += ["--results", str(tmp_path / "r.db")]
    stderr = tmp_path / "stderr.txt"
    with stderr.open("wb") as errors, anyio.fail_after(60):
        async with await anyio.open_process(command, stderr=errors, env=dict(os.environ)) as proc:
            wire = Wire(proc)
            await wire.send(json.dumps(INITIALIZE))
            info = (await wire.receive())["result"]["serverInfo"]
            await wire.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            await wire.send("this is not JSON")
            parse = await wire.receive()
            await wire.send('{"jsonrpc": "2.0", "id": 2, "method": "ping"')  # cut short
            cut = await wire.receive()
            prompts = []
            for number, (params, _) in enumerate(BAD_PROMPTS, start=10):
                request = {"jsonrpc": "2.0", "id": number, "method": "prompts/get"}
                await wire.send(json.dumps(request | {"params": params}))
                prompts.append(await wire.receive())
            await wire.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
            pong = await wire.receive()
            proc.send_signal(signal.SIGINT)  # stdin stays open
            with anyio.fail_after(15):
                returncode = await proc.wait()
    assert info == {"name": "dealroom", "version": VERSION}
    assert parse["id"] is None and parse["error"]["code"] == -32700
    assert cut["id"] is None and cut["error"]["code"] == -32700
    for answer, (_, words) in zip(prompts, BAD_PROMPTS, strict=True):
        assert answer["error"]["code"] == -32602 and words in answer["error"]["message"]
    assert pong == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert returncode == 0
    log = stderr.read_text()
    assert "Traceback" not in log
    assert log.count("prompt refused") == len(BAD_PROMPTS)


async def test_stdio_answers_json_nested_too_deep_with_a_parse_error_and_goes_on(
    tmp_path: Path,
) -> None:
    code = "import sys; from dealroom.cli import main; sys.exit(main())"
    command = [sys.executable, "-c", code, "serve", "--results", str(tmp_path / "r.db")]
    stderr = tmp_path / "stderr.txt"
    answers: dict[int, dict[str, Any]] = {}
    with stderr.open("wb") as errors, anyio.fail_after(60):
        async with await anyio.open_process(command, stderr=errors, env=dict(os.environ)) as proc:
            wire = Wire(proc)
            await wire.send(json.dumps(INITIALIZE))
            await wire.receive()
            await wire.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            for depth in (1_000, 100_000):
                await wire.send("[" * depth + "]" * depth)
                answers[depth] = await wire.receive()
            deep = {"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"_meta": {}}}
            nested: Any = {}
            for _ in range(300):  # JSON that parses, nested deeper than a message ever is
                nested = {"a": nested}
            deep["params"]["_meta"]["x"] = nested
            await wire.send(json.dumps(deep))
            await wire.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
            pong = await wire.receive()
            while pong.get("id") != 3:
                pong = await wire.receive()
            proc.send_signal(signal.SIGINT)
            with anyio.fail_after(15):
                returncode = await proc.wait()
    for answer in answers.values():
        assert answer["id"] is None and answer["error"]["code"] == -32700
    assert pong == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert returncode == 0
    assert "Traceback" not in stderr.read_text()


async def test_http_reports_the_package_version_and_refuses_bad_prompts_as_invalid_params(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        token = (await server.create_room())["tokens"]["buyer"]
        headers = {
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {token}",
        }
        opened = await http.post(server.mcp, json=INITIALIZE, headers=headers)
        info = _sse_json(opened.text)["result"]["serverInfo"]
        session = headers | {
            "Mcp-Session-Id": opened.headers["mcp-session-id"],
            "Mcp-Protocol-Version": "2025-11-25",
        }
        answers = []
        for params, _ in BAD_PROMPTS:
            request = {"jsonrpc": "2.0", "id": 5, "method": "prompts/get", "params": params}
            answers.append(
                _sse_json((await http.post(server.mcp, json=request, headers=session)).text)
            )
    assert info["version"] == VERSION
    assert [a["error"]["code"] for a in answers] == [-32602] * len(BAD_PROMPTS)


def _sse_json(body: str) -> dict[str, Any]:
    """The JSON-RPC message of a response (an SSE event or plain JSON)."""
    data = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
    return dict(json.loads(data[-1] if data else body))


# -- what a refusal costs --------------------------------------------------------------------------


async def test_a_refused_action_changes_nothing_but_spends_its_clock_time() -> None:
    from mcp_support import client_for, house_room, ok, refused

    room = house_room(opponent="hardliner", seed=1)
    async with client_for(room, "buyer") as client:
        before = (await ok(client, "get_state"))["observation"]
        code = await refused(client, "accept", offer_id="o99")
        after = (await ok(client, "get_state"))["observation"]
    assert code.startswith("offer_not_found: ")
    assert after["live_offers"] == before["live_offers"]
    assert [e for e in after["events"] if e["by"] == "buyer"] == []
    assert after["now"] > before["now"], "the refused accept's clock time (1 s) passed"

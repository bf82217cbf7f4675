"""Every snippet of docs/agents.md works as written (models answered by a loopback endpoint)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters

from coverage_support import coverage_env
from fake_openai import Reply, Text, ToolCalls, negotiator, serve
from room_server import ADMIN, room_server_thread

DOC = Path(__file__).resolve().parents[1] / "docs" / "agents.md"
BIN = Path(sys.executable).parent


def snippet(name: str) -> str:
    """The code block after ``<!-- snippet: NAME -->``."""
    text = DOC.read_text(encoding="utf-8")
    found = re.search(rf"<!-- snippet: {name} -->\n```\w+\n(.*?)```", text, re.DOTALL)
    assert found, f"no snippet {name!r} in {DOC}"
    return found.group(1)


def env(fake_url: str) -> dict[str, str]:
    """The environment a user would have: dealroom on PATH, an API key, the endpoint."""
    return {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": os.environ.get("HOME", "/tmp"),
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": fake_url,
        "XDG_DATA_HOME": os.environ.get("XDG_DATA_HOME", ""),
        # The Agents SDK uploads traces to OpenAI by default: never from a test.
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        **coverage_env(),
    }


def run_python(code: str, environment: dict[str, str], tmp_path: Path) -> str:
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Unclosed" not in done.stderr, done.stderr[-3000:]  # no leaked HTTP session
    return done.stdout


def agent_loop(request: dict[str, Any]) -> Reply:
    """One long Agents SDK run: look, offer, accept the first counter-offer, stop at the end."""
    messages = request["messages"]
    outputs = [m for m in messages if m.get("role") == "tool"]
    if not outputs:
        return ToolCalls((("get_state", {}),))
    content = outputs[-1].get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content)
    last = str(content)
    if re.search(r"^outcome: ", last, re.MULTILINE):
        return Text("The negotiation is over.")
    live = next((x for x in last.splitlines() if x.startswith("live offers: ")), "")
    theirs = re.findall(r"seller (o\d+) at", live)
    if theirs and len(outputs) > 2:
        return ToolCalls((("accept", {"offer_id": theirs[-1]}),))
    if len(outputs) == 1:
        return ToolCalls((("make_offer", {"price": 5000}),))
    return ToolCalls((("wait_for_opponent", {"timeout_s": 10}),))


def test_the_python_match_snippet_runs(tmp_path: Path) -> None:
    with serve(negotiator()) as fake:
        out = run_python(snippet("python-match"), env(fake.base_url), tmp_path)
    assert "Outcome:" in out
    assert re.search(r"^\d+ model calls$", out, re.MULTILINE)


@pytest.mark.slow
def test_the_agents_sdk_snippet_runs(tmp_path: Path) -> None:
    # The snippet uses the SDK's default provider; the loopback endpoint speaks chat completions.
    code = "import agents\nagents.set_default_openai_api('chat_completions')\n"
    code += snippet("agents-sdk")
    environment = env("")
    with serve(agent_loop) as fake:
        environment["OPENAI_BASE_URL"] = fake.base_url
        environment["XDG_DATA_HOME"] = str(tmp_path)
        out = run_python(code, environment, tmp_path)
    assert out.strip() == "The negotiation is over."
    assert any(
        "You are the buyer" in str(m.get("content"))
        for m in fake.requests[0]["messages"]
        if m["role"] == "user"
    )


def test_the_raw_mcp_snippet_runs(tmp_path: Path) -> None:
    environment = env("")
    environment["XDG_DATA_HOME"] = str(tmp_path)
    out = run_python(snippet("raw-mcp"), environment, tmp_path)
    outcome = ast.literal_eval(out.strip())  # a printed dict
    assert outcome["status"] in ("deal", "no_deal")


def _server(config: dict[str, Any]) -> StdioServerParameters:
    (entry,) = config["mcpServers"].values()
    return StdioServerParameters(
        command=str(BIN / entry["command"]), args=entry["args"], env=entry.get("env")
    )


@pytest.mark.anyio
async def test_the_claude_desktop_house_entry_starts_a_seat(tmp_path: Path) -> None:
    server = _server(json.loads(snippet("claude-house")))
    server.env = {"XDG_DATA_HOME": str(tmp_path)}
    async with Client(server) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        state = await client.call_tool("get_state", {})
    assert {"make_offer", "wait_for_opponent", "new_negotiation"} <= tools
    assert state.structured_content is not None
    assert state.structured_content["observation"]["role"] == "buyer"


def test_the_claude_desktop_room_entry_sits_in_a_room(tmp_path: Path) -> None:
    config = json.loads(snippet("claude-room"))
    with room_server_thread(tmp_path) as room_server:
        response = httpx2.post(
            f"{room_server.url}/admin/rooms",
            json={"house_seller": "boulware"},
            headers={"Authorization": f"Bearer {ADMIN}"},
            timeout=30,
        )
        token = response.json()["tokens"]["buyer"]
        (entry,) = config["mcpServers"].values()
        entry["env"]["DEALROOM_SEAT_TOKEN"] = token
        entry["args"][entry["args"].index("--server") + 1] = room_server.url
        server = _server(config)
        import anyio

        async def seat() -> dict[str, Any]:
            async with Client(server) as client:
                result = await client.call_tool("get_state", {})
                assert result.structured_content is not None
                return result.structured_content

        state = anyio.run(seat)
    assert state["observation"]["role"] == "buyer"

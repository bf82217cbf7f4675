"""Every snippet of docs/agents.md works as written (models answered by a loopback endpoint)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters

from coverage_support import coverage_env
from dealroom.store.results import ResultsStore
from fake_openai import Reply, Text, ToolCalls, negotiator, serve
from room_server import ADMIN, room_server_thread

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "agents.md"
AGENTS_SDK = "examples/agents_sdk_seat.py"
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
    return run_file(script, environment, tmp_path)


def run_file(script: Path, environment: dict[str, str], tmp_path: Path) -> str:
    """Run ``script`` as a user would (``python script``) in ``tmp_path``; its stdout."""
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


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return str(content)


def stops_early(request: dict[str, Any]) -> Reply:
    """A model as the Agents SDK meets it: it looks, offers, then ends its first run with text
    ("Waiting for the other side.") while the negotiation goes on; told to go on, it waits and
    accepts the first counter-offer, and says so once the negotiation is over."""
    messages = request["messages"]
    outputs = [m for m in messages if m.get("role") == "tool"]
    if messages[-1]["role"] == "user":
        return ToolCalls(
            (("wait_for_opponent", {"timeout_s": 10}),) if outputs else (("get_state", {}),)
        )
    last = _text(outputs[-1])
    if re.search(r"^outcome: ", last, re.MULTILINE):
        return Text("The negotiation is over.")
    if len(outputs) == 1:
        return ToolCalls((("make_offer", {"price": 5000}),))
    if len(outputs) == 2:
        return Text("Waiting for the other side.")
    live = next((x for x in last.splitlines() if x.startswith("live offers: ")), "")
    theirs = re.findall(r"seller (o\d+) at", live)
    if theirs:
        return ToolCalls((("accept", {"offer_id": theirs[-1]}),))
    return ToolCalls((("wait_for_opponent", {"timeout_s": 10}),))


def test_the_python_match_snippet_runs(tmp_path: Path) -> None:
    with serve(negotiator()) as fake:
        out = run_python(snippet("python-match"), env(fake.base_url), tmp_path)
    assert "Outcome:" in out
    assert re.search(r"^\d+ model calls$", out, re.MULTILINE)


def test_the_agents_sdk_section_shows_its_example_file_whole() -> None:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(rf"<!-- file: {AGENTS_SDK} -->\n```python\n(.*?)```", text, re.DOTALL)
    assert found, f"docs/agents.md shows {AGENTS_SDK}"
    assert found.group(1) == (ROOT / AGENTS_SDK).read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_agents_sdk_example_file_plays_to_an_outcome_that_is_stored(tmp_path: Path) -> None:
    # The SDK starts the server with a few variables of ours only (HOME, PATH, ...), not
    # XDG_DATA_HOME: the store is the default one under HOME.
    environment = env("")
    environment["HOME"] = str(tmp_path)
    with serve(stops_early) as fake:
        environment["OPENAI_BASE_URL"] = fake.base_url
        out = run_file(ROOT / AGENTS_SDK, environment, tmp_path)
    printed = ast.literal_eval(out.strip())  # the seat's outcome, a printed dict
    assert printed["status"] == "deal"
    assert any(
        "You are the buyer" in _text(m) for m in fake.requests[0]["messages"] if m["role"] == "user"
    )
    # The model stopped once with text mid-negotiation; the example ran it again.
    runs = {sum(m["role"] == "user" for m in r["messages"]) for r in fake.requests}
    assert runs == {1, 2}
    store_path = tmp_path / ".local" / "share" / "dealroom" / "results.db"
    with ResultsStore(store_path, create=False) as store:
        (stored,) = store.iter()
    assert stored.record.outcome.status == "deal"
    assert stored.record.outcome.price == Decimal(str(printed["price"]))


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

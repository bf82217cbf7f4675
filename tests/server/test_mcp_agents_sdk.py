"""The OpenAI Agents SDK plays a seat through the MCP server, driven by a scripted model."""

from __future__ import annotations

import os
import sys
from decimal import Decimal
from pathlib import Path

import anyio
import pytest
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
from agents.testing import ScriptedModel, assistant_message, function_call
from mcp_support import http_server, scenario, secret_of

from agents import Agent, RunConfig, Runner
from dealroom.store.results import ResultsStore

pytestmark = pytest.mark.anyio

NO_TRACING = RunConfig(tracing_disabled=True)


def tool_outputs(model: ScriptedModel) -> list[str]:
    """The tool results the model was shown (the MCP text content: the one model-facing text,
    never the structured JSON), in order."""
    outputs = []
    for item in model.calls[-1].input:
        if not (isinstance(item, dict) and item.get("type") == "function_call_output"):
            continue
        output = item["output"]
        text = output if isinstance(output, str) else "".join(p["text"] for p in output)
        outputs.append(text)
    return outputs


async def test_an_agents_sdk_agent_closes_a_deal_in_an_http_room(tmp_path: Path) -> None:
    async with http_server(tmp_path) as server:
        room = await server.create_room(secret=secret_of(3).hex(), house_seller="accept-any")
        cost = scenario(secret_of(3)).seller_cost
        price = float(cost + Decimal("10.00"))
        model = ScriptedModel(
            [
                [function_call("get_state", {}, call_id="c1")],
                [function_call("make_offer", {"price": price, "message": "Deal?"}, call_id="c2")],
                [function_call("wait_for_opponent", {"timeout_s": 10}, call_id="c3")],
                [assistant_message("The seller accepted.")],
            ]
        )
        params = {
            "url": server.mcp,
            "headers": {"Authorization": f"Bearer {room['tokens']['buyer']}"},
            "timeout": 30,
        }
        with anyio.fail_after(30):
            async with MCPServerStreamableHttp(
                params,  # type: ignore[arg-type]
                client_session_timeout_seconds=30,
                cache_tools_list=True,
            ) as mcp:
                agent = Agent(name="buyer", instructions="Buy.", model=model, mcp_servers=[mcp])
                result = await Runner.run(agent, "Negotiate.", max_turns=6, run_config=NO_TRACING)
        stored = server.registry.writer.store.get(f"{room['room']}/1")  # type: ignore[union-attr]
    model.assert_complete()
    assert result.final_output == "The seller accepted."
    waited = tool_outputs(model)[-1]
    assert f"outcome: deal at ${price:,.2f}" in waited, waited
    assert not waited.startswith("{")
    assert stored is not None and stored.record.outcome.price == Decimal(str(price))


async def test_an_agents_sdk_agent_plays_a_house_game_over_stdio(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            [function_call("get_state", {}, call_id="c1")],
            [function_call("make_offer", {"price": 1}, call_id="c2")],
            [function_call("accept", {"offer_id": "nope"}, call_id="c3")],
            [function_call("walk_away", {"message": "Too far apart."}, call_id="c4")],
            [assistant_message("I walked away.")],
        ]
    )
    env = {k: os.environ[k] for k in ("HOME", "PATH", "USER") if k in os.environ}
    results = tmp_path / "results.db"
    params = {
        "command": str(Path(sys.executable).parent / "dealroom"),
        "args": ["serve", "--role", "buyer", "--opponent", "boulware", "--results", str(results)],
        "env": env,
    }
    with anyio.fail_after(40):
        async with MCPServerStdio(
            params,  # type: ignore[arg-type]
            client_session_timeout_seconds=30,
            cache_tools_list=True,
        ) as mcp:
            tools = {tool.name for tool in await mcp.list_tools()}
            agent = Agent(name="buyer", instructions="Buy.", model=model, mcp_servers=[mcp])
            result = await Runner.run(agent, "Negotiate.", max_turns=8, run_config=NO_TRACING)
    model.assert_complete()
    assert result.final_output == "I walked away."
    assert "new_negotiation" in tools
    outputs = tool_outputs(model)
    assert outputs[2].startswith("offer_not_found: "), outputs[2]
    assert "outcome: no deal (walk_away)" in outputs[3], outputs[3]
    with ResultsStore(results) as store:
        (row,) = store.iter()
    assert row.record.outcome.end_reason == "walk_away" and row.record.seller == "boulware"

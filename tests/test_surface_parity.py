"""Issue 10's parity test: the text a model reads is the same bytes on every surface.

For 50 scenarios and three opponents, one fixed script of tool calls (offers, messages, waits,
get_state, an accept) is played through the TRL environment's methods, over MCP in memory,
through the direct session in-process players use (``SeatClient.local``: no protocol) and from the
built-in LLM seat's view (ScriptedModel, both over MCP and through ``SeatClient.local``); over MCP
stdio for a few of them (a subprocess each). Every tool result's text, and the briefing, must
be equal byte for byte, and the briefing is the first user message of the LLM seat as of TRL's
rollout. The direct session must also list the same tools and return the same whole results
(structured content and error flags) as the MCP session.
"""

from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from agents.testing import ScriptedModel, function_call
from mcp import Client, StdioServerParameters
from mcp.types import TextContent

from dealroom.agents.llm import LLMPlayer, LLMSettings, RetryPolicy
from dealroom.client.seat import SeatClient
from dealroom.play.players import SeatContext
from dealroom.play.registry import resolve
from dealroom.protocol import DEFAULT_RULES
from dealroom.protocol.generator import dumps_jsonl, scenario_at
from dealroom.server.mcp_app import DirectSession, build_app
from dealroom.server.room import Room
from dealroom.server.room_settings import House, RoomSettings
from dealroom.server.seat import RoomSeat
from dealroom.training.trl import BargainToolEnv

pytestmark = pytest.mark.anyio

OPPONENTS = ("boulware", "conceder", "tit_for_tat")
SCENARIOS = range(50)
Call = tuple[str, dict[str, Any]]


def script(env: BargainToolEnv, index: int, opponent: str) -> tuple[str, list[Call], list[str]]:
    """The fixed script, played in the TRL environment: (briefing, calls, texts)."""
    scenario = scenario_at(0, index, "mid")
    low = round(float(scenario.list_price) * 0.55, 2)
    briefing = env.reset(index=index, opponent=opponent)
    calls: list[Call] = [
        ("get_state", {}),
        ("make_offer", {"price": low, "message": "Cash today."}),
        ("wait_for_opponent", {"timeout_s": 10}),
        ("send_message", {"text": "Can you do better?"}),
        ("wait_for_opponent", {"timeout_s": 5}),
        ("make_offer", {"price": True}),  # refused: prices are numbers
        ("make_offer", {"price": round(low * 1.2, 2)}),
        ("wait_for_opponent", {"timeout_s": 20}),
        ("get_state", {}),
    ]
    texts = [getattr(env, name)(**args) for name, args in calls]
    theirs = re.findall(r"live offers: seller (o\d+) at", texts[-1])
    last: Call = ("accept", {"offer_id": theirs[0]}) if theirs else ("walk_away", {})
    calls.append(last)
    texts.append(getattr(env, last[0])(**last[1]))
    return briefing, calls, texts


def room(index: int, opponent: str) -> Room:
    return Room(
        "parity",
        RoomSettings(
            scenarios=lambda n: scenario_at(0, index + n, "mid"),
            occupants={"seller": House(opponent, resolve(opponent))},
            rules=DEFAULT_RULES,
        ),
    )


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


async def over_mcp(client: Client | DirectSession, calls: list[Call]) -> tuple[str, list[str]]:
    briefing, results = await whole_results(client, calls)
    return briefing, [text_of(result) for result in results]


async def whole_results(client: Client | DirectSession, calls: list[Call]) -> tuple[str, list[Any]]:
    prompt = await client.get_prompt("briefing")
    briefing = "".join(
        m.content.text for m in prompt.messages if isinstance(m.content, TextContent)
    )
    return briefing, [await client.call_tool(name, args) for name, args in calls]


def dumped(results: list[Any]) -> list[dict[str, Any]]:
    """Whole results as JSON, less the wire's own metadata (the server's name in ``_meta``)."""
    return [result.model_dump(mode="json", exclude={"meta"}) for result in results]


_ids = itertools.count()


async def from_the_llm_seat(
    index: int, opponent: str, calls: list[Call], *, local: bool
) -> tuple[str, list[str]]:
    """The LLM seat plays the script (through the seat's MCP tools, or ``SeatClient.local`` as in
    local matches and tournaments; charged per wake as a remote seat): what its model was
    shown."""
    steps = [[function_call(name, args, call_id=f"p{next(_ids)}")] for name, args in calls]
    model = ScriptedModel(steps)
    the_room = room(index, opponent)
    seat = RoomSeat(the_room, "buyer")
    player = LLMPlayer(
        model,
        name="llm:scripted",
        settings=LLMSettings(retry=RetryPolicy(attempts=1, timeout_s=10)),
    )
    chosen = (
        SeatClient.local(seat)
        if local
        else SeatClient.memory(build_app(lambda: seat, series=False))
    )
    async with chosen as client_seat:
        await player.play(client_seat, SeatContext(role="buyer", rules=DEFAULT_RULES))
    model.assert_complete()
    inputs = model.calls[-1].input
    first = inputs[0]
    assert isinstance(first, dict) and first["role"] == "user"
    outputs = [
        item["output"]
        for item in inputs
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    return str(first["content"]), [o if isinstance(o, str) else str(o) for o in outputs]


@pytest.mark.parametrize("opponent", OPPONENTS)
@pytest.mark.slow
async def test_trl_mcp_and_the_llm_seat_read_the_same_bytes(opponent: str) -> None:
    for index in SCENARIOS:
        briefing, calls, texts = script(BargainToolEnv(), index, opponent)
        the_room = room(index, opponent)
        seat = RoomSeat(the_room, "buyer")
        app = build_app(lambda seat=seat: seat, series=the_room.series.available)
        async with Client(app) as client:
            mcp_briefing, mcp_results = await whole_results(client, calls)
            mcp_tools = await client.list_tools()
        mcp_texts = [text_of(result) for result in mcp_results]
        assert mcp_briefing == briefing, (opponent, index)
        assert mcp_texts == texts, (opponent, index)
        direct_room = room(index, opponent)
        direct = DirectSession(RoomSeat(direct_room, "buyer"), series=direct_room.series.available)
        direct_briefing, direct_results = await whole_results(direct, calls)
        assert direct_briefing == briefing, (opponent, index)
        assert dumped(direct_results) == dumped(mcp_results), (opponent, index)
        assert dumped((await direct.list_tools()).tools) == dumped(mcp_tools.tools)
        if index % 10 == 0:  # the LLM seat runs a model loop per negotiation: every 10th
            for local in (False, True):
                llm_briefing, llm_texts = await from_the_llm_seat(
                    index, opponent, calls, local=local
                )
                assert llm_briefing == briefing, (opponent, index, local)
                # The model saw every result in order, but the last: the seat's loop ends once
                # a result ends the negotiation, without another model call.
                assert llm_texts == texts[: len(llm_texts)] and len(llm_texts) >= len(texts) - 1
        assert any(t.startswith("invalid_arguments: price") for t in texts)
        assert texts[-1].splitlines()[0] in ("ok",) or texts[-1].startswith(
            ("negotiation_closed", "offer_")
        ), texts[-1]


@pytest.mark.parametrize("opponent", OPPONENTS)
@pytest.mark.slow
async def test_over_stdio_too(opponent: str, tmp_path: Path) -> None:
    briefing, calls, texts = script(BargainToolEnv(), 0, opponent)
    dealroom = str(Path(sys.executable).parent / "dealroom")
    # Served play draws under a secret; the public scenario the script plays comes as a file.
    file = tmp_path / "scenario.jsonl"
    file.write_text(dumps_jsonl([scenario_at(0, 0, "mid")]), encoding="utf-8")
    args = ["serve", "--role", "buyer", "--opponent", opponent, "--scenario", str(file)]
    results = ["--results", str(tmp_path / "r.db")]
    params = StdioServerParameters(command=dealroom, args=[*args, *results])
    async with Client(params) as client:
        stdio_briefing, stdio_texts = await over_mcp(client, calls)
    assert stdio_briefing == briefing
    assert stdio_texts == texts

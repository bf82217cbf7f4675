"""A room's seat played in process by a player (an LLM seat: ``house_player``), with a
scripted model: what the room stores of it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from agents.testing import ScriptedModel
from mcp_support import client_for, ok

from dealroom.agents.llm import LLMPlayer, LLMSettings
from dealroom.client.seat import SeatClient
from dealroom.play.players import SeatContext
from dealroom.play.runner import house_player
from dealroom.protocol import Role
from dealroom.protocol.generator import scenario_at
from dealroom.server.room import Room
from dealroom.server.room_settings import RoomSettings, SeatPlayer
from dealroom.store.results import ResultsStore, StoredNegotiation
from dealroom.store.writer import ResultWriter
from room_server import share_schema_validators
from scripted_llm import FAST_RETRY, call

pytestmark = pytest.mark.anyio

SCENARIO = scenario_at(0, 0, "mid")


@pytest.fixture(autouse=True)
def _fast_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)


async def played(model: ScriptedModel, store: ResultsStore) -> StoredNegotiation:
    """One negotiation of the model (seller) against an MCP client that only waits, to the
    row the room stored once the player was done."""
    player = LLMPlayer(model, name="llm:scripted", settings=LLMSettings(retry=FAST_RETRY))
    seat, done = house_player(player), anyio.Event()

    async def play(room: Room, role: Role) -> None:
        try:
            await seat.play(room, role)
        finally:
            done.set()

    room = Room(
        "r",
        RoomSettings(
            scenarios=lambda n: SCENARIO if n == 0 else None,
            occupants={"seller": SeatPlayer(seat.spec, play)},
        ),
        writer=ResultWriter(store),
    )
    with anyio.fail_after(20):
        async with room.playing(), client_for(room, "buyer") as client:
            while (await ok(client, "wait_for_opponent", timeout_s=30))["outcome"] is None:
                pass
            await done.wait()  # its last report comes after the end
    row = store.get("r/1")
    assert row is not None
    return row


async def test_the_stored_conversation_ends_with_the_reply_to_the_ending_call(
    tmp_path: Path,
) -> None:
    model = ScriptedModel([[call("make_offer", {"price": 9000})], [call("walk_away")]])
    with ResultsStore(tmp_path / "r.db") as store:
        row = await played(model, store)
    assert row.record.outcome.end_reason == "walk_away"
    llm = row.extra["players"]["seller"]
    assert llm["tool_calls"] == {"make_offer": 1, "walk_away": 1}
    messages = llm["conversation"]["messages"]
    last_call = messages[-2]["tool_calls"][-1]
    assert last_call["function"]["name"] == "walk_away"
    assert messages[-1]["role"] == "tool"
    assert messages[-1]["tool_call_id"] == last_call["id"]
    assert "walk_away" in messages[-1]["content"] or "ended" in messages[-1]["content"]


class Lingering:
    """Walks away, reports, then does not return: a player the room must not wait for."""

    name = "lingering"

    def __init__(self) -> None:
        self.cancelled = anyio.Event()

    async def play(self, seat: SeatClient, context: SeatContext) -> Mapping[str, Any]:
        assert context.report is not None
        context.report({"said": "before the end"})
        await seat.walk_away()
        try:
            await anyio.sleep_forever()
        finally:
            self.cancelled.set()
        return {"said": "never"}


async def test_a_player_that_does_not_return_after_its_ending_call_is_cancelled_in_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("dealroom.server.room_players.PLAYER_GRACE_S", 0.2)
    player = Lingering()
    with ResultsStore(tmp_path / "r.db") as store:
        room = Room(
            "r",
            RoomSettings(
                scenarios=lambda n: SCENARIO if n == 0 else None,
                occupants={"seller": house_player(player)},
            ),
            writer=ResultWriter(store),
        )
        with anyio.fail_after(20):
            async with room.playing(), client_for(room, "buyer") as client:
                while (await ok(client, "wait_for_opponent", timeout_s=30))["outcome"] is None:
                    pass
                await player.cancelled.wait()  # by the grace, not by leaving the block
        row = store.get("r/1")
    assert row is not None and row.record.outcome.end_reason == "walk_away"
    assert row.extra["players"]["seller"] == {"name": "lingering", "said": "before the end"}

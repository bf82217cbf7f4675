"""Nothing a client can receive carries the other side's private value.

Over many seeds, both roles, several opponents and two-client rooms, every tool result, tool
error, resource, prompt and tool listing a seat receives is searched for the other side's value
(in every way it could be printed) and for the fields of the full, two-sided outcome.
"""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_support import client_for, dumps, house_room, scenario, share_schema_validators

from dealroom.protocol import Role, other
from dealroom.server.mcp_app import MODEL_TOOLS_URI, OBSERVATION_URI, TRANSCRIPT_URI
from dealroom.server.negotiation import RoomLimits
from dealroom.server.room import Room
from dealroom.server.room_settings import RoomSettings
from leaks import leaked

pytestmark = pytest.mark.anyio

OPPONENTS = ["boulware", "conceder", "linear", "hardliner", "zic", "micro", "tit_for_tat"]


@pytest.fixture(autouse=True)
def _shared_validators(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)


class Recorder:
    """A client wrapper keeping everything the seat received."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.received: list[str] = []

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any] | None:
        result = await self.client.call_tool(tool, arguments)
        self.received.append(dumps([c.model_dump() for c in result.content]))
        self.received.append(dumps(result.structured_content))
        return None if result.is_error else result.structured_content

    async def look(self) -> None:
        for uri in (OBSERVATION_URI, TRANSCRIPT_URI, MODEL_TOOLS_URI):
            resource = await self.client.read_resource(uri)
            self.received.append(dumps([c.model_dump() for c in resource.contents]))
        prompt = await self.client.get_prompt("briefing")
        self.received.append(dumps([m.model_dump() for m in prompt.messages]))


async def play_randomly(seat: Recorder, role: Role, rng: random.Random) -> None:
    """Valid and invalid moves, waits and looks, until the negotiation ends (or 40 moves)."""
    state = await seat.call("get_state")
    assert state is not None
    list_price = Decimal(str(state["observation"]["scenario"]["list_price"]))
    for _ in range(40):
        move = rng.choice(["offer", "offer", "wait", "wait", "talk", "bad", "look", "answer"])
        if move == "offer":
            factor = Decimal(str(round(rng.uniform(0.5, 1.3), 3)))
            result = await seat.call("make_offer", price=float(round(list_price * factor, 2)))
        elif move == "wait":
            result = await seat.call("wait_for_opponent", timeout_s=rng.choice([5, 20]))
        elif move == "talk":
            result = await seat.call("send_message", text="What is your best price?")
        elif move == "bad":
            result = await seat.call(rng.choice(["accept", "reject"]), offer_id="o999")
            continue
        elif move == "look":
            await seat.look()
            continue
        else:
            current = await seat.call("get_state")
            assert current is not None
            theirs = [o for o in current["observation"]["live_offers"] if o["by"] != role]
            if not theirs:
                continue
            tool = rng.choice(["accept", "reject"])
            result = await seat.call(tool, offer_id=theirs[0]["offer_id"])
        if result is not None and result.get("outcome") is not None:
            break
    await seat.look()
    await seat.call("get_state")


def check(room: Room, role: Role, seat: Recorder) -> None:
    negotiation = room.current
    value = negotiation.scenario.private_value(other(role))
    public = {getattr(e, "price", None) for e in negotiation.referee.events} - {None}
    public.add(negotiation.scenario.list_price)
    for text in seat.received:
        found = leaked(text, value, public)  # type: ignore[arg-type]
        assert found is None, f"{role} received {found!r} in {text[:300]}"


@pytest.mark.parametrize("tier", ["mid", "high"])
@pytest.mark.parametrize("role", ["buyer", "seller"])
async def test_no_seat_ever_receives_the_other_sides_value(tier: str, role: Role) -> None:
    for seed in range(10):
        opponent = OPPONENTS[seed % len(OPPONENTS)]
        room = house_room(role=role, opponent=opponent, seed=seed, tier=tier)
        async with client_for(room, role) as client:
            tools = await client.list_tools()
            seat = Recorder(client)
            seat.received.append(dumps([t.model_dump() for t in tools.tools]))
            await seat.look()
            await play_randomly(seat, role, random.Random(seed))
        check(room, role, seat)


async def _play_pair(room: Room, seed: int) -> dict[Role, Recorder]:
    seats: dict[Role, Recorder] = {}

    async def play(role: Role) -> None:
        async with client_for(room, role) as client:
            seats[role] = Recorder(client)
            await play_randomly(seats[role], role, random.Random(seed * 2 + (role == "buyer")))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(play, "buyer")
            group.start_soon(play, "seller")
    return seats


async def test_neither_client_of_a_two_client_room_receives_the_other_sides_value() -> None:
    for seed in range(4):
        room = Room(
            "pair",
            RoomSettings(
                scenarios=lambda i, seed=seed: scenario(seed, tier="high", index=i),
                limits=RoomLimits(idle_s=0.05, max_wait_s=0.2),
            ),
        )
        for role, seat in (await _play_pair(room, seed)).items():
            check(room, role, seat)


def test_the_leak_check_would_catch_a_leak() -> None:
    value = Decimal("4321.50")
    assert leaked('{"price": 4321.5}', value, set()) == "4321.5"
    assert leaked("their cost is $4,321.50", value, set()) is not None
    assert leaked('{"gains": 1}', Decimal("1.25"), set()) == "gains"
    assert leaked('{"price": 14321.5}', value, set()) is None
    assert leaked('{"price": 4321.5}', value, {value}) is None

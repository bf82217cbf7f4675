"""The SeatClient, scripted players through MCP, and the match runners."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from dealroom.agents import resolve
from dealroom.client.seat import SeatClient, SeatError
from dealroom.engine.match import play
from dealroom.play.players import PlayerFailed, ScriptedPlayer, SeatContext
from dealroom.play.remote import play_remote_match
from dealroom.play.runner import play_match, seat_app
from dealroom.protocol import (
    DEFAULT_RULES,
    Accept,
    ActionResult,
    Decision,
    ErrorCode,
    MakeOffer,
    NegotiationEnded,
    RoomRequest,
    SeatState,
    SendMessage,
    WaitResult,
)
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.secret import Secret
from dealroom.protocol.tools import seat_tools
from dealroom.server.room import Room
from dealroom.server.room_settings import House, RoomSettings
from dealroom.store.results import ResultsStore
from dealroom.testing import ScriptedAgent
from room_server import ADMIN, room_server, share_schema_validators

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _fast_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)


def house_room(opponent: str = "boulware", seed: int = 0) -> Room:
    scenario = scenario_at(seed, 0, "mid")
    return Room(
        "test",
        RoomSettings(
            scenarios=lambda n: scenario if n == 0 else None,
            occupants={"seller": House(opponent, resolve(opponent))},
        ),
    )


class Remote:
    """Keeps a scripted player out of the house seat (it plays through its MCP seat)."""

    def __init__(self, player: ScriptedPlayer) -> None:
        self.player = player
        self.name = player.name

    async def play(self, seat: SeatClient, context: SeatContext) -> Mapping[str, Any]:
        return await self.player.play(seat, context)


def scripted(spec: str) -> ScriptedPlayer:
    return ScriptedPlayer(resolve(spec), spec)


async def test_every_tool_has_a_typed_method_that_returns_its_wire_model() -> None:
    async with SeatClient.memory(seat_app(house_room(), "buyer")) as seat:
        state = await seat.get_state()
        assert isinstance(state, SeatState)
        assert state.observation.role == "buyer"
        offer = await seat.make_offer(Decimal("5000"), message="Let us start here.")
        assert isinstance(offer, ActionResult) and offer.ok
        assert any(e.type == "offer_made" and e.by == "buyer" for e in offer.events)
        said = await seat.send_message("Still there?")
        assert said.ok
        woke = await seat.wait_for_opponent(30)
        assert isinstance(woke, WaitResult)
        theirs = next(o for o in woke.live_offers if o.by == "seller")
        rejected = await seat.reject(theirs.offer_id, message="Too high.")
        assert rejected.ok
        ended = await seat.walk_away()
        assert ended.outcome is not None and ended.outcome.end_reason == "walk_away"
        tools = {tool.name for tool in (await seat.list_tools()).tools}
        assert {tool.name for tool in seat_tools(series=False)} == tools  # two clients: no series


async def test_a_refused_call_raises_the_referees_code_and_changes_nothing() -> None:
    async with SeatClient.memory(seat_app(house_room(), "buyer")) as seat:
        with pytest.raises(SeatError) as refused:
            await seat.accept("o999")
        assert refused.value.code == ErrorCode.OFFER_NOT_FOUND
        with pytest.raises(SeatError) as refused:
            await seat.make_offer(10**9)
        assert refused.value.code == ErrorCode.PRICE_OUT_OF_RANGE
        after = (await seat.get_state()).observation
        assert [e for e in after.events if e.by == "buyer"] == []
        assert after.my_offer is None


async def test_events_yields_every_new_event_until_the_negotiation_ends() -> None:
    async with SeatClient.memory(seat_app(house_room("hardliner"), "buyer")) as seat:
        offer = await seat.make_offer(100)
        seen = [event async for event in seat.events(timeout_s=60)]
        assert isinstance(seen[-1], NegotiationEnded)
        state = await seat.get_state()
        assert (*offer.events, *seen) == state.observation.events


async def test_the_briefing_prompt_names_the_seats_own_value_only() -> None:
    scenario = scenario_at(0, 0, "mid")
    async with SeatClient.memory(seat_app(house_room(), "buyer")) as seat:
        text = await seat.briefing()
    assert f"{scenario.buyer_value:,.2f}" in text
    assert f"{scenario.seller_cost:,.2f}" not in text


@pytest.mark.parametrize(
    ("buyer", "seller", "seed", "remote"),
    [
        ("boulware", "conceder", 0, "buyer"),
        ("linear", "boulware", 1, "seller"),
        ("conceder", "hardliner", 2, "both"),
        ("nice_tft", "micro", 3, "both"),
        ("zic", "tit_for_tat", 4, "buyer"),
    ],
)
async def test_a_scripted_strategy_through_mcp_gets_the_same_record_as_in_process_play(
    buyer: str, seller: str, seed: int, remote: str
) -> None:
    scenario = scenario_at(seed, 0, "mid")
    expected = play(scenario, resolve(buyer), resolve(seller), names=(buyer, seller), seed=seed)
    b, s = scripted(buyer), scripted(seller)
    if remote == "both":
        result = await play_match(scenario, b, s, seed=seed, scripted_as_house=False)
    elif remote == "buyer":
        result = await play_match(scenario, Remote(b), s, seed=seed)
    else:
        result = await play_match(scenario, b, Remote(s), seed=seed)
    assert result.errors == {}
    assert result.record == expected


HELLO = (SendMessage(text="hi"), MakeOffer(price=Decimal(100)), SendMessage(text="ok?"))
BATCHES = (
    Decision(actions=HELLO, wait=4),
    Decision(actions=(Accept(offer_id="o999"), MakeOffer(price=Decimal(9999))), wait=30),
    Decision(actions=(MakeOffer(price=Decimal(110)), MakeOffer(price=Decimal(120))), wait=2),
    Decision(actions=(SendMessage(text="still here"),)),
    Decision(actions=(MakeOffer(price=Decimal(130)),), wait=9),
)


@pytest.mark.parametrize("seller", ["conceder", "micro"])
async def test_batches_refusals_and_news_while_acting_match_in_process_play(
    seller: str,
) -> None:
    def batches(view: Any, rng: Any) -> ScriptedAgent:
        return ScriptedAgent(list(BATCHES))

    scenario = scenario_at(1, 0, "mid")
    expected = play(scenario, batches, resolve(seller), names=("batches", seller), seed=1)
    buyer = ScriptedPlayer(batches, "batches")
    result = await play_match(scenario, Remote(buyer), scripted(seller), seed=1)
    assert result.record == expected
    assert expected.outcome.invalid_actions.buyer == 1


class Crashing:
    name = "crasher"

    async def play(self, seat: SeatClient, context: SeatContext) -> Mapping[str, Any]:
        await seat.make_offer(5000)
        raise PlayerFailed("the model is down", {"model_calls": 3})


class Quitter:
    name = "quitter"

    async def play(self, seat: SeatClient, context: SeatContext) -> Mapping[str, Any]:
        await seat.get_state()
        return {}


class Buggy:
    name = "buggy"

    async def play(self, seat: SeatClient, context: SeatContext) -> Mapping[str, Any]:
        raise RuntimeError("oops")


@pytest.mark.parametrize(
    ("player", "error"),
    [
        (Crashing(), "the model is down"),
        (Quitter(), "the player stopped before the negotiation ended"),
        (Buggy(), "RuntimeError: oops"),
    ],
)
async def test_a_failed_player_walks_away_and_its_error_is_recorded(
    player: Any, error: str, tmp_path: Path
) -> None:
    scenario = scenario_at(0, 0, "mid")
    with ResultsStore(tmp_path / "r.db") as store:
        result = await play_match(scenario, player, scripted("boulware"), store=store, key="k")
        stored = store.get("k")
    outcome = result.record.outcome
    assert (outcome.end_reason, outcome.ended_by) == ("walk_away", "buyer")
    assert result.errors == {"buyer": error}
    assert stored is not None and stored.record == result.record
    assert stored.extra["errors"] == {"buyer": error}
    assert stored.extra["players"]["buyer"]["name"] == player.name


async def test_a_negotiation_is_finished_even_if_both_players_fail() -> None:
    scenario = scenario_at(0, 0, "mid")
    result = await play_match(scenario, Crashing(), Buggy(), cleanup_s=1)
    assert result.record.outcome.end_reason == "walk_away"
    assert set(result.errors) == {"buyer", "seller"}


async def test_a_seat_over_stdio_plays_a_house_negotiation(tmp_path: Path) -> None:
    command = [str(Path(sys.executable).parent / "dealroom"), "serve", "--role", "buyer"]
    command += ["--opponent", "conceder", "--results", str(tmp_path / "r.db")]
    async with SeatClient.stdio(command, read_timeout_s=60) as seat:
        context = SeatContext(role="buyer", rules=DEFAULT_RULES)
        result = await scripted("boulware").play(seat, context)
        state = await seat.get_state()
    assert result["wakes"] > 1
    assert state.observation.outcome is not None
    with ResultsStore(tmp_path / "r.db") as store:
        assert len(store) == 1


async def test_a_seat_over_http_needs_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEALROOM_SEAT_TOKEN", raising=False)
    with pytest.raises(ValueError, match="DEALROOM_SEAT_TOKEN"):
        SeatClient.http("http://127.0.0.1:9/mcp")


async def test_a_scripted_strategy_over_http_gets_the_same_record_as_in_process_play(
    tmp_path: Path,
) -> None:
    secret = Secret(hashlib.sha256(b"client-seat").digest()[:16])
    request = RoomRequest(secret=secret.hex())
    scenario = scenario_at(secret, 0, "mid")
    expected = play(
        scenario, resolve("linear"), resolve("boulware"), names=("linear", "boulware"), seed=secret
    )
    async with room_server(tmp_path) as server:
        result = await play_remote_match(
            server.url,
            Remote(scripted("linear")),
            scripted("boulware"),
            admin_token=ADMIN,
            request=request,
        )
        stored = list(server.store.iter())
    assert result.errors == {}
    assert result.record == expected
    assert len(stored) == 1 and stored[0].record.events == expected.events

"""Every tool, resource, prompt and error code, through an in-memory MCP client (house mode)."""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp_support import (
    acts,
    client_for,
    house_room,
    ok,
    refused,
    scenario,
    scripted,
    share_schema_validators,
    text_of,
)

from benchmark_support import load_benchmark
from dealroom.protocol import (
    DEFAULT_RULES,
    Accept,
    Decision,
    ErrorCode,
    MakeOffer,
    Observation,
    SendMessage,
    SessionErrorCode,
    WalkAway,
    model_seat,
)
from dealroom.protocol.tools import seat_tools
from dealroom.server.mcp_app import (
    INSTRUCTIONS,
    MODEL_TOOLS_URI,
    OBSERVATION_URI,
    TRANSCRIPT_URI,
    DirectSession,
    build_app,
)
from dealroom.server.negotiation import RoomLimits
from dealroom.server.room import Room
from dealroom.server.room_settings import RoomSettings
from dealroom.server.seat import RoomSeat
from dealroom.store.results import ResultsStore

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _shared_validators(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)


TOOLS = {tool.name for tool in seat_tools(series=True)}  # a house seat: a series


def _price(x: float | Decimal) -> float:
    return float(x)


async def test_the_server_offers_exactly_the_negotiation_tools_with_typed_inputs() -> None:
    async with client_for(house_room(), "buyer") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    price = tools["make_offer"].input_schema["properties"]["price"]
    assert price["type"] == "number" and price["exclusiveMinimum"] == 0
    assert "binding" in (tools["make_offer"].description or "")
    assert "cheap talk" in (tools["send_message"].description or "").lower()
    timeout = tools["wait_for_opponent"].input_schema["properties"]["timeout_s"]
    assert timeout["maximum"] == 60 and timeout["default"] == 20
    for tool in tools.values():
        assert tool.output_schema is not None, tool.name
        assert "role" not in tool.input_schema.get("properties", {}), "the seat is never an input"


async def test_the_tool_list_stays_small_with_every_output_schema_kept() -> None:
    async with client_for(house_room(), "buyer") as client:
        listed = await client.list_tools()
    wire = listed.model_dump_json(by_alias=True, exclude_none=True)
    assert len(wire.encode()) <= 16_000, len(wire)  # 15,009 with the items' schemas
    assert all(t.output_schema and t.output_schema["type"] == "object" for t in listed.tools)
    assert "$defs" not in wire
    titles = {t.name: (t.output_schema or {})["title"] for t in listed.tools}
    assert (titles["accept"], titles["wait_for_opponent"], titles["get_state"]) == (
        "ActionResult",
        "WaitResult",
        "SeatState",
    )


async def test_get_state_shows_the_seat_its_own_value_and_the_public_scenario() -> None:
    room = house_room(role="seller", seed=3)
    async with client_for(room, "seller") as client:
        state = await ok(client, "get_state")
    observation = Observation.model_validate(state["observation"])
    assert observation.role == "seller"
    assert observation.private_value == room.current.scenario.seller_cost
    assert observation.now == 0 and observation.time_left == 120
    assert state["negotiation"] == 1 and state["results"] == [] and state["clock"] == "virtual"
    assert state["can_start_next"] is False


async def test_make_offer_takes_effect_at_thinking_plus_cost_and_returns_the_unseen_events() -> (
    None
):
    room = house_room(opponent=acts(MakeOffer(price=Decimal("1500.00"))))
    async with client_for(room, "buyer") as client:
        result = await ok(client, "make_offer", price=900, message="Cash today.")
    assert result["ok"] is True
    # The house seller (first mover) acts at 0 + 1 (thinking) + 5 (offer); so does the client.
    made = [(e["by"], e["t"], e["price"], e["message"]) for e in result["events"]]
    assert made == [("seller", 6.0, 1500.0, None), ("buyer", 6.0, 900.0, "Cash today.")]
    assert {o["by"] for o in result["live_offers"]} == {"buyer", "seller"}
    assert result["now"] == 6.0 and result["time_left"] == 114.0
    assert "o1" in result["hint"]


async def test_a_second_action_without_a_wait_pays_no_thinking_time() -> None:
    async with client_for(house_room(opponent=scripted()), "buyer") as client:
        first = await ok(client, "send_message", text="Hello.")
        second = await ok(client, "make_offer", price=700)
    assert first["events"][0]["t"] == 4.0  # 1 thinking + 3 message
    assert second["events"][0]["t"] == 9.0  # + 5 offer, no thinking


async def test_accept_closes_the_deal_and_reports_only_the_seats_own_outcome(
    tmp_path: Path,
) -> None:
    with ResultsStore(tmp_path / "r.db") as store:
        room = house_room(opponent=acts(MakeOffer(price=Decimal("800.00"))), store=store)
        async with client_for(room, "buyer") as client:
            await ok(client, "wait_for_opponent", timeout_s=10)
            result = await ok(client, "accept", offer_id="o1")
            assert store.get("room-test/1") is not None, "recorded before the call returned"
    outcome = result["outcome"]
    assert outcome["status"] == "deal" and outcome["price"] == 800.0
    value = room.current.scenario.buyer_value
    assert Decimal(str(outcome["surplus"])) == value - Decimal("800.00")
    assert set(outcome) == {"status", "end_reason", "price", "time", "surplus"}
    assert result["events"][-1]["type"] == "negotiation_ended"


async def test_reject_turns_their_offer_down_and_tells_them() -> None:
    room = house_room(opponent=acts(MakeOffer(price=Decimal("1500.00"))))
    async with client_for(room, "buyer") as client:
        await ok(client, "wait_for_opponent")
        result = await ok(client, "reject", offer_id="o1", message="Too high.")
    rejected = result["events"][-1]
    assert rejected["type"] == "offer_rejected" and rejected["message"] == "Too high."
    assert result["live_offers"] == []


async def test_send_message_is_delivered_as_cheap_talk() -> None:
    room = house_room(opponent=scripted())
    async with client_for(room, "buyer") as client:
        result = await ok(client, "send_message", text="My budget is tight.")
    assert result["events"][0]["type"] == "message_sent"
    assert room.current.referee.live_offers() == ()


async def test_walk_away_ends_the_negotiation_without_a_deal() -> None:
    async with client_for(house_room(opponent=scripted()), "buyer") as client:
        result = await ok(client, "walk_away", message="No thanks.")
    assert result["outcome"]["status"] == "no_deal"
    assert result["outcome"]["end_reason"] == "walk_away"
    assert result["outcome"]["surplus"] == 0


async def test_wait_for_opponent_returns_the_news_as_soon_as_the_house_moves() -> None:
    house = scripted(Decision(wait=30), Decision(actions=(SendMessage(text="Still there?"),)))
    async with client_for(house_room(opponent=house), "buyer") as client:
        result = await ok(client, "wait_for_opponent", timeout_s=60)
    # The house wakes at 0, sleeps 1 + 30, then says something 1 + 3 later.
    assert result["woke"] == "news"
    assert [(e["type"], e["t"]) for e in result["events"]] == [("message_sent", 35.0)]
    assert result["now"] == 35.0


async def test_wait_for_opponent_times_out_on_the_virtual_clock() -> None:
    async with client_for(house_room(opponent=scripted()), "buyer") as client:
        result = await ok(client, "wait_for_opponent", timeout_s=15)
        again = await ok(client, "wait_for_opponent", timeout_s=15)
    assert (result["woke"], result["now"], result["events"]) == ("timeout", 15.0, [])
    assert again["now"] == 30.0


async def test_waiting_past_the_deadline_ends_the_negotiation() -> None:
    room = house_room(opponent=scripted(), deadline=30)
    async with client_for(room, "buyer") as client:
        first = await ok(client, "wait_for_opponent", timeout_s=20)
        second = await ok(client, "wait_for_opponent", timeout_s=20)
    assert first["woke"] == "timeout"
    assert second["woke"] == "ended" and second["outcome"]["end_reason"] == "deadline"


async def test_an_action_overtaken_by_the_end_reports_what_happened() -> None:
    # The house sleeps; the client's second offer would take effect after the deadline.
    house = scripted(Decision(wait=None))
    room = house_room(opponent=house, deadline=8)
    async with client_for(room, "buyer") as client:
        result = await ok(client, "make_offer", price=700)  # due at 6
        late = await ok(client, "make_offer", price=720)  # due at 11 > deadline 8
    assert result["ok"] is True
    assert late["ok"] is False and late["error"]["code"] == "deadline_passed"
    assert late["outcome"]["end_reason"] == "deadline"


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("accept", {"offer_id": "o99"}, ErrorCode.OFFER_NOT_FOUND),
        ("accept", {"offer_id": "o2"}, ErrorCode.OWN_OFFER),
        ("reject", {"offer_id": "o1", "message": "x" * 2001}, ErrorCode.MESSAGE_TOO_LONG),
        ("make_offer", {"price": 1e300}, ErrorCode.PRICE_OUT_OF_RANGE),
        ("make_offer", {"price": 10_000_000}, ErrorCode.PRICE_OUT_OF_RANGE),
        ("send_message", {"text": "   "}, ErrorCode.MESSAGE_EMPTY),
        ("walk_away", {"message": "y" * 2001}, ErrorCode.MESSAGE_TOO_LONG),
    ],
)
async def test_a_refused_action_is_a_tool_error_with_the_referees_code_and_changes_nothing(
    tool: str, arguments: dict[str, object], code: ErrorCode
) -> None:
    room = house_room(opponent=acts(MakeOffer(price=Decimal("1500.00"))))
    async with client_for(room, "buyer") as client:
        await ok(client, "make_offer", price=700)
        before = room.current.referee.events, room.current.referee.live_offers()
        text = await refused(client, tool, **arguments)
        after = room.current.referee.events, room.current.referee.live_offers()
    assert text.startswith(f"{code}: ")
    assert text.count(".") >= 2, "the referee's sentence plus a hint"
    assert before == after
    assert room.current.referee.invalid_count("buyer") == 1


async def test_accepting_an_offer_that_is_no_longer_live_is_refused_with_offer_not_live() -> None:
    house = acts(MakeOffer(price=Decimal("1500.00")), MakeOffer(price=Decimal("1400.00")), wait=2)
    async with client_for(house_room(opponent=house), "buyer") as client:
        await ok(client, "wait_for_opponent")
        await ok(client, "wait_for_opponent")
        text = await refused(client, "accept", offer_id="o1")
    assert text.startswith("offer_not_live: ")


async def test_acting_after_seeing_the_end_is_refused_with_negotiation_closed() -> None:
    async with client_for(house_room(opponent=scripted()), "buyer") as client:
        await ok(client, "walk_away")
        text = await refused(client, "make_offer", price=100)
    assert text.startswith("negotiation_closed: ")


async def test_the_invalid_action_that_reaches_the_limit_forfeits() -> None:
    room = house_room(opponent=scripted())
    async with client_for(room, "buyer") as client:
        for _ in range(9):
            await refused(client, "accept", offer_id="nope")
        text = await refused(client, "accept", offer_id="nope")
        state = await ok(client, "get_state")
    assert "forfeited" in text
    assert state["observation"]["outcome"]["end_reason"] == "forfeit"


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("make_offer", {"price": -5}),
        ("make_offer", {"price": 0}),
        ("make_offer", {"price": "NaN"}),
        ("make_offer", {"price": "abc"}),
        ("make_offer", {"price": True}),
        ("make_offer", {"price": "1e3"}),
        ("make_offer", {"price": "Infinity"}),
        ("make_offer", {"price": [1]}),
        ("make_offer", {"price": 900, "prize": 1}),
        ("make_offer", {"price": 900, "message": 5}),
        ("make_offer", {}),
        ("accept", {}),
        ("accept", {"offer_id": ""}),
        ("wait_for_opponent", {"timeout_s": 61}),
        ("wait_for_opponent", {"timeout_s": -1}),
    ],
)
async def test_bad_arguments_are_a_clear_validation_error_and_cost_nothing(
    tool: str, arguments: dict[str, object]
) -> None:
    room = house_room(opponent=scripted())
    async with client_for(room, "buyer") as client:
        text = await refused(client, tool, **arguments)
    assert text.startswith("invalid_arguments: "), text
    assert "validation error" not in text and "pydantic" not in text and "http" not in text
    assert text.endswith("."), text
    assert room.current.referee.invalid_count("buyer") == 0
    assert room.current.referee.events == ()
    assert room.current.sched.remote("buyer").ready_at == 0


@pytest.mark.parametrize("series", [True, False])
async def test_an_unknown_tool_is_refused_in_one_coded_line_naming_the_tools_there_are(
    series: bool,
) -> None:
    room = house_room(opponent=scripted())
    seat = RoomSeat(room, "buyer")
    async with Client(build_app(lambda: seat, series=series)) as client:
        listed = [t.name for t in (await client.list_tools()).tools]
        text = await refused(client, "nope", price=1)
    direct = await DirectSession(seat, series=series).call_tool("nope", {"price": 1})
    assert text == f"unknown_tool: There is no tool 'nope'. Use one of {', '.join(listed)}."
    assert ("new_negotiation" in text) is series
    assert (text_of(direct), direct.is_error) == (text, True)
    assert room.current.referee.events == ()


async def test_new_negotiation_is_refused_while_one_runs_then_starts_the_next() -> None:
    room = house_room(opponent=scripted(), seed=4)
    async with client_for(room, "buyer") as client:
        text = await refused(client, "new_negotiation")
        await ok(client, "walk_away")
        state = await ok(client, "new_negotiation")
    assert text.startswith(f"{SessionErrorCode.NEGOTIATION_RUNNING}: ")
    assert state["negotiation"] == 2
    assert [r["outcome"]["end_reason"] for r in state["results"]] == ["walk_away"]
    assert state["observation"]["scenario"]["id"] == scenario(4, index=1).id
    assert state["observation"]["events"] == []


async def test_a_series_ends_when_the_scenario_list_is_exhausted() -> None:
    only = scenario(2)
    room = house_room(opponent=scripted(), scenarios=lambda i: only if i == 0 else None)
    async with client_for(room, "buyer") as client:
        await ok(client, "walk_away")
        text = await refused(client, "new_negotiation")
    assert text.startswith(f"{SessionErrorCode.SERIES_OVER}: ")


async def test_a_room_of_two_clients_refuses_new_negotiation() -> None:
    room = Room(
        "two",
        RoomSettings(scenarios=lambda i: scenario(1, index=i), limits=RoomLimits(idle_s=0.05)),
    )
    async with client_for(room, "buyer") as client:
        await ok(client, "walk_away")
        text = await refused(client, "new_negotiation")
    assert text.startswith(f"{SessionErrorCode.SERIES_UNAVAILABLE}: ")


async def test_the_results_of_the_series_add_up_in_get_state() -> None:
    house = scripted(Decision(wait=None), Decision(actions=(Accept(offer_id="o1"),)))
    room = house_room(role="seller", opponent=house, seed=5)
    async with client_for(room, "seller") as client:
        cost = Decimal(str((await ok(client, "get_state"))["observation"]["private_value"]))
        await ok(client, "make_offer", price=_price(cost + 100))
        await ok(client, "wait_for_opponent")
        state = await ok(client, "get_state")
    assert state["results"][0]["outcome"]["status"] == "deal"
    assert Decimal(str(state["total_surplus"])) == Decimal("100.00")
    assert state["can_start_next"] is True


async def test_the_observation_resource_is_the_seats_own_view() -> None:
    room = house_room(role="seller", opponent=acts(MakeOffer(price=Decimal("500.00"))))
    async with client_for(room, "seller") as client:
        await ok(client, "wait_for_opponent")
        resource = await client.read_resource(OBSERVATION_URI)
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
    assert listed == {OBSERVATION_URI, TRANSCRIPT_URI, MODEL_TOOLS_URI}
    text = resource.contents[0].text  # type: ignore[union-attr]
    observation = Observation.model_validate(json.loads(text))
    assert observation.role == "seller"
    assert observation.private_value == room.current.scenario.seller_cost
    assert [e.type for e in observation.events] == ["offer_made"]


async def test_the_transcript_resource_lists_every_event_from_the_seats_side() -> None:
    room = house_room(opponent=acts(SendMessage(text="Hi!"), WalkAway()))
    async with client_for(room, "buyer") as client:
        await ok(client, "make_offer", price=600, message="Hello")
        await ok(client, "wait_for_opponent")
        resource = await client.read_resource(TRANSCRIPT_URI)
    text = resource.contents[0].text  # type: ignore[union-attr]
    assert 'seller said: "Hi!"' in text
    assert 'you offered $600.00 (o1): "Hello"' in text
    assert "seller walked away" in text and "Your result: no_deal" in text


async def test_the_model_tools_resource_is_the_one_model_seats_tools() -> None:
    """What a harness running its own model loop offers the model: ``model_seat.tools`` under
    the room's rules (not the MCP listing's schemas), byte for byte."""
    rules = DEFAULT_RULES.model_copy(update={"max_message_chars": 77})
    room = house_room(opponent="boulware", rules=rules)
    async with client_for(room, "buyer") as client:
        resource = await client.read_resource(MODEL_TOOLS_URI)
        listed = await client.list_tools()
    text = resource.contents[0].text  # type: ignore[union-attr]
    assert text == json.dumps(model_seat.tools(rules))
    assert text != json.dumps(model_seat.tools(DEFAULT_RULES))  # rendered from the room's rules
    assert [t["function"]["name"] for t in json.loads(text)] == sorted(
        t.name for t in listed.tools if t.name != "new_negotiation"
    )


async def test_the_briefing_prompt_tells_the_seat_everything_it_needs() -> None:
    room = house_room(role="buyer", seed=7)
    s = room.current.scenario
    async with client_for(room, "buyer") as client:
        prompts = (await client.list_prompts()).prompts
        prompt = await client.get_prompt("briefing")
    assert [p.name for p in prompts] == ["briefing"]
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert "You are the buyer" in text
    assert s.item.name in text and f"{s.buyer_value:,.2f}" in text
    assert f"runs for {s.deadline:g} s" in text
    for tool in ("make_offer", "accept", "wait_for_opponent", "get_state"):
        assert tool in text
    # The series is the server's, not the negotiation's: it is in the server's instructions.
    assert "new_negotiation" not in text and "new_negotiation" in INSTRUCTIONS
    assert "surplus" in text and "virtual" in text
    assert f"{s.seller_cost:,.2f}" not in text


async def test_a_cancelled_wait_call_corrupts_nothing() -> None:
    room = Room(
        "two", RoomSettings(scenarios=lambda i: scenario(1, index=i), limits=RoomLimits(idle_s=0.3))
    )
    negotiation = room.current
    async with client_for(room, "buyer") as buyer, client_for(room, "seller") as seller:
        await ok(seller, "get_state")  # the seller is here, and thinking
        with anyio.move_on_after(0.1) as scope:  # the client gives up: the handler is cancelled
            await buyer.call_tool("wait_for_opponent", {"timeout_s": 20})
        assert scope.cancelled_caught
        assert negotiation.sched.remote("buyer").state == "waiting"  # still asleep on the clock
        offer = await ok(seller, "make_offer", price=5000)
        with anyio.fail_after(10):
            update = await ok(buyer, "wait_for_opponent", timeout_s=20)
            accepted = await ok(buyer, "accept", offer_id=offer["events"][-1]["offer_id"])
    assert update["woke"] == "news" and [e["type"] for e in update["events"]] == ["offer_made"]
    assert accepted["outcome"]["status"] == "deal"


def test_the_tools_list_reply_fits_its_budget_and_is_the_size_the_docs_show(
    tmp_path: Path,
) -> None:
    """The stdio benchmark's own measurement, on ``dealroom serve`` (the bytes of the reply
    line); the README's and benchmarks/README.md's tables show this figure."""
    startup = load_benchmark("stdio_startup")
    dealroom = str(Path(sys.executable).parent / "dealroom")
    results = str(tmp_path / "r.db")
    run = startup.start(
        [dealroom, "serve", "--role", "buyer", "--opponent", "boulware", "--results", results],
        list_tools=True,
    )
    assert run.tools == len(seat_tools(series=True))
    assert run.tools_bytes <= startup.TARGET_TOOLS_BYTES
    root = Path(__file__).resolve().parents[2]
    for doc in (root / "README.md", root / "benchmarks" / "README.md"):
        row = next(x for x in doc.read_text(encoding="utf-8").splitlines() if "| `tools/list`" in x)
        assert f"{run.tools_bytes:,} bytes" in row, (doc, row)

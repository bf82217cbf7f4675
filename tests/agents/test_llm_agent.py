"""The LLM seat, driven by ``agents.testing.ScriptedModel`` through the server's own MCP tools."""

from __future__ import annotations

import itertools
import re
from decimal import Decimal
from typing import Any

import anyio
import pytest
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message
from agents.tracing import setup as tracing_setup
from agents.tracing.provider import DefaultTraceProvider
from agents.usage import Usage

from dealroom.agents import resolve
from dealroom.agents.llm import LLMPlayer, LLMSettings
from dealroom.client.seat import SeatClient
from dealroom.play.players import ScriptedPlayer
from dealroom.play.runner import MatchResult, play_match, seat_app
from dealroom.protocol import (
    DEFAULT_RULES,
    MessageSent,
    OfferMade,
    Rules,
    ThinkingCosts,
    WalkedAway,
    seat_view,
)
from dealroom.protocol.briefing import briefing
from dealroom.protocol.generator import scenario_at
from dealroom.server.room import House, Room
from room_server import share_schema_validators
from scripted_llm import FAST_RETRY, call
from tracing_support import RecordingProcessor

pytestmark = pytest.mark.anyio

SCENARIO = scenario_at(0, 0, "mid")


@pytest.fixture(autouse=True)
def _fast_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)


async def llm_match(
    model: ScriptedModel,
    *,
    rules: Rules = DEFAULT_RULES,
    seller: str = "boulware",
    **settings: Any,
) -> MatchResult:
    player = LLMPlayer(
        model, name="llm:scripted", settings=LLMSettings(retry=FAST_RETRY, **settings)
    )
    return await play_match(
        SCENARIO, player, ScriptedPlayer(resolve(seller), seller), rules=rules, cleanup_s=10
    )


def buyer_events(result: MatchResult) -> list[Any]:
    return [e for e in result.record.events if e.by == "buyer" and e.type != "negotiation_ended"]


def last_output(model_call: ModelCall) -> str:
    """The last tool output the model was shown."""
    item = model_call.input[-1]
    assert item["type"] == "function_call_output", item
    return str(item["output"])


async def test_tool_calls_reach_the_referee() -> None:
    model = ScriptedModel(
        [
            [call("make_offer", {"price": 4321.5, "message": "Fair?"})],
            [call("walk_away", {"message": "Bye."})],
        ]
    )
    result = await llm_match(model)
    model.assert_complete()
    offer, walked = buyer_events(result)[-2:]
    assert isinstance(offer, OfferMade)
    assert (offer.price, offer.message) == (Decimal("4321.50"), "Fair?")
    assert isinstance(walked, WalkedAway) and walked.message == "Bye."
    assert (result.record.outcome.end_reason, result.record.outcome.ended_by) == (
        "walk_away",
        "buyer",
    )
    data = result.extra["players"]["buyer"]
    assert data["tool_calls"] == {"make_offer": 1, "walk_away": 1}
    assert result.errors == {}


async def test_invalid_calls_produce_model_visible_errors_and_are_counted() -> None:
    model = ScriptedModel(
        [
            [call("make_offer", {"price": 10**9})],
            [call("accept", {"offer_id": "o999"})],
            [call("make_offer", '{"price": 12')],
            [call("teleport", {})],
            [call("make_offer", {"price": -5})],
            [call("walk_away")],
        ]
    )
    result = await llm_match(model, max_turns=10)
    model.assert_complete()
    outputs = [last_output(c) for c in model.calls[1:]]
    assert "price_out_of_range" in outputs[0]
    assert "offer_not_found" in outputs[1]
    assert "not valid JSON" in outputs[2]
    assert "no tool 'teleport'" in outputs[3]
    assert outputs[4].startswith("invalid_arguments: price must be above 0"), outputs[4]
    data = result.extra["players"]["buyer"]
    assert data["refused_tool_calls"] == 3  # two by the referee, one by the tool's schema
    assert data["invalid_tool_calls"] == 2  # never reached the server
    assert len(data["tool_errors"]) == 5
    assert result.record.outcome.invalid_actions.buyer == 2
    assert result.record.outcome.end_reason == "walk_away"


def looker(model_call: ModelCall) -> list[Any]:
    """A model that only ever looks at the state."""
    del model_call
    return [call("get_state")]


async def test_the_per_wake_bound_holds() -> None:
    model = ScriptedModel([ModelStep.respond(looker) for _ in range(200)])
    result = await llm_match(model, max_turns=3)
    wakes = [sum(1 for item in c.input if item.get("role") == "user") for c in model.calls]
    per_wake = [len(list(group)) for _, group in itertools.groupby(wakes)]
    data = result.extra["players"]["buyer"]
    assert len(per_wake) == data["wakes"] >= 3
    assert per_wake[:-1] == [3] * (data["wakes"] - 1)  # the deadline may cut the last one short
    assert 1 <= per_wake[-1] <= 3
    assert data["turn_limit_hits"] >= data["wakes"] - 1
    assert result.record.outcome.end_reason == "deadline"
    assert result.errors == {}


async def test_thinking_is_charged_per_model_call_and_output_token() -> None:
    rules = Rules(thinking=ThinkingCosts(per_model_call=3.0, per_output_token=0.02))
    model = ScriptedModel(
        [
            ModelStep(output=[call("make_offer", {"price": 5000})], usage=_usage(150)),
            ModelStep(output=[call("walk_away")], usage=_usage(50)),
        ]
    )
    result = await llm_match(model, rules=rules)
    offer, walked = buyer_events(result)[-2:]
    assert offer.t == 3.0 + 150 * 0.02 + rules.costs.make_offer
    assert walked.t == offer.t + 3.0 + 50 * 0.02 + rules.costs.walk_away
    data = result.extra["players"]["buyer"]
    assert data["thinking_s"] == 3.0 * 2 + 200 * 0.02
    assert (data["model_calls"], data["output_tokens"]) == (2, 200)


async def test_negative_token_counts_buy_no_thinking_time_and_are_recorded() -> None:
    # An endpoint reporting -1,000 output tokens would otherwise make the charge negative, and
    # a negative charge is dropped: the model call itself would cost nothing.
    rules = Rules(thinking=ThinkingCosts(per_model_call=3.0, per_output_token=0.02))
    model = ScriptedModel(
        [
            ModelStep(output=[call("make_offer", {"price": 5000})], usage=_usage(-1000)),
            ModelStep(output=[call("walk_away")], usage=_usage(50)),
        ]
    )
    result = await llm_match(model, rules=rules)
    offer, walked = buyer_events(result)[-2:]
    assert offer.t == 3.0 + rules.costs.make_offer  # the call's cost, no credit for tokens
    assert walked.t == offer.t + 3.0 + 50 * 0.02 + rules.costs.walk_away
    data = result.extra["players"]["buyer"]
    assert data["thinking_s"] == 3.0 * 2 + 50 * 0.02
    assert (data["output_tokens"], data["bad_token_counts"]) == (50, 1)


def _usage(output_tokens: int) -> Usage:
    return Usage(requests=1, input_tokens=100, output_tokens=output_tokens, total_tokens=100)


async def test_the_calls_of_one_response_run_in_the_models_order() -> None:
    model = ScriptedModel(
        [
            [
                call("send_message", {"text": "one"}),
                call("make_offer", {"price": 5000}),
                call("send_message", {"text": "two"}),
            ],
            [call("walk_away")],
        ]
    )
    result = await llm_match(model)
    said = [
        e.text if isinstance(e, MessageSent) else e.type
        for e in buyer_events(result)
        if e.type != "offer_withdrawn"
    ]
    assert said == ["one", "offer_made", "two", "walked_away"]


async def test_a_transient_model_error_is_retried_and_the_run_goes_on() -> None:
    model = ScriptedModel([TimeoutError(), [call("walk_away")]])
    result = await llm_match(model)
    data = result.extra["players"]["buyer"]
    assert (data["failed_attempts"], data["model_calls"]) == (1, 1)
    assert result.errors == {}
    assert result.record.outcome.end_reason == "walk_away"


@pytest.mark.parametrize(
    ("failures", "attempts", "message"),
    [
        ([TimeoutError()] * 3, 3, "after 3 attempt(s): timed out"),
        ([ValueError("bad request")], 1, "after 1 attempt(s): ValueError: bad request"),
    ],
)
async def test_a_model_that_still_fails_ends_as_a_recorded_walk_away(
    failures: list[Exception], attempts: int, message: str
) -> None:
    model = ScriptedModel([[call("make_offer", {"price": 5000})], *failures])
    result = await llm_match(model)
    model.assert_complete()
    outcome = result.record.outcome
    assert (outcome.end_reason, outcome.ended_by) == ("walk_away", "buyer")
    assert message in result.errors["buyer"]
    data = result.extra["players"]["buyer"]
    assert data["failed_attempts"] == attempts
    assert data["error"] == result.errors["buyer"]
    assert any(isinstance(e, OfferMade) for e in buyer_events(result))


async def test_malformed_calls_in_a_row_end_the_run_as_an_error() -> None:
    model = ScriptedModel([[call("make_offer", "not json")] for _ in range(12)])
    result = await llm_match(model, max_turns=4)
    assert "10 malformed tool calls in a row" in result.errors["buyer"]
    assert result.record.outcome.end_reason == "walk_away"
    assert result.extra["players"]["buyer"]["invalid_tool_calls"] == 10


@pytest.mark.parametrize("price", [True, "1e3"])
async def test_a_model_repeating_a_refused_argument_is_stopped_at_the_limit(price: Any) -> None:
    model = ScriptedModel([[call("make_offer", {"price": price})] for _ in range(40)])
    with anyio.fail_after(30):
        result = await llm_match(model, max_turns=4)
    assert "10 malformed tool calls in a row" in result.errors["buyer"]
    data = result.extra["players"]["buyer"]
    assert data["tool_calls"] == {"make_offer": 10} and data["refused_tool_calls"] == 10
    assert all(e.startswith("invalid_arguments: price") for e in data["tool_errors"])
    assert result.record.outcome.end_reason == "walk_away"


async def test_the_model_reads_the_briefing_and_the_servers_own_tool_schemas() -> None:
    model = ScriptedModel([[call("walk_away")]])
    await llm_match(model)
    first = model.first_call
    assert first is not None
    assert first.system_instructions is not None
    assert first.system_instructions.startswith("How your turns work:")
    # The briefing is the first user message, as on every surface.
    assert first.input[0]["role"] == "user"  # type: ignore[index]
    assert first.input[0]["content"] == briefing(seat_view(SCENARIO, "buyer"))  # type: ignore[index]
    room = Room(
        "r", scenarios=lambda n: SCENARIO, houses={"seller": House("x", resolve("boulware"))}
    )
    async with SeatClient.memory(seat_app(room, "buyer")) as seat:
        listed = {t.name: t for t in (await seat.list_tools()).tools}
    tools = {t.name: t for t in first.tools}
    assert set(tools) == set(listed)
    for name, tool in tools.items():
        assert tool.description == listed[name].description  # type: ignore[attr-defined]
        schema = tool.params_json_schema  # type: ignore[attr-defined]
        assert schema["properties"] == listed[name].input_schema.get("properties", {})
    opening = first.input[0]["content"]
    assert f"{SCENARIO.seller_cost}" not in opening


async def test_each_wake_brings_the_new_events() -> None:
    model = ScriptedModel(
        [
            [call("make_offer", {"price": 5000})],
            [assistant_message("I will wait.")],
            [call("walk_away")],
        ]
    )
    result = await llm_match(model, seller="conceder")
    wake = model.calls[2].input[-1]
    assert wake["role"] == "user"
    text = str(wake["content"])
    update = text.split("wait_for_opponent returned:\n", 1)[1]
    lines = update.splitlines()
    assert lines[0] == "woke: news"
    now = float(re.search(r"^clock: ([0-9.]+) s", update, re.MULTILINE).group(1))  # type: ignore[union-attr]
    shown = [x for x in lines if x.startswith("[")]
    expected = [e for e in result.record.events if e.t > 7.0 and e.t <= now]
    assert len(shown) == len(expected) and expected
    assert all(e.by == "seller" for e in expected)
    assert all("] seller " in x for x in shown)
    assert "{" not in update


@pytest.mark.parametrize("tracing", [False, True])
async def test_tracing_is_off_unless_asked_for(
    tracing: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    collector = RecordingProcessor()
    provider = DefaultTraceProvider()
    provider.set_processors([collector])
    monkeypatch.setattr(tracing_setup, "GLOBAL_TRACE_PROVIDER", provider)
    model = ScriptedModel([[call("walk_away")]])
    await llm_match(model, tracing=tracing)
    assert model.calls[0].tracing.is_disabled() is not tracing
    assert bool(collector.traces) is tracing

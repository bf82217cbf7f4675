"""The LLM seat, driven by ``agents.testing.ScriptedModel`` through the server's own MCP tools."""

from __future__ import annotations

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
from dealroom.play.players import ScriptedPlayer
from dealroom.play.runner import MatchResult, play_match
from dealroom.protocol import (
    DEFAULT_RULES,
    MessageSent,
    OfferMade,
    Rules,
    ThinkingCosts,
    WalkedAway,
    model_seat,
    seat_view,
)
from dealroom.protocol.briefing import briefing
from dealroom.protocol.generator import scenario_at
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
            [call("make_offer", {"prize": 5})],
            [call("walk_away")],
        ]
    )
    result = await llm_match(model)
    model.assert_complete()
    outputs = [last_output(c) for c in model.calls[1:]]
    assert "price_out_of_range" in outputs[0]
    assert "offer_not_found" in outputs[1]
    # Calls that do not fit their tool read what TRL's rollout loop writes for them.
    assert outputs[2].startswith("{'error': ") and "must be a mapping, not str" in outputs[2]
    assert outputs[3] == "{'error': 'Tool teleport not found.'}"
    assert outputs[4].startswith("invalid_arguments: price must be above 0"), outputs[4]
    assert outputs[5] == (
        "{'error': \"ToolMethods.make_offer() got an unexpected keyword argument 'prize'\"}"
    )
    data = result.extra["players"]["buyer"]
    assert data["refused_tool_calls"] == 3  # two by the referee, one by the tool's schema
    assert data["invalid_tool_calls"] == 3  # never reached the server
    assert len(data["tool_errors"]) == 6
    assert result.record.outcome.invalid_actions.buyer == 2
    assert result.record.outcome.end_reason == "walk_away"


def looker(model_call: ModelCall) -> list[Any]:
    """A model that only ever looks at the state."""
    del model_call
    return [call("get_state")]


async def test_the_round_limit_ends_the_seats_play_and_the_reply_past_it_is_not_run() -> None:
    model = ScriptedModel([ModelStep.respond(looker) for _ in range(200)])
    result = await llm_match(model, max_tool_rounds=5)
    data = result.extra["players"]["buyer"]
    assert len(model.calls) == data["model_calls"] == 6
    assert data["tool_calls"] == {"get_state": 5}
    assert (data["turn_limit_hits"], data["ended_by"]) == (1, "limit")
    assert result.record.outcome.end_reason == "deadline"  # the seat sat out, silent
    assert result.errors == {}


async def test_thinking_costs_the_per_wake_time_on_the_first_action_after_a_wait() -> None:
    rules = Rules(thinking=ThinkingCosts(per_wake=3.0))
    model = ScriptedModel(
        [
            ModelStep(output=[call("make_offer", {"price": 5000})], usage=_usage(150)),
            [call("wait_for_opponent", {"timeout_s": 5})],
            ModelStep(output=[call("walk_away")], usage=_usage(50)),
        ]
    )
    result = await llm_match(model, rules=rules, seller="hardliner")
    offer, walked = buyer_events(result)[-2:]
    assert offer.t == 3.0 + rules.costs.make_offer  # tokens cost no clock time
    woke = float(re.search(r"^clock: ([0-9.]+) s", last_output(model.calls[2]), re.M).group(1))  # type: ignore[union-attr]
    assert walked.t == woke + 3.0 + rules.costs.walk_away
    data = result.extra["players"]["buyer"]
    assert (data["model_calls"], data["output_tokens"]) == (3, 200)


async def test_a_reply_without_tool_calls_ends_the_seats_play_without_walking_away() -> None:
    model = ScriptedModel(
        [[call("make_offer", {"price": 9000, "message": "Deal?"})], [assistant_message("Done.")]]
    )
    result = await llm_match(model, seller="conceder")
    model.assert_complete()
    data = result.extra["players"]["buyer"]
    assert (data["model_calls"], data["ended_by"]) == (2, "reply")
    assert result.errors == {}
    assert not any(isinstance(e, WalkedAway) for e in result.record.events)
    # The seat sat out silently; its live offer was still there to accept.
    assert result.record.outcome.status == "deal"
    assert result.record.outcome.price == Decimal("9000.00")


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


@pytest.mark.parametrize("arguments", ["not json", {"price": True}, {"price": "1e3"}])
async def test_a_model_repeating_a_bad_call_is_bounded_by_the_round_limit(arguments: Any) -> None:
    model = ScriptedModel([[call("make_offer", arguments)] for _ in range(40)])
    with anyio.fail_after(30):
        result = await llm_match(model, max_tool_rounds=10)
    data = result.extra["players"]["buyer"]
    assert data["tool_calls"] == {"make_offer": 10} and data["model_calls"] == 11
    assert data["invalid_tool_calls"] + data["refused_tool_calls"] == 10
    assert data["ended_by"] == "limit" and result.errors == {}
    assert result.record.outcome.end_reason == "deadline"


async def test_the_model_reads_the_briefing_alone_and_the_one_seats_tools() -> None:
    model = ScriptedModel([[call("walk_away")]])
    await llm_match(model)
    first = model.first_call
    assert first is not None
    assert first.system_instructions is None  # no system message: the briefing opens
    assert len(first.input) == 1
    assert first.input[0]["role"] == "user"  # type: ignore[index]
    assert first.input[0]["content"] == briefing(seat_view(SCENARIO, "buyer"))  # type: ignore[index]
    expected = model_seat.tools(DEFAULT_RULES)
    assert [t.name for t in first.tools] == [t["function"]["name"] for t in expected]
    for tool, schema in zip(first.tools, expected, strict=True):
        assert tool.description == schema["function"]["description"]  # type: ignore[attr-defined]
        assert tool.params_json_schema == schema["function"]["parameters"]  # type: ignore[attr-defined]
    opening = first.input[0]["content"]
    assert f"{SCENARIO.seller_cost}" not in opening


async def test_the_news_comes_back_as_the_waits_tool_result() -> None:
    model = ScriptedModel(
        [
            [call("make_offer", {"price": 5000})],
            [call("wait_for_opponent", {})],
            [call("walk_away")],
        ]
    )
    result = await llm_match(model, seller="conceder")
    assert all(item.get("role") != "user" for item in model.calls[2].input[1:])
    update = last_output(model.calls[2])
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

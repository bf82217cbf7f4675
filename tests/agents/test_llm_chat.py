"""The lean chat-completions client of ``llm:MODEL``: the same requests as the Agents SDK's chat
model, and its error paths, against the loopback endpoint of ``tests/fake_openai.py``."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from agents.tracing import setup as tracing_setup
from agents.tracing.provider import DefaultTraceProvider

from agents import OpenAIChatCompletionsModel
from dealroom.agents import resolve
from dealroom.agents._llm_chat import ChatCompletions, Conversation, Sampling, parse_reply
from dealroom.agents._llm_model import LLMCallFailed, Meter
from dealroom.agents.llm import LLMPlayer, LLMSettings, RetryPolicy
from dealroom.play.players import ScriptedPlayer
from dealroom.play.runner import MatchResult, play_match
from dealroom.protocol.generator import scenario_at
from fake_openai import (
    FakeOpenAI,
    Garbage,
    Hang,
    Raw,
    Reply,
    Status,
    ToolCalls,
    negotiator,
    scripted,
    serve,
)
from scripted_llm import FAST_RETRY
from tracing_support import RecordingProcessor

pytestmark = pytest.mark.anyio

SCENARIO = scenario_at(0, 0, "mid")
SAMPLING = {"temperature": 0.3, "max_tokens": 256, "reasoning_effort": "low"}
OFFER = ("make_offer", {"price": 5000, "message": "A fair price."})
TOOL = {"type": "function", "function": {"name": "noop", "description": "d", "parameters": {}}}


def completion(message: dict[str, Any], finish: str | None = "stop", **extra: Any) -> Raw:
    """A chat completion of exactly this message."""
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", **extra}
    body["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
    return Raw(body)


def every_case(request: dict[str, Any]) -> Reply:
    """A brain whose replies go through every case of the converters' round trip: text beside
    tool calls, reasoning fields, Gemini's thought signatures, a text-only reply, empty and bad
    arguments, a content-filtered empty reply, a refusal; then it walks away."""
    step = sum(1 for m in request["messages"] if m["role"] == "assistant")
    signed = {
        "id": "sig-1",
        "type": "function",
        "function": {"name": "get_state", "arguments": ""},
        "extra_content": {"google": {"thought_signature": "c2ln"}},
    }
    replies: list[Reply] = [
        ToolCalls(
            (("send_message", {"text": "Hello."}), OFFER, ("wait_for_opponent", {})),
            text="Opening.",
            fields={"reasoning_content": "I think.", "refusal": None},
        ),
        ToolCalls(
            (("get_state", {}),), text="I will look.", fields={"reasoning": "Plain reasoning."}
        ),
        completion({"role": "assistant", "content": None, "tool_calls": [signed]}, "tool_calls"),
        ToolCalls((("make_offer", '{"price": 12'),), fields={"reasoning": "Bad JSON next."}),
        # A reply without tool calls (here a refusal with text) ends the seat's play.
        completion({"role": "assistant", "content": "No.", "refusal": "I cannot."}),
    ]
    return replies[step]


async def one_negotiation(model: Any) -> MatchResult:
    player = LLMPlayer(model, name="llm:x", settings=LLMSettings(retry=FAST_RETRY, **SAMPLING))
    seller = ScriptedPlayer(resolve("boulware"), "boulware")
    try:
        return await play_match(SCENARIO, player, seller, seed=7)
    finally:
        await player.aclose()


def without_strict(tool: dict[str, Any]) -> dict[str, Any]:
    function = {k: v for k, v in tool["function"].items() if k != "strict"}
    return {**tool, "function": function}


def comparable(result: MatchResult) -> dict[str, Any]:
    """The seat's stored data less its wall-clock latencies."""
    data = dict(result.extra["players"]["buyer"])
    return {k: v for k, v in data.items() if not k.startswith("latency")}


@pytest.mark.parametrize("model", ["some-model", "deepseek-reasoner", "gemini-2.5-pro"])
async def test_a_whole_negotiation_sends_what_the_sdk_model_sends(model: str) -> None:
    # The model's name decides what the SDK replays: DeepSeek's reasoning_content, Gemini's
    # thought signatures; a plain reasoning text for every model.
    with serve(every_case) as sdk_endpoint, serve(every_case) as lean_endpoint:
        client = openai.AsyncOpenAI(base_url=sdk_endpoint.base_url, api_key="k", max_retries=0)
        try:
            sdk_model = OpenAIChatCompletionsModel(model=model, openai_client=client)
            sdk = await one_negotiation(sdk_model)
        finally:
            await client.close()  # the SDK model's close leaves its client's connections open
        lean = await one_negotiation(
            ChatCompletions(model, base_url=lean_endpoint.base_url, api_key="k")
        )
    sent, expected = lean_endpoint.requests, sdk_endpoint.requests
    assert len(sent) == len(expected) == 5
    for n, (ours, theirs) in enumerate(zip(sent, expected, strict=True)):
        assert ours.keys() == theirs.keys(), n
        for field in theirs:
            if field == "tools":  # the SDK adds "strict": false; the one form has no such key
                plain = [without_strict(tool) for tool in theirs["tools"]]
                assert ours["tools"] == plain, n
                continue
            assert ours[field] == theirs[field], (n, field)
    assert {k for k in expected[-1] if k not in ("messages", "tools")} == {"model", *SAMPLING}
    assert lean.record == sdk.record
    assert comparable(lean) == comparable(sdk)
    messages = comparable(lean)["conversation"]["messages"]
    assert {"role": "assistant", "refusal": "I cannot.", "content": "No."} in messages
    replayed = [m for m in expected[-1]["messages"] if "reasoning_content" in m or "reasoning" in m]
    assert len(replayed) == (3 if model.startswith("deepseek") else 2)
    assert not any("reasoning" in m or "reasoning_content" in m for m in messages)  # not stored
    signatures = [c for m in expected[-1]["messages"] for c in m.get("tool_calls", [])]
    assert any("extra_content" in c for c in signatures) is model.startswith("gemini")


async def respond(
    fake: FakeOpenAI, policy: RetryPolicy = FAST_RETRY
) -> tuple[Any, Meter, Conversation]:
    """One metered model call on a one-message conversation; what it gave."""
    client = ChatCompletions("m", base_url=fake.base_url, api_key="k", timeout_s=policy.timeout_s)
    chat = client.conversation([TOOL], Sampling())
    chat.add_user("Your turn.")
    meter = Meter(policy)
    try:
        return await meter.respond(chat), meter, chat
    except LLMCallFailed as exc:
        return exc, meter, chat
    finally:
        await client.close()
        assert client.closed


async def test_a_429_is_retried_and_the_reply_joins_the_conversation_once() -> None:
    with serve(scripted([Status(429)], then=ToolCalls((OFFER,)))) as fake:
        reply, meter, chat = await respond(fake)
    assert [call.name for call in reply.tool_calls] == ["make_offer"]
    assert (meter.usage.failed_attempts, meter.usage.model_calls) == (1, 1)
    assert (meter.usage.input_tokens, meter.usage.output_tokens) == (11, 7)
    assert fake.requests[0] == fake.requests[1]  # the retry sent the same request
    assert [m["role"] for m in chat.messages()] == ["user", "assistant"]


@pytest.mark.parametrize(
    ("replies", "attempts", "message"),
    [
        ([Status(503)] * 3, 3, "after 3 attempt(s): HTTP 503: scripted"),
        ([Status(400)], 1, "after 1 attempt(s): HTTP 400: scripted"),
        ([Hang(5)] * 2, 2, "after 2 attempt(s): timed out"),
        ([Garbage()] * 3, 3, "after 3 attempt(s): JSONDecodeError: "),
        ([Raw([1, 2])] * 3, 3, "malformed reply: the reply is JSON but not an object"),
        ([completion({"role": "assistant", "tool_calls": "x"})] * 3, 3, "'tool_calls' is not a"),
        ([Raw({"choices": [], "error": "overloaded"})], 1, "bad model output: ChatCompletion "),
        ([completion({"role": "assistant", "content": ""}, "length")], 1, "finish_reason='length'"),
    ],
)
async def test_a_call_that_keeps_failing_changes_nothing(
    replies: list[Reply], attempts: int, message: str
) -> None:
    hangs = any(isinstance(reply, Hang) for reply in replies)
    timeout_s = 0.5 if hangs else 30.0  # short only where the timeout is what is tested
    policy = RetryPolicy(attempts=len(replies), initial_s=0.001, max_s=0.002, timeout_s=timeout_s)
    with serve(scripted(replies, then=ToolCalls((OFFER,)))) as fake:
        failed, meter, chat = await respond(fake, policy)
    assert isinstance(failed, LLMCallFailed)
    assert message in str(failed) and failed.attempts == attempts
    assert (meter.usage.failed_attempts, meter.usage.model_calls) == (attempts, 0)
    assert len(fake.requests) == attempts
    assert [m["role"] for m in chat.messages()] == ["user"]


async def test_a_transient_failure_then_a_reply_is_one_model_call() -> None:
    with serve(scripted([Garbage(), Status(502)], then=ToolCalls((OFFER,)))) as fake:
        reply, meter, _ = await respond(fake)
    assert len(reply.tool_calls) == 1
    assert (meter.usage.failed_attempts, meter.usage.model_calls, len(fake.requests)) == (2, 1, 3)


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": None},
        {"role": "assistant", "content": None, "tool_calls": None},
        {"role": "assistant", "content": "", "tool_calls": []},
    ],
)
async def test_a_reply_without_tool_calls_ends_the_turn_and_adds_nothing(
    message: dict[str, Any],
) -> None:
    # finish_reason says tool_calls, but there are none: the SDK's model reads it the same way.
    with serve(scripted([completion(message, "tool_calls")])) as fake:
        reply, meter, chat = await respond(fake)
    assert reply.tool_calls == () and reply.finish_reason == "tool_calls"
    assert meter.usage.model_calls == 1
    assert [m["role"] for m in chat.messages()] == ["user"]


async def test_an_endpoint_that_is_down_is_a_connection_error() -> None:
    with serve(scripted([])) as fake:
        base_url = fake.base_url
    client = ChatCompletions("m", base_url=base_url, api_key="k", timeout_s=2)
    chat = client.conversation([], Sampling())
    chat.add_user("Hi.")
    with pytest.raises(LLMCallFailed, match="connection error: ClientConnectorError"):
        await Meter(RetryPolicy(attempts=2, initial_s=0.001, timeout_s=2)).respond(chat)
    await client.close()


async def test_the_request_body_is_each_message_serialised_once() -> None:
    client = ChatCompletions("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    chat = client.conversation([TOOL], Sampling(temperature=0.0, max_tokens=9))
    chat.add_user("Hé, your turn.")
    body = chat.body()  # type: ignore[attr-defined]
    assert json.loads(body) == {
        "messages": [
            {"role": "user", "content": "Hé, your turn."},
        ],
        "model": "m",
        "tools": [TOOL],
        "temperature": 0.0,
        "max_tokens": 9,
    }
    assert "Hé".encode() in body  # UTF-8, as the OpenAI client sends it


def test_usage_is_read_as_reported_and_missing_usage_is_zero() -> None:
    message = {"role": "assistant", "content": "Hi."}
    body = {"choices": [{"message": message, "finish_reason": "stop"}]}
    reply = parse_reply({**body, "usage": {"prompt_tokens": -3, "completion_tokens": 4}}, "m")
    assert (reply.completion.input_tokens, reply.completion.output_tokens) == (-3, 4)
    reply = parse_reply(body, "m")
    assert (reply.completion.input_tokens, reply.completion.output_tokens) == (0, 0)
    assert reply.message == message


@pytest.mark.parametrize("tracing", [False, True])
async def test_with_tracing_each_model_call_is_a_generation_span(
    tracing: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    spans = RecordingProcessor()
    provider = DefaultTraceProvider()
    provider.set_processors([spans])
    monkeypatch.setattr(tracing_setup, "GLOBAL_TRACE_PROVIDER", provider)
    with serve(negotiator(accept_from_wake=2)) as fake:
        model = ChatCompletions("m", base_url=fake.base_url, api_key="k")
        player = LLMPlayer(
            model, name="llm:m", settings=LLMSettings(retry=FAST_RETRY, tracing=tracing)
        )
        seller = ScriptedPlayer(resolve("boulware"), "boulware")
        try:
            await play_match(SCENARIO, player, seller, seed=7)
        finally:
            await player.aclose()
    generations = [s for s in spans.spans if s.span_data.type == "generation"]
    assert len(generations) == (len(fake.requests) if tracing else 0)
    assert bool(spans.traces) is tracing
    if tracing:
        assert generations[0].span_data.input == fake.requests[0]["messages"]
        assert generations[0].span_data.usage == {"input_tokens": 11, "output_tokens": 7}


def test_the_environments_proxy_is_used_unless_no_proxy_names_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    assert ChatCompletions("m", api_key="k").proxy == "http://proxy.internal:3128"
    local = ChatCompletions("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert local.proxy is None  # no HTTP_PROXY for plain http
    monkeypatch.setenv("NO_PROXY", "api.openai.com")
    assert ChatCompletions("m", api_key="k").proxy is None


def test_cached_and_reasoning_tokens_are_read_and_priced_apart() -> None:
    from dealroom.agents.llm import Prices

    message = {"role": "assistant", "content": "Hi."}
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 50,
        "prompt_tokens_details": {"cached_tokens": 800},
        "completion_tokens_details": {"reasoning_tokens": 30},
    }
    body = {"choices": [{"message": message, "finish_reason": "stop"}], "usage": usage}
    reply = parse_reply(body, "m").completion
    assert (reply.cached_tokens, reply.reasoning_tokens) == (800, 30)
    meter = Meter()
    meter._count(reply, 0.1)  # type: ignore[attr-defined]
    data = meter.usage.as_dict()
    assert (data["cached_input_tokens"], data["reasoning_tokens"]) == (800, 30)
    prices = Prices(input_per_million=2.0, output_per_million=8.0, cached_input_per_million=0.5)
    assert prices.cost(1000, 50, 800) == (200 * 2.0 + 800 * 0.5 + 50 * 8.0) / 1e6
    assert Prices(2.0, 8.0).cost(1000, 50, 800) == (1000 * 2.0 + 50 * 8.0) / 1e6
    # A cached count above the input (a broken endpoint) is capped at it.
    huge = parse_reply(
        {**body, "usage": {**usage, "prompt_tokens_details": {"cached_tokens": 10**9}}}, "m"
    )
    capped = Meter()
    capped._count(huge.completion, 0.1)  # type: ignore[attr-defined]
    assert capped.usage.cached_input_tokens == 1000

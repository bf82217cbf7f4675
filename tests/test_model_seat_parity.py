"""One model seat: the same model reads the same conversation on every surface it plays on.

One deterministic policy (offer 90% of the list price with a message, wait, then answer in text:
the policy that made deals on one surface and none on another before the seats were one) plays
the buyer seat against scripted sellers on:

- the tournament's ``llm:`` seat: the lean chat-completions client against a loopback endpoint
  (the requests as they go over the wire), in an in-process room (``play_match``);
- the same seat through the Agents SDK's contract (``SDKChatModel``), as LiteLLM models play;
- the evaluation surface: TRL's rollout loop over ``BargainToolEnv`` (``training.evaluate``);
- the OpenEnv environment (``harnesses.openenv_env``): the conversation a client builds from its
  observations (the briefing, the tools, each step's result text), one tool call a step;
- GRPO's LLM opponent (``training.opponents``), in the other seat of the training environment;
- the SFT rows: the stored conversation exported (``conversation_example``), and a scripted
  seat's replay (``sft_example``);
- the Inspect AI task (``harnesses.inspect_task``): Inspect's eval loop and its OpenAI provider
  on the wire (its tool schemas normalised by Inspect: the one difference, undone in the test);
- the verifiers environment (integrations/verifiers, a venv of its own): ``vf-eval``'s requests
  on a served room, as its test recorded them (tests/golden/verifiers_requests.json).

Every request's conversation as the model reads it (``model_seat.canonical``: no call ids, no
JSON strings) is equal on every surface, the tools are equal byte for byte, a reply without tool
calls means the same (the seat's play ends; the negotiation is played out without it) and the
outcomes are equal.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from dealroom.agents._llm_chat import ChatCompletions
from dealroom.agents.llm import LLMPlayer, LLMSettings
from dealroom.engine.calls import LocalSeat
from dealroom.play.players import ScriptedPlayer, SeatContext
from dealroom.play.registry import resolve
from dealroom.play.runner import play_match
from dealroom.protocol import DEFAULT_RULES, model_seat, seat_view
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.secret import Secret
from dealroom.protocol.tools import ToolName
from dealroom.training.evaluate import Completion, rollout
from dealroom.training.opponents import LLMOpponent, openai_transport
from dealroom.training.sft import RecordingSeat, conversation_example, sft_example
from dealroom.training.trl import BargainToolEnv
from fake_openai import Text, ToolCalls, serve
from scripted_llm import FAST_RETRY

pytestmark = pytest.mark.anyio

SEED = 3
INDEXES = range(6)
OPPONENTS = ("boulware", "conceder")


def policy(messages: list[dict[str, Any]]) -> tuple[tuple[tuple[str, dict[str, Any]], ...], str]:
    """(tool calls, text) of the policy's next reply, from the conversation as it reads it."""
    calls = sum(1 for m in messages if m["role"] == "assistant")
    if calls == 0:
        text = messages[0]["content"]
        price = float(text.split("List price: $", 1)[1].split(" ", 1)[0].replace(",", ""))
        offer = {"price": round(price * 0.9, 2), "message": "A fair price."}
        return (("make_offer", offer),), ""
    if calls == 1:
        return (("wait_for_opponent", {"timeout_s": 30}),), ""
    return (), "That is my offer."


def wire_brain(request: dict[str, Any]) -> ToolCalls | Text:
    calls, text = policy(model_seat.canonical(request["messages"]))
    return ToolCalls(calls) if calls else Text(text)


async def seat_requests(opponent: str, index: int) -> tuple[list[dict[str, Any]], Any, Any]:
    """The llm: seat's wire requests, its outcome and its stored data."""
    scenario = scenario_at(SEED, index, "mid")
    with serve(wire_brain) as fake:
        model = ChatCompletions("m", base_url=fake.base_url, api_key="k")
        player = LLMPlayer(model, name="llm:m", settings=LLMSettings(retry=FAST_RETRY))
        seller = ScriptedPlayer(resolve(opponent), opponent)
        try:
            result = await play_match(scenario, player, seller, seed=SEED)
        finally:
            await player.aclose()
        requests = list(fake.requests)
    return requests, result.record, result.extra["players"]["buyer"]


def evaluation(opponent: str, index: int) -> tuple[list[dict[str, Any]], Any]:
    """The evaluation surface's requests (TRL's loop) and its record."""
    requests: list[dict[str, Any]] = []

    def complete(messages: Any, tools: Any) -> Completion:
        requests.append({"messages": json.loads(json.dumps(list(messages))), "tools": tools})
        calls, text = policy(model_seat.canonical(messages))
        return Completion(content=text, tool_calls=calls)

    env = BargainToolEnv(opponent=opponent, seed=SEED)
    played = rollout(env, complete, {"index": index, "tier": "mid"}, names=("m", opponent))
    return requests, played


def openenv(opponent: str, index: int) -> tuple[list[dict[str, Any]], Any]:
    """The requests a client of the OpenEnv environment makes (the conversation built from its
    observations) and the environment's record."""
    from dealroom.harnesses.openenv_env import (
        BargainAction,
        BargainEnvironment,
        Served,
        served_settings,
    )

    env = BargainEnvironment(Served(served_settings(opponents=OPPONENTS, secret=SEED)))
    opened = env.reset(seed=0, role="buyer", opponent=opponent, tier="mid", index=index)
    messages = model_seat.opening(opened.briefing)
    requests: list[dict[str, Any]] = []
    done = False
    while not done:
        requests.append({"messages": json.loads(json.dumps(messages)), "tools": opened.tools})
        calls, text = policy(model_seat.canonical(messages))
        if not calls:
            messages.append({"role": "assistant", "content": text})
            done = env.step(BargainAction(tool=None)).done
            break
        for n, (name, arguments) in enumerate(calls):
            step = env.step(BargainAction(tool=name, arguments=arguments))
            call_id = f"c{len(requests)}_{n}"
            messages += model_seat.call_messages(
                call_id, cast("ToolName", name), arguments, step.result
            )
            done = step.done
    assert done and env.record is not None
    return requests, env.record


@pytest.mark.parametrize("opponent", OPPONENTS)
async def test_the_llm_seat_and_the_evaluation_send_the_same_requests(opponent: str) -> None:
    deals = 0
    for index in INDEXES:
        wire, record, stored = await seat_requests(opponent, index)
        evaluated, played = evaluation(opponent, index)
        stepped, stepped_record = openenv(opponent, index)
        assert [model_seat.canonical(r["messages"]) for r in wire] == [
            model_seat.canonical(r["messages"]) for r in evaluated
        ], (opponent, index)
        assert [model_seat.canonical(r["messages"]) for r in wire] == [
            model_seat.canonical(r["messages"]) for r in stepped
        ], (opponent, index)
        assert json.dumps(stepped[0]["tools"]) == json.dumps(wire[0]["tools"])
        assert (stepped_record.outcome, stepped_record.events) == (record.outcome, record.events)
        tools = model_seat.tools(DEFAULT_RULES)
        assert all(r["tools"] == tools for r in wire) and all(
            r["tools"] == tools for r in evaluated
        )
        assert json.dumps(wire[0]["tools"]) == json.dumps(evaluated[0]["tools"])
        assert [m["role"] for m in wire[0]["messages"]] == ["user"]  # the briefing alone
        # The same meaning of the text reply: the seat's play ends, the rest is played out.
        assert record.outcome == played.record.outcome, (opponent, index)
        assert record.events == played.record.events, (opponent, index)
        deals += record.outcome.status == "deal"
        # The SFT row of the stored conversation is what the model read and wrote.
        row = conversation_example(record, "buyer", stored["conversation"])
        assert row is not None and row["tools"] == tools
        last = model_seat.canonical(wire[-1]["messages"])
        assert model_seat.canonical(row["messages"])[: len(last)] == last
    assert 0 < deals < len(INDEXES) or opponent == "boulware"  # the policy can make deals


def test_a_scripted_replay_row_opens_and_is_tooled_as_every_surface() -> None:
    from dealroom.engine.match import play

    scenario = scenario_at(SEED, 0, "mid")
    record = play(
        scenario, resolve("linear"), resolve("conceder"), names=("linear", "conceder"), seed=SEED
    )
    row = sft_example(record, "buyer", seed=SEED)
    assert row is not None
    assert row["tools"] == model_seat.tools(DEFAULT_RULES)
    assert [m["role"] for m in row["messages"][:2]] == ["user", "assistant"]
    for message in model_seat.canonical(row["messages"]):
        for call in message.get("tool_calls", []):
            bound = model_seat.bind(call["function"]["name"], call["function"]["arguments"])
            assert isinstance(bound, model_seat.Bound)  # every call fits the one signatures


async def test_the_training_opponent_sends_what_the_llm_seat_sends() -> None:
    """GRPO's LLM opponent, in the seller seat of the training environment, against a scripted
    buyer playing through the environment's tools (the SFT replay's seat), and the tournament's
    llm: seat in the same seat against the same buyer: the same requests, the same outcome."""
    for index in INDEXES:
        scenario = scenario_at(SEED, index, "mid")
        with serve(wire_brain) as fake:
            model = ChatCompletions("m", base_url=fake.base_url, api_key="k")
            seller = LLMPlayer(model, name="llm:m", settings=LLMSettings(retry=FAST_RETRY))
            buyer = ScriptedPlayer(resolve("conceder"), "conceder")
            try:
                played = await play_match(scenario, buyer, seller, seed=SEED)
            finally:
                await seller.aclose()
            seat_requests = list(fake.requests)
        with serve(wire_brain) as fake:
            transport = openai_transport(fake.base_url, retries=0)
            opponent = LLMOpponent("m", transport, temperature=None, max_tokens=None)
            house = opponent(seat_view(scenario, "seller"), random.Random(0))
            local = LocalSeat(scenario, "buyer", house, DEFAULT_RULES)
            context = SeatContext(role="buyer", rules=DEFAULT_RULES, seed=SEED)
            await ScriptedPlayer(resolve("conceder"), "conceder").play(
                RecordingSeat(local), context
            )
            local.finish()
            trained_requests = list(fake.requests)
        assert [model_seat.canonical(r["messages"]) for r in seat_requests] == [
            model_seat.canonical(r["messages"]) for r in trained_requests
        ], index
        for ours, theirs in zip(seat_requests, trained_requests, strict=True):
            assert {k: v for k, v in ours.items() if k != "messages"} == {
                k: v for k, v in theirs.items() if k != "messages"
            }
        assert local.referee.outcome == played.record.outcome, index


GOLDEN_VERIFIERS = Path(__file__).parent / "golden" / "verifiers_requests.json"


async def test_the_verifiers_environment_sends_what_the_llm_seat_sends() -> None:
    """The verifiers environment (integrations/verifiers) runs in a venv of its own, so its
    test records what ``vf-eval`` sent the loopback model (this policy, the buyer against
    boulware on a served room of the recorded secret and index: tests/golden/
    verifiers_requests.json, byte for byte what it sends, or that test fails); here the
    tournament's ``llm:`` seat plays the same scenario with the same replies: the same
    conversation, request by request, and the same tools."""
    recorded = json.loads(GOLDEN_VERIFIERS.read_text(encoding="utf-8"))
    secret = Secret.from_hex(recorded["secret"])
    scenario = scenario_at(secret, recorded["index"], recorded["tier"])
    assert recorded["role"] == "buyer"
    with serve(wire_brain) as fake:
        model = ChatCompletions("m", base_url=fake.base_url, api_key="k")
        player = LLMPlayer(model, name="llm:m", settings=LLMSettings(retry=FAST_RETRY))
        opponent = ScriptedPlayer(resolve(recorded["opponent"]), recorded["opponent"])
        try:
            await play_match(scenario, player, opponent, seed=secret)
        finally:
            await player.aclose()
        wire = list(fake.requests)
    theirs = recorded["requests"]
    assert len(wire) == len(theirs) == 3  # offer, wait, then the text reply
    assert [model_seat.canonical(r["messages"]) for r in wire] == [
        model_seat.canonical(r["messages"]) for r in theirs
    ]
    assert json.dumps(theirs[0]["tools"]) == json.dumps(wire[0]["tools"])
    assert all(r["tools"] == model_seat.tools(DEFAULT_RULES) for r in theirs)


def _inspect_normalisation_undone(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as Inspect's ``ToolParams`` sends it, with what it changes undone: it adds
    ``"additionalProperties": false`` and an empty ``required``, and drops ``"nullable"`` from
    the optional parameters (docs/harnesses.md)."""
    parameters = dict(tool["function"]["parameters"])
    assert parameters.pop("additionalProperties") is False
    if parameters.get("required") == []:
        del parameters["required"]
    return {**tool, "function": {**tool["function"], "parameters": parameters}}


def _without_nullable(tool: dict[str, Any]) -> dict[str, Any]:
    parameters = tool["function"]["parameters"]
    properties = {
        name: {k: v for k, v in spec.items() if k != "nullable"}
        for name, spec in parameters["properties"].items()
    }
    return {
        **tool,
        "function": {**tool["function"], "parameters": {**parameters, "properties": properties}},
    }


@pytest.mark.parametrize("opponent", OPPONENTS)
async def test_the_inspect_task_sends_what_the_llm_seat_sends(
    opponent: str, tmp_path: Path
) -> None:
    """The Inspect AI task (``harnesses.inspect_task``) through Inspect's eval loop and its
    OpenAI provider, on the same scenarios: the same conversation, request by request, the
    same tools but for Inspect's own normalisation of a schema, the same outcomes."""
    from inspect_ai import eval as inspect_eval

    from dealroom.harnesses.inspect_task import bargain
    from dealroom.store.results import ResultsStore

    out = tmp_path / "inspect.db"
    task = bargain(opponent=opponent, tiers="mid", n=len(INDEXES), seed=SEED, out=str(out))
    with serve(wire_brain) as fake:
        (log,) = await anyio.to_thread.run_sync(
            lambda: inspect_eval(
                task,
                model="openai/m",
                model_base_url=fake.base_url,
                model_args={"responses_api": False, "api_key": "k"},
                log_dir=str(tmp_path / "logs"),
                display="none",
            )
        )
        theirs = [r for r in fake.requests if r.get("tools")]
    assert log.status == "success", log.error
    by_briefing: dict[str, list[dict[str, Any]]] = {}
    for request in theirs:
        by_briefing.setdefault(request["messages"][0]["content"], []).append(request)
    with ResultsStore(out, create=False) as store:
        outcomes = {row.record.scenario.id: row.record.outcome for row in store.iter("inspect")}
    for index in INDEXES:
        wire, record, _ = await seat_requests(opponent, index)
        inspected = by_briefing[wire[0]["messages"][0]["content"]]
        assert [model_seat.canonical(r["messages"]) for r in wire] == [
            model_seat.canonical(r["messages"]) for r in inspected
        ], (opponent, index)
        tools = [_inspect_normalisation_undone(t) for t in inspected[0]["tools"]]
        assert tools == [_without_nullable(t) for t in model_seat.tools(DEFAULT_RULES)]
        assert all(r["tools"] == inspected[0]["tools"] for r in inspected)
        assert outcomes[record.scenario.id] == record.outcome, (opponent, index)

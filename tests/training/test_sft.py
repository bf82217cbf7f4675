"""SFT conversations: a scripted record replayed through the served surface, byte for byte."""

import json
import random

import pytest

from dealroom.engine.match import play
from dealroom.play.registry import resolve
from dealroom.protocol import TIERS, Decision, Observation, OfferMade, Role, SeatView
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.rules import DEFAULT_RULES
from dealroom.protocol.secret import Secret, Seed
from dealroom.protocol.tools import function_schemas
from dealroom.training.sft import NotReplayable, sft_example
from dealroom.training.trl import BargainToolEnv

PAIRINGS = [("conceder", "boulware"), ("zic", "tit_for_tat"), ("linear", "micro")]


def record_of(buyer: str, seller: str, index: int = 2, tier: str = "mid", seed: Seed = 0):
    scenario = scenario_at(seed, index, tier)  # type: ignore[arg-type]
    return play(scenario, resolve(buyer), resolve(seller), names=(buyer, seller), seed=seed)


def a_deal(buyer: str, seller: str):
    """The first recorded deal between the two agents (scenario indices 0, 1, ...)."""
    for index in range(40):
        record = record_of(buyer, seller, index)
        if record.outcome.status == "deal":
            return record
    raise AssertionError("no deal in 40 scenarios")


def check_structure(example: dict) -> None:
    """The briefing, then each tool call answered by one tool message with its id."""
    messages = example["messages"]
    assert messages[0]["role"] == "user"
    assert [m["role"] for m in messages[1:]] == ["assistant", "tool"] * ((len(messages) - 1) // 2)
    for call, result in zip(messages[1::2], messages[2::2], strict=True):
        (tool_call,) = call["tool_calls"]
        assert tool_call["type"] == "function"
        assert isinstance(tool_call["function"]["arguments"], dict)
        assert result["tool_call_id"] == tool_call["id"]
    ids = [m["tool_call_id"] for m in messages[2::2]]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize(("buyer", "seller"), PAIRINGS)
@pytest.mark.parametrize("role", ["buyer", "seller"])
def test_tool_messages_are_what_the_trl_environment_returns_for_the_same_calls(
    buyer: str, seller: str, role: Role
) -> None:
    opponent = seller if role == "buyer" else buyer
    for tier in TIERS:
        for index in range(5):
            record = record_of(buyer, seller, index, tier)
            example = sft_example(record, role)
            assert example is not None
            check_structure(example)
            env = BargainToolEnv(opponent=opponent, role=role, tier=tier, seed=0)
            messages = example["messages"]
            assert messages[0] == {"role": "user", "content": env.reset(index=index)}
            for call, result in zip(messages[1::2], messages[2::2], strict=True):
                function = call["tool_calls"][0]["function"]
                text = getattr(env, function["name"])(**function["arguments"])
                assert result["content"] == text, (tier, index, function)
            assert example["tools"] == function_schemas(DEFAULT_RULES)


def test_the_conversation_ends_with_the_outcome_and_replays_the_recorded_offers() -> None:
    record = a_deal("conceder", "boulware")
    example = sft_example(record, "buyer")
    assert example is not None
    messages = example["messages"]
    assert messages[0]["content"].startswith("You are the buyer")
    surplus = record.outcome.buyer_surplus
    assert f"{surplus:,.2f}" in messages[-1]["content"]
    offered = [
        m["tool_calls"][0]["function"]["arguments"]["price"]
        for m in messages[1::2]
        if m["tool_calls"][0]["function"]["name"] == "make_offer"
    ]
    recorded = [float(e.price) for e in record.events if e.type == "offer_made" and e.by == "buyer"]
    assert offered == recorded


def test_arguments_can_be_json_strings() -> None:
    record = record_of("linear", "boulware")
    objects = sft_example(record, "seller")
    strings = sft_example(record, "seller", arguments="string")
    assert objects is not None and strings is not None
    for a, b in zip(objects["messages"][1::2], strings["messages"][1::2], strict=True):
        function, encoded = a["tool_calls"][0]["function"], b["tool_calls"][0]["function"]
        assert json.loads(encoded["arguments"]) == function["arguments"]
    assert objects["messages"][2::2] == strings["messages"][2::2]


def test_a_record_whose_events_were_altered_is_not_replayed() -> None:
    record = record_of("conceder", "boulware")
    i, offer = next((i, e) for i, e in enumerate(record.events) if isinstance(e, OfferMade))
    events = list(record.events)
    events[i] = offer.model_copy(update={"price": offer.price + 1})
    altered = record.model_copy(update={"events": tuple(events)})
    for role in ("buyer", "seller"):
        with pytest.raises(NotReplayable) as caught:
            sft_example(altered, role)
        assert caught.value.reason == "events differ"


def test_a_random_agent_replays_only_under_its_own_seed() -> None:
    secret = Secret.new()
    record = record_of("zic", "zic", 1, "mid", seed=secret)
    assert sft_example(record, "buyer", seed=secret) is not None
    with pytest.raises(NotReplayable, match="events differ"):
        sft_example(record, "buyer", seed=0)


def test_a_seat_that_is_not_a_registry_agent_is_not_replayed() -> None:
    record = record_of("conceder", "boulware").model_copy(update={"seller": "llm:some-model"})
    with pytest.raises(NotReplayable) as caught:
        sft_example(record, "buyer")
    assert caught.value.reason in ("not scripted", "unknown agent")


@pytest.mark.parametrize("role", ["buyer", "seller"])
def test_the_other_sides_value_never_appears(role: Role) -> None:
    for index in range(6):
        record = record_of("conceder", "boulware", index)
        s = record.scenario
        own, hidden = (
            (s.buyer_value, s.seller_cost) if role == "buyer" else (s.seller_cost, s.buyer_value)
        )
        example = sft_example(record, role)
        assert example is not None
        text = json.dumps(example)
        for form in (f"{hidden:,.2f}", f"{hidden:.2f}", str(float(hidden))):
            assert form not in text, (index, form)
        # The seat's own value appears only where the served seat reads it too: its briefing
        # and its own state (get_state), never in an action's or a wait's result.
        for call, result in zip(example["messages"][1::2], example["messages"][2::2], strict=True):
            if call["tool_calls"][0]["function"]["name"] != "get_state":
                assert f"{own:,.2f}" not in result["content"]


def test_a_seat_that_never_acted_has_no_transcript() -> None:
    def silent(view: SeatView, rng: random.Random):
        class Silent:
            def act(self, observation: Observation) -> Decision:
                return Decision()

        return Silent()

    record = play(
        scenario_at(0, 2, "mid"), silent, resolve("boulware"), names=("silent", "boulware")
    )
    assert sft_example(record, "buyer") is None
    with pytest.raises(NotReplayable):  # the silent buyer is no registry agent
        sft_example(record, "seller")


def test_metadata_names_the_seat_and_the_result_but_no_values() -> None:
    record = a_deal("conceder", "boulware")
    example = sft_example(record, "seller", metadata={"key": "k1"})
    assert example is not None
    assert example["metadata"] == {
        "role": "seller",
        "agent": "boulware",
        "opponent": "conceder",
        "scenario_id": record.scenario.id,
        "tier": "mid",
        "status": "deal",
        "end_reason": "accepted",
        "key": "k1",
    }


def test_a_stored_conversation_exports_with_the_one_seats_tools_or_not_at_all() -> None:
    from dealroom.protocol import Rules, model_seat
    from dealroom.training.sft import conversation_example

    record = play(
        scenario_at(0, 0, "mid"), resolve("linear"), resolve("conceder"), names=("a", "b")
    )
    call = {"id": "c1", "type": "function", "function": {"name": "get_state", "arguments": "{}"}}
    one_seat = [
        {"role": "user", "content": "You are the buyer..."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "you: the buyer"},
    ]
    rules = Rules(max_message_chars=500)
    stored = {"messages": one_seat, "tools": function_schemas(rules, series=True)}
    row = conversation_example(record, "buyer", stored, rules=rules)
    assert row is not None and row["tools"] == model_seat.tools(rules)  # no series tool
    # An llm: seat recorded before the one model seat: a system message, news as user messages.
    older = [{"role": "system", "content": "How your turns work:"}, *one_seat]
    with pytest.raises(NotReplayable, match="another surface"):
        conversation_example(record, "buyer", {"messages": older}, rules=rules)
    woken = [*one_seat, {"role": "user", "content": "Your turn. wait_for_opponent returned:"}]
    with pytest.raises(NotReplayable, match="another surface"):
        conversation_example(record, "buyer", {"messages": woken}, rules=rules)

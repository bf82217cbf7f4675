"""SFT transcripts: the OpenAI messages format, rebuilt from a record's events."""

import json
import random
from decimal import Decimal

import pytest

from dealroom.agents import resolve
from dealroom.engine.match import play
from dealroom.protocol import Decision, MakeOffer, Observation, SeatView, SendMessage
from dealroom.protocol.generator import scenario_at
from dealroom.training.sft import sft_example


def check_structure(example: dict) -> None:
    """Every tool call is answered, in order, by a tool message with its id."""
    messages = example["messages"]
    assert messages[0]["role"] == "system" and messages[1]["role"] == "user"
    pending: list[str] = []
    for message in messages[2:]:
        if message["role"] == "assistant":
            assert not pending
            assert message["tool_calls"]
            for call in message["tool_calls"]:
                assert call["type"] == "function"
                json.loads(call["function"]["arguments"])
                pending.append(call["id"])
        else:
            assert message["role"] == "tool"
            assert message["tool_call_id"] == pending.pop(0)
    assert not pending
    ids = [c["id"] for m in messages if m["role"] == "assistant" for c in m["tool_calls"]]
    assert len(ids) == len(set(ids))


def record_of(buyer: str, seller: str, index: int = 2):
    return play(
        scenario_at(0, index, "mid"), resolve(buyer), resolve(seller), names=(buyer, seller)
    )


def a_deal(buyer: str, seller: str):
    """The first recorded deal between the two agents (scenario indices 0, 1, ...)."""
    for index in range(40):
        record = record_of(buyer, seller, index)
        if record.outcome.status == "deal":
            return record
    raise AssertionError("no deal in 40 scenarios")


def test_a_deal_becomes_system_user_then_calls_and_their_results() -> None:
    record = a_deal("conceder", "boulware")
    example = sft_example(record, "buyer")
    assert example is not None
    check_structure(example)
    messages = example["messages"]
    assert messages[0]["content"].startswith("You are the buyer")
    assert messages[1]["content"].startswith("The negotiation has started.")
    calls = [c["function"] for m in messages if m["role"] == "assistant" for c in m["tool_calls"]]
    own = [e for e in record.events if e.by == "buyer" and e.type != "offer_withdrawn"]
    kinds = {"offer_made": "make_offer", "offer_accepted": "accept", "message_sent": "send_message"}
    assert [c["name"] for c in calls] == [kinds[e.type] for e in own if e.type in kinds]
    surplus = record.outcome.buyer_surplus
    assert messages[-1]["content"].endswith(f"Your surplus: ${surplus:,.2f}.")
    assert {t["function"]["name"] for t in example["tools"]} >= {"make_offer", "accept"}


def test_each_make_offer_call_carries_the_recorded_price() -> None:
    record = record_of("linear", "boulware")
    example = sft_example(record, "seller")
    assert example is not None
    offered = [
        json.loads(c["function"]["arguments"])["price"]
        for m in example["messages"]
        if m["role"] == "assistant"
        for c in m["tool_calls"]
        if c["function"]["name"] == "make_offer"
    ]
    recorded = [
        float(e.price) for e in record.events if e.type == "offer_made" and e.by == "seller"
    ]
    assert offered == recorded


@pytest.mark.parametrize("role", ["buyer", "seller"])
def test_the_other_sides_value_never_appears(role: str) -> None:
    for index in range(6):
        record = record_of("conceder", "boulware", index)
        s = record.scenario
        own, hidden = (
            (s.buyer_value, s.seller_cost) if role == "buyer" else (s.seller_cost, s.buyer_value)
        )
        example = sft_example(record, role)  # type: ignore[arg-type]
        assert example is not None
        text = json.dumps(example)
        for form in (f"{hidden:,.2f}", f"{hidden:.2f}", str(float(hidden))):
            assert form not in text, (index, form)
        # The seat's own value appears only in its own briefing.
        rest = json.dumps(example["messages"][1:])
        assert f"{own:,.2f}" not in rest


class Chatty:
    """Sends a message and an offer in one turn, then waits for replies."""

    def __init__(self, view: SeatView) -> None:
        self.price = view.scenario.list_price * Decimal("0.6")

    def act(self, observation: Observation) -> Decision:
        self.price += 10
        return Decision(actions=(SendMessage(text="Hello"), MakeOffer(price=self.price)))


def test_actions_of_one_turn_share_one_assistant_message() -> None:
    def chatty(view: SeatView, rng: random.Random) -> Chatty:
        return Chatty(view)

    record = play(scenario_at(0, 2, "mid"), chatty, resolve("boulware"), names=("chatty", "b"))
    example = sft_example(record, "buyer")
    assert example is not None
    check_structure(example)
    turns = [m["tool_calls"] for m in example["messages"] if m["role"] == "assistant"]
    assert all([c["function"]["name"] for c in t] == ["send_message", "make_offer"] for t in turns)


def test_a_seat_that_never_acted_has_no_transcript() -> None:
    def silent(view: SeatView, rng: random.Random):
        class Silent:
            def act(self, observation: Observation) -> Decision:
                return Decision()

        return Silent()

    record = play(scenario_at(0, 2, "mid"), silent, resolve("boulware"), names=("s", "b"))
    assert sft_example(record, "buyer") is None
    assert sft_example(record, "seller") is not None


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

"""Every form of the seat's tools matches the one definition in dealroom.protocol.tools.

The MCP tools, the client's methods, the TRL environment's methods (through transformers' own
get_json_schema when it is installed), the SFT tools column and the stdlib remote client.
"""

from __future__ import annotations

import inspect
import typing
from decimal import Decimal
from typing import Any

import pytest
from mcp import Client

from dealroom.client.seat import SeatClient
from dealroom.protocol import DEFAULT_RULES, ErrorCode, MakeOffer, Referee, Rules
from dealroom.protocol.arguments import action_of, arguments_of
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.rules import ActionCosts
from dealroom.protocol.tools import (
    ACTION_TOOLS,
    SEAT_TOOLS,
    ArgumentError,
    ToolName,
    function_schema,
    function_schemas,
    seat_tools,
    validate_arguments,
)
from dealroom.server.mcp_app import build_app
from dealroom.server.room import Room
from dealroom.server.room_settings import House, RoomSettings
from dealroom.server.seat import RoomSeat
from dealroom.training import remote
from dealroom.training.sft import TOOL_SCHEMAS as SFT_TOOLS
from dealroom.training.trl import BargainToolEnv
from dealroom.training.trl import with_rules as env_with_rules

PINNED_TOOLS = (
    "make_offer",
    "accept",
    "reject",
    "send_message",
    "walk_away",
    "wait_for_opponent",
    "get_state",
    "new_negotiation",
)
"""The one hand-written tool list of the suite: a tool added or removed changes it on purpose
(every other test derives its tools from the specs)."""


def test_the_seat_tools_are_the_pinned_ones_in_their_order() -> None:
    assert tuple(spec.name for spec in SEAT_TOOLS) == PINNED_TOOLS
    assert tuple(typing.get_args(ToolName)) == PINNED_TOOLS


ODD_RULES = Rules(
    costs=ActionCosts(make_offer=7.5, send_message=0.5, reject=4, accept=2, walk_away=3),
    max_invalid_actions=4,
    max_price_multiple=3,
    max_message_chars=280,
)


def _room(rules: Rules) -> Room:
    from dealroom.play.registry import resolve

    return Room(
        "room-tools",
        RoomSettings(
            scenarios=lambda i: scenario_at(0, i, "mid"),
            occupants={"seller": House("boulware", resolve("boulware"))},
            rules=rules,
        ),
    )


@pytest.mark.anyio
@pytest.mark.parametrize("rules", [DEFAULT_RULES, ODD_RULES], ids=["default", "odd"])
async def test_the_mcp_tools_are_the_spec_described_under_the_rooms_rules(rules: Rules) -> None:
    room = _room(rules)
    seat = RoomSeat(room, "buyer")
    async with Client(build_app(lambda: seat, series=room.series.available)) as client:
        listed = (await client.list_tools()).tools
    specs = seat_tools(series=True)
    assert [t.name for t in listed] == [s.name for s in specs]
    for tool, spec in zip(listed, specs, strict=True):
        assert tool.title == spec.title
        assert tool.description == spec.description(rules)
        assert tool.annotations is not None and tool.annotations.title == spec.title
        assert bool(tool.annotations.read_only_hint) == spec.hints.read_only
        schema = tool.input_schema
        assert list(schema.get("properties", {})) == list(spec.args.model_fields)
        required = [n for n, f in spec.args.model_fields.items() if f.is_required()]
        assert sorted(schema.get("required", [])) == sorted(required)
        for name, info in spec.args.model_fields.items():
            assert schema["properties"][name]["description"] == info.description
        assert tool.output_schema is not None
    make_offer = next(t for t in listed if t.name == "make_offer")
    assert f"Takes {rules.costs.make_offer:g} s of clock time" in (make_offer.description or "")
    assert f"after {rules.max_invalid_actions} refused actions" in (make_offer.description or "")


def test_descriptions_hold_the_rules_values_not_the_defaults() -> None:
    for spec in SEAT_TOOLS:
        text = spec.description(ODD_RULES)
        if spec.name in ACTION_TOOLS:
            assert f"Takes {ODD_RULES.costs.of(spec.name):g} s of clock time" in text
        assert "by default" not in text


@pytest.mark.parametrize("spec", seat_tools(series=True), ids=lambda s: s.name)
def test_the_clients_methods_take_the_specs_arguments(spec: Any) -> None:
    params = [
        p for p in inspect.signature(getattr(SeatClient, spec.name)).parameters if p != "self"
    ]
    assert params == list(spec.args.model_fields)


@pytest.mark.parametrize("spec", seat_tools(series=True), ids=lambda s: s.name)
def test_the_stdlib_remote_seats_methods_take_the_specs_arguments(spec: Any) -> None:
    method = getattr(remote.HttpSeatClient, spec.name)
    params = [p for p in inspect.signature(method).parameters if p != "self"]
    assert params == list(spec.args.model_fields)


def test_the_sft_tools_column_is_the_spec_as_function_schemas() -> None:
    assert function_schemas(DEFAULT_RULES) == SFT_TOOLS
    # In name order: what TRL offers from the environment's methods (inspect.getmembers).
    assert [t["function"]["name"] for t in SFT_TOOLS] == sorted(
        s.name for s in seat_tools(series=False)
    )


@pytest.mark.train  # needs transformers (the train extra): CI's real-TRL phase runs it
@pytest.mark.parametrize("rules", [DEFAULT_RULES, ODD_RULES], ids=["default", "odd"])
def test_trl_reads_the_same_schemas_from_the_environments_methods(rules: Rules) -> None:
    transformers_utils = pytest.importorskip("transformers.utils")
    env_class = env_with_rules(rules)
    methods = dict(inspect.getmembers(env_class, inspect.isfunction))
    tools = [n for n in methods if not n.startswith("_") and n not in ("reset", "get_reward")]
    # Same schemas, same order (the template renders them in the order TRL offers them).
    assert tools == [t["function"]["name"] for t in function_schemas(rules)]
    for spec in seat_tools(series=False):
        assert transformers_utils.get_json_schema(methods[spec.name]) == function_schema(
            spec, rules
        )


@pytest.mark.parametrize(
    ("arguments", "needle"),
    [
        ({"price": True}, "price must be a JSON number such as 1250.00 (got a boolean)"),
        ({"price": "1e3"}, "price must be a JSON number such as 1250.00 (got a string)"),
        ({"price": "Infinity"}, "(got a string)"),
        ({"price": None}, "(got null)"),
        ({"price": -1}, "price must be above 0 (got -1)"),
        ({}, "price is missing"),
        ({"price": 10, "prize": 5}, "make_offer takes no argument 'prize'"),
        ({"price": 10, "message": 5}, "message must be a JSON string (got 5)"),
    ],
)
def test_arguments_are_strict_and_refused_in_one_coded_line(
    arguments: dict[str, Any], needle: str
) -> None:
    spec = next(s for s in SEAT_TOOLS if s.name == "make_offer")
    with pytest.raises(ArgumentError) as caught:
        validate_arguments(spec, arguments)
    text = caught.value.payload.text()
    assert text.startswith("invalid_arguments: ") and needle in text, text
    assert "\n" not in text and "pydantic" not in text and text.endswith(".")


def test_an_infinite_price_passes_the_schema_and_the_referee_calls_it_not_finite() -> None:
    # JSON readers turn 1e999 (or Python's Infinity) into an infinite float: a number.
    spec = next(s for s in SEAT_TOOLS if s.name == "make_offer")
    action = action_of(validate_arguments(spec, {"price": float("inf")}))
    assert isinstance(action, MakeOffer)
    referee = Referee(scenario_at(0, 0, "mid"))
    with pytest.raises(Exception) as caught:
        referee.apply("buyer", action, 1.0)
    assert getattr(caught.value, "code", None) == ErrorCode.PRICE_NOT_FINITE


def test_arguments_of_is_the_inverse_of_action_of() -> None:
    action = MakeOffer(price=Decimal("12.50"), message="hi")
    spec = next(s for s in SEAT_TOOLS if s.name == "make_offer")
    assert action_of(validate_arguments(spec, arguments_of(action))) == action


def test_every_action_type_has_its_tool() -> None:
    names = set(typing.get_args(typing.get_args(MakeOffer.model_fields["type"].annotation)[0]))
    assert names <= {s.name for s in SEAT_TOOLS}
    assert BargainToolEnv.rules == DEFAULT_RULES

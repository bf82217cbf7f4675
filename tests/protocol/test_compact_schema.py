"""The seat results' published output schemas: their models' schemas cut to the top level.

Cutting only widens, so every real result validates (as the MCP SDKs' clients check it), while
a result of the wrong shape at the top level is still refused.
"""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel
from referencing import Registry

from dealroom.protocol import (
    ActionResult,
    LiveOffer,
    MakeOffer,
    Model,
    SeatState,
    WaitResult,
    WalkAway,
)
from dealroom.protocol.compact_schema import compact_schema
from dealroom.protocol.generator import scenario_at
from dealroom.server.room import Room
from dealroom.server.room_settings import House, RoomSettings
from dealroom.server.seat import RoomSeat

RESULT_MODELS: list[type[Model]] = [ActionResult, WaitResult, SeatState]


def _validator(model: type[Model]) -> Draft202012Validator:
    schema = compact_schema(model)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, registry=Registry())  # as mcp's client compiles it


async def _played_results() -> dict[type[Model], list[dict[str, Any]]]:
    """The structured results of a negotiation played through a seat, by model."""
    from dealroom.play.registry import resolve

    room = Room(
        "room-schema",
        RoomSettings(
            scenarios=lambda i: scenario_at(0, i, "mid") if i < 2 else None,
            occupants={"seller": House("conceder", resolve("conceder"))},
        ),
    )
    seat = RoomSeat(room, "buyer")
    found: dict[type[Model], list[dict[str, Any]]] = {m: [] for m in RESULT_MODELS}

    def keep(result: Model) -> None:
        found[type(result)].append(result.model_dump(mode="json"))

    keep(await seat.state())
    list_price = (await seat.state()).observation.scenario.list_price
    for step in range(12):
        keep(await seat.act(MakeOffer(price=(list_price * Decimal("0.5")).quantize(Decimal(1)))))
        wait = await seat.wait(30.0)
        keep(wait)
        if wait.outcome is not None:
            break
        if step == 5:
            keep(await seat.act(WalkAway(message="enough")))
            break
    keep(await seat.state())
    keep(await seat.new_negotiation())
    return found


@pytest.mark.anyio
async def test_every_real_result_validates_against_its_published_schema() -> None:
    results = await _played_results()
    for model, dumps in results.items():
        assert dumps, model.__name__
        validator = _validator(model)
        for dump in dumps:
            assert validator.is_valid(json.loads(json.dumps(dump))), (model.__name__, dump)


@pytest.mark.anyio
async def test_a_result_of_the_wrong_shape_is_refused() -> None:
    results = await _played_results()
    action = results[ActionResult][0]
    validator = _validator(ActionResult)
    missing = {k: v for k, v in action.items() if k != "now"}
    wrong_type = {**action, "ok": "yes"}
    extra = {**action, "their_value": 1000}
    not_a_list = {**action, "events": {"seq": 1}}
    bad_woke = {**results[WaitResult][0], "woke": "bored"}
    for bad in (missing, wrong_type, extra, not_a_list):
        assert not validator.is_valid(bad), bad
    assert not _validator(WaitResult).is_valid(bad_woke)


@pytest.mark.parametrize("model", RESULT_MODELS, ids=lambda m: m.__name__)
def test_the_published_schema_is_the_top_level_of_the_full_one(model: type[Model]) -> None:
    full = model.model_json_schema()
    compact = compact_schema(model)
    assert "$defs" not in compact and "$ref" not in json.dumps(compact)
    assert list(compact["properties"]) == list(full["properties"])
    assert compact["required"] == full["required"]
    assert compact["additionalProperties"] is False
    assert (compact["title"], compact["description"]) == (full["title"], full["description"])
    assert len(json.dumps(compact)) < len(json.dumps(full)) / 6


# -- the reference: the same cut, of the schema pydantic generates ---------------------------------

_SCALAR_KEYS = ("type", "enum", "const")
ITEM_TITLES = {"LiveOffer", "SeatOutcome"}


def _reference_cut(model: type[BaseModel]) -> dict[str, Any]:
    """The top level of pydantic's own schema of ``model`` (how it was computed before the
    server read annotations instead, at a third of the tools' build time)."""
    full = model.model_json_schema(mode="validation")
    defs: dict[str, Any] = full.get("$defs", {})

    def resolved(node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return node
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        return {**defs[ref.removeprefix("#/$defs/")], **siblings}

    def cut(node: dict[str, Any], depth: int) -> dict[str, Any]:
        node = resolved(node)
        union = node.get("anyOf", node.get("oneOf"))
        if union is not None:
            alternatives = [cut(alt, depth) for alt in union]
            distinct = {json.dumps(a, sort_keys=True): a for a in reversed(alternatives)}
            ordered = [a for a in alternatives if distinct.pop(json.dumps(a, sort_keys=True), None)]
            return ordered[0] if len(ordered) == 1 else {"anyOf": ordered}
        if node.get("type") == "object":
            if node.get("title") in ITEM_TITLES:  # an item published with its fields
                depth = max(depth, 1)
            if depth <= 0:
                return {"type": "object"}
            out: dict[str, Any] = {"type": "object", "title": node["title"]}
            properties = node.get("properties")
            if not properties:
                return out
            out["properties"] = {k: cut(v, depth - 1) for k, v in properties.items()}
            if node.get("required"):
                out["required"] = list(node["required"])
            if node.get("additionalProperties") is False:
                out["additionalProperties"] = False
            return out
        if node.get("type") == "array":
            items = {"items": cut(node["items"], depth)} if "items" in node else {}
            return {"type": "array", **items}
        return {key: node[key] for key in _SCALAR_KEYS if key in node}

    compact = cut(full, depth=1)
    if "description" in full:
        compact["description"] = full["description"]
    return compact


def _wire_models() -> list[type[BaseModel]]:
    import dealroom.server.mcp_app  # noqa: F401  (the protocol's wire models and the server's)

    found: list[type[BaseModel]] = []
    todo: list[type[BaseModel]] = [Model]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.append(sub)
                todo.append(sub)
    return found


@pytest.mark.parametrize("model", _wire_models(), ids=lambda m: f"{m.__module__}.{m.__name__}")
def test_the_cut_read_from_annotations_is_the_cut_of_pydantics_schema_to_the_byte(
    model: type[BaseModel],
) -> None:
    assert json.dumps(compact_schema(model)) == json.dumps(_reference_cut(model))


def test_an_annotation_the_cut_cannot_read_is_an_error_not_a_wrong_schema() -> None:
    class Odd(Model):
        when: complex

    with pytest.raises(TypeError, match="cannot read the annotation"):
        compact_schema(Odd)


def test_a_union_cut_to_identical_alternatives_becomes_one_and_never_one_of() -> None:
    events = compact_schema(ActionResult)["properties"]["events"]
    assert events == {"type": "array", "items": {"type": "object"}}
    error = compact_schema(ActionResult)["properties"]["error"]
    assert error == {"anyOf": [{"type": "object"}, {"type": "null"}]}
    assert "oneOf" not in json.dumps([compact_schema(m) for m in RESULT_MODELS])


def test_each_result_kind_and_the_offer_and_outcome_items_carry_their_titles() -> None:
    titles = {m.__name__: compact_schema(m)["title"] for m in RESULT_MODELS}
    assert titles == {
        "ActionResult": "ActionResult",
        "WaitResult": "WaitResult",
        "SeatState": "SeatState",
    }
    for model in (ActionResult, WaitResult):
        properties = compact_schema(model)["properties"]
        offer = properties["live_offers"]["items"]
        outcome, null = properties["outcome"]["anyOf"]
        assert (offer["title"], outcome["title"], null) == (
            "LiveOffer",
            "SeatOutcome",
            {"type": "null"},
        )
        assert offer["required"] == list(LiveOffer.model_fields)
        assert outcome["properties"]["status"] == {"type": "string", "enum": ["deal", "no_deal"]}
        assert offer["additionalProperties"] is False and outcome["additionalProperties"] is False


def test_cutting_leaves_the_models_own_schema_untouched() -> None:
    before = copy.deepcopy(ActionResult.model_json_schema())
    compact_schema(ActionResult)
    assert ActionResult.model_json_schema() == before

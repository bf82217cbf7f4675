"""A model's JSON schema cut to its top level: what the seat tools publish as output schemas.

``tools/list`` repeats every tool's output schema, and pydantic's schema of a seat result
repeats the definitions of every event, offer and outcome (``$defs``) in each: about 85 KB for
eight tools, which a client downloads and compiles into validators in every session (the
TypeScript SDK about 1.3 s, jsonschema about 150 ms a tool). The schema published instead is
the model's own schema cut to one level: its title (the class's name) and description, every
top-level field with its JSON type (and its ``enum`` or ``const``), which fields are required,
and no other field; a nested object is only said to be an object, a list only to hold objects,
except the small items a client reads most (``ITEM_MODELS``: an offer and a seat's outcome,
all scalars), which keep their title and fields, so that a typed client (fastmcp builds classes
from titles) gets ``LiveOffer`` and ``SeatOutcome`` back rather than one ``Root`` for every
result, at a few hundred bytes. Field titles, descriptions, defaults and constraints are left
out.

Cutting only widens: every value the model's full schema accepts, this one accepts, so a client
that validates ``structuredContent`` (as the MCP SDKs do) keeps validating it and never refuses
a real result. The exact shape of the nested values is the models' in ``dealroom.protocol``
(``ActionResult.model_json_schema()``), and the server checks every result against the model
before sending it.

The cut is read from the model's field annotations, not from pydantic's generated schema: it
is the same schema (``tests/protocol/test_compact_schema.py`` compares the two for every wire
model), without generating the nested definitions only to drop them, which was a third of
building the seat tools when ``dealroom serve`` starts. An annotation it cannot read raises
TypeError, so a new kind of field fails that test rather than publishing a wrong schema. Pure.
"""

from __future__ import annotations

import inspect
import json
import types
from decimal import Decimal
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from dealroom.protocol.observation import LiveOffer
from dealroom.protocol.outcome import SeatOutcome

JsonSchema = dict[str, Any]

ITEM_MODELS: tuple[type[BaseModel], ...] = (LiveOffer, SeatOutcome)
"""Nested models published with their title and fields (each all scalars), not as bare
objects."""

_SCALARS: dict[type, JsonSchema] = {
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    str: {"type": "string"},
    type(None): {"type": "null"},
    Decimal: {"anyOf": [{"type": "number"}, {"type": "string"}]},  # pydantic takes both
}
_LITERAL_TYPES: dict[type, str] = {bool: "boolean", int: "integer", str: "string"}


def compact_schema(model: type[BaseModel]) -> JsonSchema:
    """``model``'s JSON schema (validation mode) cut to its top level, with its title."""
    schema = _fields(model)
    if "__doc__" in vars(model) and model.__doc__:
        schema["description"] = inspect.cleandoc(model.__doc__)
    return schema


def _fields(model: type[BaseModel]) -> JsonSchema:
    fields = model.model_fields
    schema: JsonSchema = {"type": "object", "title": model.__name__}
    if fields:  # a model without fields is only said to be an object, as pydantic's is cut
        schema["properties"] = {name: _cut(field.annotation) for name, field in fields.items()}
        required = [name for name, field in fields.items() if field.is_required()]
        if required:
            schema["required"] = required
        if model.model_config.get("extra") == "forbid":
            schema["additionalProperties"] = False
    return schema


def _cut(annotation: Any) -> JsonSchema:
    """The schema of a value of ``annotation``, a nested object cut to its type."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _cut(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return _union([_cut(alternative) for alternative in get_args(annotation)])
    if origin is Literal:
        return _literal(get_args(annotation))
    if origin in (tuple, list):
        items = get_args(annotation)
        if origin is tuple and items and (len(items) != 2 or items[1] is not Ellipsis):
            return {"type": "array"}  # a fixed-length tuple: its prefixItems are cut
        return {"type": "array", "items": _cut(items[0])} if items else {"type": "array"}
    if origin is dict or annotation is dict:
        return {"type": "object"}
    if annotation in ITEM_MODELS:
        return _fields(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {"type": "object"}
    if annotation in _SCALARS:
        return dict(_SCALARS[annotation])
    raise TypeError(f"compact_schema cannot read the annotation {annotation!r}")


def _literal(values: tuple[object, ...]) -> JsonSchema:
    kinds = {_LITERAL_TYPES.get(type(value)) for value in values}
    if len(kinds) != 1 or None in kinds:
        raise TypeError(f"compact_schema cannot read Literal{list(values)!r}")
    schema: JsonSchema = {"type": kinds.pop()}
    if len(values) == 1:
        schema["const"] = values[0]
    else:
        schema["enum"] = list(values)
    return schema


def _union(alternatives: list[JsonSchema]) -> JsonSchema:
    """``anyOf`` of the distinct alternatives (never ``oneOf``: once cut, several alternatives
    may accept one value, which ``oneOf`` would refuse); one alternative stands alone."""
    distinct: dict[str, JsonSchema] = {}
    for alternative in alternatives:
        for part in alternative.get("anyOf", [alternative]):  # pydantic flattens nested unions
            distinct.setdefault(json.dumps(part, sort_keys=True), part)
    if len(distinct) == 1:
        return next(iter(distinct.values()))
    return {"anyOf": list(distinct.values())}

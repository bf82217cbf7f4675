"""A model's JSON schema cut to its top level: what the seat tools publish as output schemas.

``tools/list`` repeats every tool's output schema, and pydantic's schema of a seat result
repeats the definitions of every event, offer and outcome (``$defs``) in each: about 85 KB for
eight tools, which a client downloads and compiles into validators in every session (the
TypeScript SDK about 1.3 s, jsonschema about 150 ms a tool). The schema published instead is
the model's own schema cut to one level: every top-level field with its JSON type (and its
``enum`` or ``const``), which fields are required, and no other field; a nested object is only
said to be an object, a list only to hold objects. Titles, descriptions, defaults and
constraints are left out.

Cutting only widens: every value the model's full schema accepts, this one accepts, so a client
that validates ``structuredContent`` (as the MCP SDKs do) keeps validating it and never refuses
a real result. The exact shape of the nested values is the models' in ``dealroom.protocol``
(``ActionResult.model_json_schema()``), and the server checks every result against the model
before sending it. Pure: pydantic only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic.json_schema import models_json_schema

from dealroom.protocol._base import Model

JsonSchema = dict[str, Any]

_SCALAR_KEYS = ("type", "enum", "const")
"""What is kept of a schema that is not an object, a list or a union."""


def compact_schemas(models: Sequence[type[Model]]) -> list[JsonSchema]:
    """Each model's JSON schema cut to its top level (see the module's docstring), in order.

    The models' full schemas are generated together, their shared definitions once (half the
    time of one by one: this runs when an MCP server starts).
    """
    refs, top = models_json_schema([(model, "validation") for model in models])
    defs: dict[str, JsonSchema] = top.get("$defs", {})
    compact: list[JsonSchema] = []
    for model in models:
        full = _resolved(refs[(model, "validation")], defs)
        cut = _cut(full, defs, depth=1)
        if "description" in full:
            cut["description"] = full["description"]
        compact.append(cut)
    return compact


def compact_schema(model: type[Model]) -> JsonSchema:
    """``model``'s JSON schema cut to its top level."""
    return compact_schemas([model])[0]


def _cut(node: JsonSchema, defs: dict[str, JsonSchema], depth: int) -> JsonSchema:
    node = _resolved(node, defs)
    union = node.get("anyOf", node.get("oneOf"))
    if union is not None:
        return _union([_cut(alt, defs, depth) for alt in union])
    kind = node.get("type")
    if kind == "object":
        return _object(node, defs, depth)
    if kind == "array":
        items: JsonSchema | None = node.get("items")
        cut: JsonSchema = {"type": "array"}
        if items is not None:
            cut["items"] = _cut(items, defs, depth)
        return cut
    return {key: node[key] for key in _SCALAR_KEYS if key in node}


def _object(node: JsonSchema, defs: dict[str, JsonSchema], depth: int) -> JsonSchema:
    properties = node.get("properties")
    if depth <= 0 or not properties:
        return {"type": "object"}
    cut: JsonSchema = {
        "type": "object",
        "properties": {name: _cut(sub, defs, depth - 1) for name, sub in properties.items()},
    }
    if node.get("required"):
        cut["required"] = list(node["required"])
    if node.get("additionalProperties") is False:
        cut["additionalProperties"] = False
    return cut


def _union(alternatives: list[JsonSchema]) -> JsonSchema:
    """``anyOf`` of the distinct alternatives (never ``oneOf``: once cut, several alternatives
    may accept one value, which ``oneOf`` would refuse); one alternative stands alone."""
    distinct: dict[str, JsonSchema] = {}
    for alternative in alternatives:
        if not alternative:  # an alternative that accepts anything makes the union accept it
            return {}
        distinct.setdefault(json.dumps(alternative, sort_keys=True), alternative)
    if len(distinct) == 1:
        return next(iter(distinct.values()))
    return {"anyOf": list(distinct.values())}


def _resolved(node: JsonSchema, defs: dict[str, JsonSchema]) -> JsonSchema:
    """``node`` with a local ``$ref`` replaced by its definition (siblings win)."""
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return node
    name = ref.removeprefix("#/$defs/")
    if name == ref or name not in defs:
        raise ValueError(f"unresolvable $ref {ref!r}")
    siblings = {key: value for key, value in node.items() if key != "$ref"}
    return {**defs[name], **siblings}

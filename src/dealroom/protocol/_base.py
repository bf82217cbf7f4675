"""The one base model and the money type shared by every wire model."""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import math
import sys
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainSerializer

CENT = Decimal("0.01")

Role = Literal["buyer", "seller"]
ROLES: tuple[Role, Role] = ("buyer", "seller")


def other(role: Role) -> Role:
    """The seat across the table."""
    return "seller" if role == "buyer" else "buyer"


def _money_json(value: Decimal) -> float:
    # A cent-quantised Decimal below 1e13 has at most 15 significant digits, so the float's
    # shortest repr prints exactly the recorded digits: JSON readers get a plain number.
    return float(value)


def _whole_cents(value: Decimal) -> Decimal:
    if value != value.quantize(CENT):
        raise ValueError("money is a whole number of cents (at most 2 decimal places)")
    return value.quantize(CENT)


Money = Annotated[
    Decimal,
    Field(allow_inf_nan=False),
    AfterValidator(_whole_cents),
    PlainSerializer(_money_json, return_type=float, when_used="json"),
]
"""An amount of money: a Decimal in whole cents, written to JSON as a number."""


def to_cents(value: Decimal | float | int | str) -> Decimal:
    """Quantise an amount to cents (half up).

    Raises ValueError if it is not a finite number, or too large to carry cents within the
    decimal context's precision (27 digits or more before the point).
    """
    try:
        amount = value if isinstance(value, Decimal) else Decimal(str(value))
    except (InvalidOperation, ValueError) as exc:
        raise ValueError(f"not a number: {value!r}") from exc
    if not amount.is_finite():
        raise ValueError(f"not a finite number: {value!r}")
    try:
        return amount.quantize(CENT, rounding=ROUND_HALF_UP)
    except InvalidOperation as exc:
        raise ValueError(f"too large to quantise to cents: {value!r}") from exc


def round_ms(seconds: float) -> float:
    """``round(seconds, 3)``, the same float to the bit (the clock's resolution), cheaply.

    ``round`` with digits formats and parses a decimal string (about a microsecond); the clock
    rounds several times per simulated action. In the usual case the scaled value is far from
    a tie, so rounding it to a whole number of milliseconds is exact and ``ms / 1000`` is the
    nearest float to the rounded decimal, which is what ``round`` returns. Ties, zeros (whose
    sign ``round`` keeps), huge values, infinities and NaN go to ``round`` itself.
    """
    scaled = seconds * 1000.0
    if -1e12 < scaled < 1e12:  # |error of the product| < 1e-4 here; false for inf and NaN
        ms = round(scaled)
        if ms and -0.499 < scaled - ms < 0.499:
            return ms / 1000
    return round(seconds, 3)


def is_finite_number(value: object) -> bool:
    """True for an int, float or Decimal that is finite."""
    if isinstance(value, Decimal):
        return value.is_finite()
    if isinstance(value, (int, float)):
        return math.isfinite(value)
    return False


def field_docstrings(cls: type) -> dict[str, str]:
    """The docstrings written under the fields of ``cls``'s own body, by field name (none for
    a class whose source cannot be read, or that is defined inside a function)."""
    return _module_docstrings(cls.__module__).get(cls.__qualname__, {})


@functools.cache
def _module_docstrings(module_name: str) -> dict[str, dict[str, str]]:
    """Every class's field docstrings in a module, by qualified class name: the module's
    source is parsed once (``inspect.getsource`` of a class parses its whole module each
    time)."""
    module = sys.modules.get(module_name)
    try:
        tree = ast.parse(inspect.getsource(module)) if module is not None else None
    except (OSError, TypeError, SyntaxError):
        tree = None
    found: dict[str, dict[str, str]] = {}
    if tree is not None:
        _collect(tree.body, "", found)
    return found


def _collect(body: list[ast.stmt], prefix: str, found: dict[str, dict[str, str]]) -> None:
    for node in body:
        if isinstance(node, ast.ClassDef):
            name = prefix + node.name
            found.setdefault(name, _docs_of(node.body))
            _collect(node.body, name + ".", found)


def _docs_of(body: list[ast.stmt]) -> dict[str, str]:
    docs: dict[str, str] = {}
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _describe_fields(schema: dict[str, Any], cls: type) -> None:
    """Give each property of ``cls``'s JSON schema its field's docstring as its description,
    unless it has one (from ``Field(description=...)``); inherited fields too."""
    properties = schema.get("properties", {})
    for klass in reversed(cls.__mro__):
        if klass in (Model, BaseModel) or not issubclass(klass, Model):
            continue
        for name, doc in field_docstrings(klass).items():
            prop = properties.get(name)
            if prop is not None and "description" not in prop:
                prop["description"] = doc


class Model(BaseModel):
    """Base of every wire model: immutable, strict about unknown fields, self-describing.

    Field docstrings become JSON-schema descriptions, which is what an LLM reads in a tool call.
    They are read when a schema is generated (``_describe_fields``), not when a class is built:
    pydantic's ``use_attribute_docstrings`` walks the stack frames of every class definition on
    Python 3.11, which was half the time of importing the protocol (``dealroom serve``'s
    start-up) for schemas that most processes never generate.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        json_schema_extra=_describe_fields,
        ser_json_inf_nan="strings",
    )


M = TypeVar("M", bound=BaseModel)

# The setters of BaseModel's four instance slots, looked up once: ``trusted`` runs several times
# per simulated event.
_new = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


_ALL_FIELDS: dict[type[BaseModel], set[str]] = {}
"""Each trusted class's field names: the ``__pydantic_fields_set__`` its trusted instances
share. Never mutated: pydantic adds to a model's fields set only on attribute assignment,
which frozen models refuse, and ``model_copy`` copies the set before adding to it."""


def _fields_of(cls: type[BaseModel]) -> set[str]:
    fields = _ALL_FIELDS.get(cls)
    if fields is None:
        fields = _ALL_FIELDS[cls] = set(cls.model_fields)
    return fields


def trusted(cls: type[M], **values: Any) -> M:
    """Build a model from values that are valid by construction, without validating again.

    Only for the referee's hot path (events and observations built from its own validated state);
    ``values`` must name every field. Equivalent to ``cls.model_construct``, several times faster.
    Only for frozen models (their instances share one fields set).
    """
    obj = _new(cls)
    _set_dict(obj, values)
    _set_fields_set(obj, _fields_of(cls))
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


def trusted_builder(cls: type[M]) -> Callable[[dict[str, Any]], M]:
    """``trusted`` for one class, taking the field values as a dict the model then owns.

    For the simulation's hottest constructions (an event or an observation per action or wake):
    a dict display and one call instead of keyword packing and a class lookup. The dict must
    name every field, in the class's field order (serialisation follows the dict's order), and
    must not be used again by the caller.
    """
    fields = _fields_of(cls)

    def build(
        values: dict[str, Any],
        new: Callable[[type[M]], M] = _new,
        set_dict: Callable[[object, dict[str, Any]], None] = _set_dict,
        set_fields_set: Callable[[object, set[str]], None] = _set_fields_set,
        set_extra: Callable[[object, None], None] = _set_extra,
        set_private: Callable[[object, None], None] = _set_private,
    ) -> M:
        obj = new(cls)
        set_dict(obj, values)
        set_fields_set(obj, fields)
        set_extra(obj, None)
        set_private(obj, None)
        return obj

    return build

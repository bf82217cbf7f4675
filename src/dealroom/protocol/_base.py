"""The one base model and the money type shared by every wire model."""

from __future__ import annotations

import math
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


def is_finite_number(value: object) -> bool:
    """True for an int, float or Decimal that is finite."""
    if isinstance(value, Decimal):
        return value.is_finite()
    if isinstance(value, (int, float)):
        return math.isfinite(value)
    return False


class Model(BaseModel):
    """Base of every wire model: immutable, strict about unknown fields, self-describing.

    Field docstrings become JSON-schema descriptions, which is what an LLM reads in a tool call.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        use_attribute_docstrings=True,
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


def trusted(cls: type[M], **values: Any) -> M:
    """Build a model from values that are valid by construction, without validating again.

    Only for the referee's hot path (events and observations built from its own validated state);
    ``values`` must name every field. Equivalent to ``cls.model_construct``, several times faster.
    """
    obj = _new(cls)
    _set_dict(obj, values)
    _set_fields_set(obj, set(values))
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj

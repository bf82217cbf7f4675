"""Rule violations: one error type with a stable code per rule.

RuleViolation            an action the referee refused; the negotiation is unchanged
  .code: ErrorCode       stable, machine-readable
  .message: str          one sentence a model can act on
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    """Stable codes for every refused action."""

    OFFER_NOT_FOUND = "offer_not_found"
    OFFER_NOT_LIVE = "offer_not_live"
    OWN_OFFER = "own_offer"
    PRICE_NOT_FINITE = "price_not_finite"
    PRICE_OUT_OF_RANGE = "price_out_of_range"
    NEGOTIATION_CLOSED = "negotiation_closed"
    MESSAGE_TOO_LONG = "message_too_long"
    MESSAGE_EMPTY = "message_empty"
    DEADLINE_PASSED = "deadline_passed"
    INVALID_ACTION = "invalid_action"


class RuleViolation(Exception):
    """An action the referee refused. The negotiation state is exactly as before the action."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

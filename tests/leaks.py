"""The check every privacy test makes: is a private money amount printed in a text?"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal

TWO_SIDED_FIELDS = ("buyer_value", "seller_cost", "buyer_surplus", "seller_surplus", "gains")


def forms(value: Decimal) -> list[str]:
    """Every way a money amount is printed: 1234.5, 1234.50, 1,234.50."""
    return sorted({f"{value:.2f}", f"{value:,.2f}", repr(float(value))})


def leaked(
    text: str, value: Decimal, public: set[Decimal], fields: Iterable[str] = TWO_SIDED_FIELDS
) -> str | None:
    """The form of ``value`` found in ``text``, unless it was offered in public anyway, or
    the first of ``fields`` (private fields' names, quoted as JSON keys) found in it."""
    if value in public:  # the other side offered exactly its own value: public information
        return None
    for form in forms(value):
        if re.search(rf"(?<![\d.,]){re.escape(form)}(?![\d])", text):
            return form
    for name in fields:
        if f'"{name}"' in text:
            return name
    return None


def stated_range(briefing: str) -> tuple[Decimal, Decimal]:
    """The amounts a ``value_range`` briefing says the other side's number lies between (what
    it may state of it: ``people_text.value_range_rule``)."""
    found = re.search(r"that is between \$([\d,]+\.\d\d) and \$([\d,]+\.\d\d)\.", briefing)
    assert found is not None, briefing
    low, high = (Decimal(amount.replace(",", "")) for amount in found.groups())
    return low, high

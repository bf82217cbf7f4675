"""The scripted agents' price arithmetic: the integer fast path gives the Decimal rule's result."""

import math
from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dealroom.agents._pricing import as_money, money_of
from dealroom.protocol._base import CENT


def decimal_rule(fraction: float, list_price: Decimal) -> Decimal:
    """The rule as written first: nine places of the fraction, times the price, half up."""
    if not math.isfinite(fraction):
        raise ValueError(fraction)
    return (Decimal(repr(round(fraction, 9))) * list_price).quantize(CENT, rounding=ROUND_HALF_UP)


prices = st.integers(min_value=1, max_value=10**14).map(lambda cents: Decimal(cents).scaleb(-2))
ties = st.integers(min_value=0, max_value=2 * 10**10).map(lambda n: (2 * n + 1) / (2 * 10**9))
fractions = st.one_of(
    st.floats(min_value=-3, max_value=3),
    st.floats(min_value=0, max_value=200),
    st.integers(min_value=0, max_value=3 * 10**9).map(lambda n: n / 10**9),
    ties,
    st.sampled_from([0.0, -0.0, 5e-10, 1e-9, 1.5e-9, 99.9999999995, 1e11]),
)


@given(fraction=fractions, list_price=prices)
def test_money_of_is_the_decimal_rule_to_the_digit(fraction: float, list_price: Decimal) -> None:
    expected = decimal_rule(fraction, list_price)
    got = money_of(fraction, list_price, int(list_price * 100))
    assert got == expected
    assert got.as_tuple() == expected.as_tuple()  # same sign and exponent: prints the same
    assert as_money(fraction, list_price).as_tuple() == expected.as_tuple()


@pytest.mark.parametrize("fraction", [math.inf, -math.inf, math.nan])
def test_a_fraction_that_is_not_finite_is_refused(fraction: float) -> None:
    with pytest.raises(ValueError, match="not a finite number"):
        as_money(fraction, Decimal("100.00"))

"""The clock's rounding: ``round_ms`` is ``round(x, 3)`` to the bit, only cheaper."""

import math
import struct

from hypothesis import given
from hypothesis import strategies as st

from dealroom.protocol._base import round_ms


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


near_ties = st.integers(min_value=-(10**12), max_value=10**12).map(lambda n: (2 * n + 1) / 2000)
sums = st.tuples(
    st.integers(min_value=0, max_value=10**7), st.floats(min_value=0, max_value=1e4)
).map(lambda pair: pair[0] / 1000 + pair[1])


@given(st.one_of(st.floats(), st.floats(min_value=-1e4, max_value=1e4), near_ties, sums))
def test_round_ms_is_round_to_three_places_bit_for_bit(x: float) -> None:
    expected, got = round(x, 3), round_ms(x)
    assert bits(got) == bits(expected) or (math.isnan(got) and math.isnan(expected))


def test_the_cases_the_fast_path_leaves_to_round() -> None:
    for x in [0.0, -0.0, -0.0004, 0.0004, 0.0005, 0.0015, 1e13, -1e13, math.inf, -math.inf]:
        assert bits(round_ms(x)) == bits(round(x, 3)), x
    assert math.isnan(round_ms(math.nan))

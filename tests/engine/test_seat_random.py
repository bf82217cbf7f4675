"""SeatRandom is random.Random seeded on its first draw: the same numbers, whatever is drawn."""

import copy
import pickle
import random

from hypothesis import given
from hypothesis import strategies as st

from dealroom.engine.match import SeatRandom, seat_rng
from dealroom.protocol.secret import Secret

seeds = st.one_of(st.integers(min_value=0, max_value=2**70), st.text(max_size=40))
draws = st.lists(
    st.sampled_from(
        [
            lambda r: r.random(),
            lambda r: r.getrandbits(1),
            lambda r: r.getrandbits(77),
            lambda r: r.randint(-5, 10**12),
            lambda r: r.uniform(2.0, 3.0),
            lambda r: r.gauss(0.0, 1.0),
            lambda r: r.choice("abcdefg"),
            lambda r: r.sample(range(100), 5),
            lambda r: r.randbytes(9),
            lambda r: r.getstate(),
            lambda r: r.shuffle(x := list(range(20))) or x,
        ]
    ),
    max_size=12,
)


@given(seed=seeds, calls=draws)
def test_it_draws_what_random_random_draws(seed: int | str, calls: list) -> None:
    lazy, eager = SeatRandom(seed), random.Random(seed)
    assert [call(lazy) for call in calls] == [call(eager) for call in calls]
    assert lazy.getstate() == eager.getstate()


@given(seed=seeds, before=st.integers(min_value=0, max_value=3))
def test_copies_pickles_and_reseeding_keep_the_sequence(seed: int | str, before: int) -> None:
    lazy, eager = SeatRandom(seed), random.Random(seed)
    for _ in range(before):
        assert lazy.random() == eager.random()
    expected = copy.copy(eager).random()
    for twin in (copy.copy(lazy), copy.deepcopy(lazy), pickle.loads(pickle.dumps(lazy))):
        assert twin.getstate() == eager.getstate()
        assert twin.random() == expected
    lazy.seed("again")
    assert lazy.random() == random.Random("again").random()
    restored = SeatRandom(seed)
    restored.setstate(eager.getstate())
    assert restored.random() == eager.random()


def test_seat_generators_are_seat_randoms_with_the_seat_seed() -> None:
    assert seat_rng(3, "s1", "buyer").random() == random.Random("3:s1:buyer").random()
    secret = seat_rng(Secret(b"k" * 32), "s1", "seller")
    assert isinstance(secret, SeatRandom)
    assert secret.random() != seat_rng(Secret(b"j" * 32), "s1", "seller").random()

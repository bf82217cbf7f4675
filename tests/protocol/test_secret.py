"""Run secrets: parsing, strength, hiding, and the keyed draws they give."""

from __future__ import annotations

import pickle

import pytest

from dealroom.engine.match import seat_rng
from dealroom.protocol import TIERS
from dealroom.protocol.generator import generate, scenario_at
from dealroom.protocol.secret import Secret, SecretError, seed_from_json, seed_json

KEY = Secret(bytes(range(32)))


def test_a_fresh_secret_has_256_bits_and_two_are_never_equal() -> None:
    first, second = Secret.new(), Secret.new()
    assert len(first.key) == 32 and first != second


@pytest.mark.parametrize(
    ("text", "mentions"),
    [
        ("ab" * 15, "at least 128 bits (32 hex digits); this one has 120"),
        ("", "this one has 0"),
        ("xyz", "hex digits"),
        ("abc", "even number"),
        ("0x" + "ab" * 16, "hex digits"),
    ],
)
def test_weak_or_malformed_secrets_are_refused_in_one_line(text: str, mentions: str) -> None:
    with pytest.raises(SecretError) as caught:
        Secret.from_hex(text)
    assert mentions in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "key",
    [
        bytes(16),  # one byte over and over
        bytes.fromhex("deadbeef" * 4),  # a short pattern repeated
        bytes.fromhex("0123456789" * 4),  # a pattern that does not divide the length
        bytes(range(32)),  # counting
        bytes(range(250, 202, -3)),  # counting down by a step
        bytes(15) + b"\x01",  # two distinct bytes
    ],
)
def test_a_given_secret_with_no_entropy_is_refused_in_one_line(key: bytes) -> None:
    with pytest.raises(SecretError) as caught:
        Secret.chosen(key.hex())
    message = str(caught.value)
    assert "CSPRNG" in message and "\n" not in message and key.hex() not in message
    assert Secret.from_hex(key.hex()).key == key  # a secret read back from a store is kept


def test_fresh_and_derived_secrets_are_never_refused_as_weak() -> None:
    for _ in range(1_000):
        Secret.chosen(Secret.new().hex())
        Secret.chosen(Secret.new().hex()[:32])


def test_a_secret_round_trips_through_hex_pickle_and_the_stored_form() -> None:
    assert Secret.from_hex(KEY.hex()) == KEY
    assert Secret.from_hex(" " + KEY.hex().upper() + "\n") == KEY
    assert pickle.loads(pickle.dumps(KEY)) == KEY  # tournaments ship jobs to workers
    assert seed_from_json(seed_json(KEY)) == KEY
    assert seed_json(KEY) == {"secret": KEY.hex()}
    assert seed_from_json(seed_json(7)) == 7
    assert seed_from_json({}, default=3) == 3


def test_the_key_never_shows_in_a_repr() -> None:
    assert repr(KEY) == "Secret(<hidden>)"
    assert KEY.hex() not in repr(KEY) and KEY.hex() not in str(KEY)


def test_scenarios_under_a_secret_are_deterministic_and_differ_from_every_other_secret() -> None:
    assert generate(5, seed=KEY) == generate(5, seed=KEY)
    assert generate(5, seed=KEY) != generate(5, seed=Secret(bytes(range(1, 33))))
    assert generate(5, seed=KEY) != generate(5, seed=0)


def test_tiers_stay_paired_under_a_secret() -> None:
    for index in range(20):
        low, mid, high = (scenario_at(KEY, index, tier) for tier in TIERS)
        fractions = {
            (
                round(float(s.buyer_value / s.list_price), 3),
                round(float(s.seller_cost / s.list_price), 3),
            )
            for s in (low, mid, high)
        }
        # The same midpoint and gains, as fractions of each list price (up to cent rounding).
        assert len({(round(b, 2), round(c, 2)) for b, c in fractions}) == 1
        assert len({low.id, mid.id, high.id}) == 3


def test_house_draws_under_a_secret_are_keyed_by_it() -> None:
    sid = scenario_at(KEY, 0, "mid").id
    draws = [seat_rng(KEY, sid, "seller").random() for _ in range(2)]
    assert draws[0] == draws[1]
    assert seat_rng(Secret.new(), sid, "seller").random() != draws[0]
    assert seat_rng(KEY, sid, "buyer").random() != draws[0]
    # Not the public derivation of any small seed either.
    assert draws[0] not in {seat_rng(s, sid, "seller").random() for s in range(1000)}

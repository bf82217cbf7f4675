"""Scripted agents are scale-free and reproducible."""

import pytest

from dealroom.agents import entries, resolve
from dealroom.engine.match import play
from dealroom.protocol.generator import generate

NAMES = [entry.name for entry in entries()]

# Mid and high tiers only: at $10-$100 a cent is up to 1e-3 of the price, so rounding to cents
# alone moves shares by more than the tolerance (and can flip a near-tie at the deadline).
SCALE_SCENARIOS = generate(2, seed=21, tiers=["mid", "high"])


@pytest.mark.parametrize("seller", NAMES)
@pytest.mark.parametrize("buyer", NAMES)
def test_multiplying_every_price_by_1000_leaves_the_outcome_unchanged(
    buyer: str, seller: str
) -> None:
    pair = resolve(buyer), resolve(seller)
    for scenario in SCALE_SCENARIOS:
        small = play(scenario, *pair, seed=7).outcome
        large = play(scenario.scaled(1000), *pair, seed=7).outcome
        assert large.status == small.status, scenario.id
        assert large.end_reason == small.end_reason, scenario.id
        if small.seller_share is not None:
            assert large.seller_share == pytest.approx(small.seller_share, abs=1e-3)
            assert large.buyer_share == pytest.approx(small.buyer_share, abs=1e-3)


@pytest.mark.parametrize("name", NAMES)
def test_the_same_seed_gives_a_byte_identical_record(name: str) -> None:
    for scenario in generate(1, seed=22):
        for opponent in ("zic", name):
            for buyer, seller in ((name, opponent), (opponent, name)):
                runs = [
                    play(scenario, resolve(buyer), resolve(seller), names=(buyer, seller), seed=3)
                    for _ in range(2)
                ]
                assert runs[0].model_dump_json() == runs[1].model_dump_json()


def test_zic_with_different_seeds_plays_differently() -> None:
    scenario = generate(1, seed=22, tiers=["mid"])[0]
    zic = resolve("zic")
    records = {play(scenario, zic, zic, seed=seed).model_dump_json() for seed in range(5)}
    assert len(records) == 5

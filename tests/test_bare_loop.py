"""benchmarks/bare_loop.py, the engine benchmark's floor, plays the engine's game: the same
status, price and number of events on every scenario (else its rate would be no floor)."""

from __future__ import annotations

from types import ModuleType

import pytest

from benchmark_support import load_benchmark
from dealroom.agents import resolve
from dealroom.engine.match import play
from dealroom.protocol.generator import generate


@pytest.fixture(scope="module")
def bare_loop() -> ModuleType:
    return load_benchmark("bare_loop", "bare_loop")


@pytest.mark.parametrize("seed", [7, 11])  # 7: the benchmark's own scenarios
def test_the_bare_loop_ends_every_negotiation_as_the_engine_does(
    bare_loop: ModuleType, seed: int
) -> None:
    buyer, seller = resolve("boulware"), resolve("conceder")
    scenarios = generate(100, seed=seed)
    ends = {"deal": 0, "deadline": 0}
    for scenario in scenarios:
        record = play(scenario, buyer, seller)
        price = record.outcome.price
        expected = (None if price is None else int(price * 100), len(record.events))
        assert bare_loop.play(bare_loop.Game.of(scenario)) == expected, scenario.id
        ends["deal" if price is not None else "deadline"] += 1
    assert min(ends.values()) > 10  # both endings are exercised

"""The oracle: best responses known by hand, its bounds, and determinism."""

from __future__ import annotations

import random
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dealroom.analysis.oracle import OracleResult
from dealroom.engine.match import play
from dealroom.play.oracle import (
    DEFAULT_BUDGET,
    NoOracle,
    latest_accept_wake,
    oracle_surplus,
    oracles,
    search,
)
from dealroom.play.registry import resolve
from dealroom.protocol import (
    DEFAULT_RULES,
    TIERS,
    Accept,
    Decision,
    Observation,
    Role,
    Scenario,
    SeatView,
)
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.record import NegotiationRecord

CENT = Decimal("0.01")


def _hand_price(scenario: Scenario, role: Role, e: float, at: float) -> Decimal:
    """A time-dependent agent's worst accepted price at clock time ``at``, from the formula in
    docs/design.md's strategies (opening 1.3 L for a seller, 0.5 L for a buyer), the money rule
    (the fraction rounded to nine places times L, half up to cents) and AC_next's slack of a
    millionth of L."""
    list_price = scenario.list_price
    own = scenario.private_value(role)
    r = float(own / list_price)
    start = max(1.3, r) if role == "seller" else min(0.5, r)
    t = at / scenario.deadline
    fraction = start + (r - start) * t ** (1 / e)
    price = (Decimal(repr(round(fraction, 9))) * list_price).quantize(CENT, ROUND_HALF_UP)
    slack = list_price * Decimal("0.000001")
    if role == "seller":
        return max(own, (max(price, own) - slack).quantize(CENT, ROUND_CEILING))
    return min(own, (min(price, own) + slack).quantize(CENT, ROUND_FLOOR))


def _with_gains(seed: int, tier: str = "mid") -> list[Scenario]:
    return [s for i in range(12) if (s := scenario_at(seed, i, tier)).gains > 0]  # type: ignore[arg-type]


def test_the_latest_useful_wake_leaves_thinking_and_an_accept_before_the_deadline() -> None:
    assert latest_accept_wake(DEFAULT_RULES, 120.0) == 117.999


@pytest.mark.parametrize(("spec", "e"), [("boulware", 0.2), ("linear", 1.0), ("conceder", 2.0)])
def test_a_buyer_against_a_time_dependent_seller_gets_its_price_at_the_last_useful_wake(
    spec: str, e: float
) -> None:
    # The seller reads nothing but the clock: its cheapest acceptable price is its curve at the
    # latest wake whose accept (1 s thinking + 1 s accept) lands before 120 s, i.e. 117.999 s.
    for scenario in _with_gains(3)[:4]:
        found = search(scenario, "buyer", resolve(spec), seed=3)
        price = _hand_price(scenario, "seller", e, 117.999)
        assert found.surplus == max(Decimal(0), scenario.buyer_value - price)
        assert found.exact and found.bound == found.surplus
        assert found.simulations <= 8


def test_a_seller_against_a_boulware_buyer_gets_the_buyers_price_at_the_last_useful_wake() -> None:
    for scenario in _with_gains(4)[:4]:
        found = search(scenario, "seller", resolve("boulware"), seed=4)
        price = _hand_price(scenario, "buyer", 0.2, 117.999)
        assert found.surplus == max(Decimal(0), price - scenario.seller_cost)
        assert found.exact


def test_a_hand_checked_figure() -> None:
    # Scenario 0 of the mid tier under seed 7: L = $1,150, c = $960.42, v = $1,171.71.
    # Boulware's ask at 117.999 s is 1.3 L + (c / L - 1.3) (117.999 / 120)^5 of L =
    # $1,003.5288, $1,003.53 in cents (AC_next's slack, $0.00115, rounds away), so the buyer's
    # best is $1,171.71 - $1,003.53 = $168.18 of the $211.29 of gains (linear got $49.73).
    scenario = scenario_at(7, 0, "mid")
    assert (scenario.list_price, scenario.seller_cost, scenario.buyer_value) == (
        Decimal("1150"),
        Decimal("960.42"),
        Decimal("1171.71"),
    )
    record = _record(scenario, "linear", "boulware", 7)
    assert record.outcome.buyer_surplus == Decimal("49.73")
    found = search(scenario, "buyer", resolve("boulware"), seed=7)
    assert found.surplus == Decimal("168.18")
    assert found.exact
    assert found.policy == "anchor(price=1003.53, at=117.999)"


class AcceptsAboveCost:
    """Never offers; accepts any live offer strictly above its cost."""

    def __init__(self, view: SeatView) -> None:
        self.cost = view.private_value

    def act(self, observation: Observation) -> Decision:
        theirs = observation.their_offer
        if theirs is not None and theirs.price > self.cost:
            return Decision((Accept(offer_id=theirs.offer_id),))
        return Decision()


def accepts_above_cost(view: SeatView, rng: random.Random) -> AcceptsAboveCost:
    del rng
    return AcceptsAboveCost(view)


@pytest.mark.parametrize("index", range(4))
def test_against_a_seller_who_takes_anything_above_cost_the_buyer_keeps_all_but_a_cent(
    index: int,
) -> None:
    # The best response is an offer of c + 1 cent; bisection on price finds it to the cent
    # (gains in the low tier are under 2^14 cents, the bisection's resolution).
    scenario = scenario_at(7, index, "low")
    assert 0 < scenario.gains < Decimal("163.84")
    found = search(scenario, "buyer", accepts_above_cost, seed=7)
    assert found.surplus == scenario.gains - CENT
    assert not found.exact  # a cent short of v - c: a lower bound, honestly labelled
    assert found.simulations <= 40


def test_in_the_high_tier_the_bisection_stops_within_its_resolution() -> None:
    scenario = next(s for i in range(10) if (s := scenario_at(5, i, "high")).gains > 0)
    found = search(scenario, "buyer", accepts_above_cost, seed=5)
    resolution = (scenario.gains / 2**14).quantize(CENT, ROUND_HALF_UP)
    assert scenario.gains - resolution - CENT <= found.surplus < scenario.gains


def test_without_gains_the_oracle_is_no_deal_without_a_simulation() -> None:
    scenario = next(s for i in range(60) if (s := scenario_at(1, i, "mid")).gains <= 0)
    assert search(scenario, "buyer", resolve("linear"), seed=1) == OracleResult(
        Decimal(0), True, 0, Decimal(0), "no deal (v <= c)"
    )


def test_the_search_never_exceeds_its_budget() -> None:
    scenario = scenario_at(5, 0, "high")
    for budget in (1, 5, 17):
        found = search(scenario, "buyer", accepts_above_cost, seed=5, budget=budget)
        assert found.simulations <= budget


def _record(scenario: Scenario, buyer: str, seller: str, seed: int) -> NegotiationRecord:
    return play(scenario, resolve(buyer), resolve(seller), names=(buyer, seller), seed=seed)


# Deterministic counterparts: the search alone (without the record's own play) must reach what
# the agent in the seat reached. ZI-C draws its quotes per wake, so another policy sees other
# draws: only the oracle with the record's own play counted is bound to be at least as high.
PAIRS = [
    ("linear", "boulware"),
    ("micro", "tit_for_tat"),
    ("conceder", "micro"),
    ("nice_tft", "linear"),
    ("boulware", "nice_tft"),
]


@settings(max_examples=60)
@given(
    seed=st.integers(min_value=0, max_value=2**32),
    index=st.integers(min_value=0, max_value=50),
    tier=st.sampled_from(TIERS),
    pair=st.sampled_from(PAIRS),
    role=st.sampled_from(("buyer", "seller")),
)
def test_the_oracle_is_never_below_what_the_seat_reached(
    seed: int, index: int, tier: str, pair: tuple[str, str], role: Role
) -> None:
    scenario = scenario_at(seed, index, tier)  # type: ignore[arg-type]
    record = _record(scenario, *pair, seed)
    got = record.outcome.buyer_surplus if role == "buyer" else record.outcome.seller_surplus
    alone = oracle_surplus(record, role, seed=seed, include_record=False)
    assert isinstance(alone, OracleResult)
    assert alone.surplus >= got
    assert 0 <= alone.surplus <= max(alone.bound, Decimal(0))
    assert alone.simulations <= DEFAULT_BUDGET + 1


@settings(max_examples=10)
@given(seed=st.integers(min_value=0, max_value=2**32), index=st.integers(0, 50))
def test_against_a_random_counterpart_the_records_own_play_keeps_the_oracle_above_it(
    seed: int, index: int
) -> None:
    record = _record(scenario_at(seed, index, "mid"), "linear", "zic", seed)
    found = oracle_surplus(record, "buyer", seed=seed)
    assert isinstance(found, OracleResult)
    assert found.surplus >= record.outcome.buyer_surplus


def test_the_same_input_gives_the_same_result() -> None:
    records = [_record(s, "micro", "zic", 9) for s in _with_gains(9)[:3]]
    records += [_record(s, "tit_for_tat", "boulware", 9) for s in _with_gains(9)[:3]]
    first = [oracle_surplus(r, role, seed=9) for r in records for role in ("buyer", "seller")]
    again = [oracle_surplus(r, role, seed=9) for r in records for role in ("buyer", "seller")]
    assert first == again
    assert oracles(records, seed=9) == oracles(records, seed=9)


def test_the_table_keys_each_seat_by_scenario_role_and_counterpart() -> None:
    scenario = _with_gains(2)[0]
    records = [
        _record(scenario, "linear", "boulware", 2),
        _record(scenario, "micro", "boulware", 2),
    ]
    table = oracles(records, seed=2)
    assert set(table.values) == {
        (scenario.id, "buyer", "boulware"),
        (scenario.id, "seller", "linear"),
        (scenario.id, "seller", "micro"),
    }
    assert not table.skipped
    # One search for the buyer seat against boulware, whichever agent sat there.
    single = oracle_surplus(records[0], "buyer", seed=2)
    assert isinstance(single, OracleResult)
    assert table.values[(scenario.id, "buyer", "boulware")].surplus == single.surplus


def test_a_counterpart_that_is_not_scripted_has_no_oracle() -> None:
    record = _record(_with_gains(2)[0], "linear", "boulware", 2)
    llm = record.model_copy(update={"seller": "llm:gpt-4.1-mini"})
    result = oracle_surplus(llm, "buyer", seed=2)
    assert isinstance(result, NoOracle)
    assert "not a scripted agent" in result.reason
    table = oracles([llm], seed=2)
    assert set(table.values) == {(record.scenario.id, "seller", "linear")}
    assert table.skipped == {(record.scenario.id, "buyer", "linear"): result.reason}


def test_a_wrong_seed_is_caught_by_the_replay() -> None:
    # Under another seed ZI-C draws other quotes: the record is not reproduced.
    record = _record(_with_gains(2)[0], "linear", "zic", 2)
    result = oracle_surplus(record, "buyer", seed=3)
    assert isinstance(result, NoOracle)
    assert "does not reproduce" in result.reason

"""Time-dependent tactics: how fast each concedes, and what that does to the surplus split."""

import random
import statistics
from decimal import Decimal

import pytest

from dealroom.agents import AgentSpecError, resolve
from dealroom.engine.match import play
from dealroom.protocol import OfferMade, Role, Scenario, SeatView
from dealroom.protocol.generator import generate, scenario_at
from dealroom.protocol.record import NegotiationRecord
from dealroom.testing import ScriptedAgent


def silent(view: SeatView, rng: random.Random) -> ScriptedAgent:
    """An opponent that never does anything."""
    return ScriptedAgent([])


def play_alone(spec: str, role: Role, scenario: Scenario) -> NegotiationRecord:
    """``spec`` in ``role`` against a silent opponent."""
    agent = resolve(spec)
    pair = (agent, silent) if role == "buyer" else (silent, agent)
    return play(scenario, *pair, names=(spec, spec))


def own_prices(record: NegotiationRecord, role: Role, until: float = float("inf")) -> list[Decimal]:
    return [
        e.price for e in record.events if isinstance(e, OfferMade) and e.by == role and e.t <= until
    ]


def concession_at(spec: str, role: Role, scenario: Scenario, t: float) -> float:
    """How far the agent has moved from its opening towards its reservation value by time t."""
    prices = own_prices(play_alone(spec, role, scenario), role, until=t * scenario.deadline)
    opening, latest = prices[0], prices[-1]
    return float((latest - opening) / (scenario.private_value(role) - opening))


@pytest.mark.parametrize("role", ["buyer", "seller"])
@pytest.mark.parametrize("index", range(5))
def test_boulware_concedes_later_than_conceder(role: Role, index: int) -> None:
    scenario = scenario_at(2, index, "mid")
    boulware = concession_at("boulware", role, scenario, 0.5)
    conceder = concession_at("conceder", role, scenario, 0.5)
    assert boulware < 0.1 < 0.5 < conceder


@pytest.mark.parametrize("role", ["buyer", "seller"])
def test_linear_concedes_about_half_way_by_half_time(role: Role) -> None:
    scenario = scenario_at(2, 0, "high")
    assert 0.3 < concession_at("linear", role, scenario, 0.5) < 0.6


@pytest.mark.parametrize("opponent", ["silent", "conceder", "boulware", "zic"])
@pytest.mark.parametrize("role", ["buyer", "seller"])
def test_hardliner_never_moves(role: Role, opponent: str) -> None:
    other = silent if opponent == "silent" else resolve(opponent)
    hardliner = resolve("hardliner")
    for scenario in generate(3, seed=4):
        pair = (hardliner, other) if role == "buyer" else (other, hardliner)
        record = play(scenario, *pair)
        assert len(set(own_prices(record, role))) == 1


def mean_share(spec: str, role: Role, pool: tuple[str, ...], scenarios: list[Scenario]) -> float:
    """Mean surplus share of ``spec`` in ``role`` over the deals it made against the pool."""
    agent = resolve(spec)
    shares: list[float] = []
    for name in pool:
        other = resolve(name)
        for scenario in scenarios:
            pair = (agent, other) if role == "buyer" else (other, agent)
            outcome = play(scenario, *pair).outcome
            share = outcome.buyer_share if role == "buyer" else outcome.seller_share
            if share is not None:
                shares.append(share)
    assert len(shares) > 30, "too few deals to compare"
    return statistics.fmean(shares)


@pytest.mark.parametrize("role", ["buyer", "seller"])
def test_the_later_a_tactic_concedes_the_larger_its_share_of_the_deals_it_makes(
    role: Role,
) -> None:
    scenarios = [s for s in generate(34, seed=9) if s.gains > 0]  # about 100
    pool = ("linear", "conceder", "zic")
    boulware, linear, conceder = (
        mean_share(spec, role, pool, scenarios) for spec in ("boulware", "linear", "conceder")
    )
    assert boulware > linear > conceder


def extrapolated_end(record: NegotiationRecord, role: Role, until: float) -> Decimal:
    """The attack on a linear tactic: the line through its first and last offer before ``until``
    seconds, read at the deadline (the first offer, its opening, is decided at 0 and lands
    ``first.t`` later, as every later one does)."""
    offers = [
        e for e in record.events if isinstance(e, OfferMade) and e.by == role and e.t <= until
    ]
    first, last = offers[0], offers[-1]
    slope = (last.price - first.price) / Decimal(str(last.t - first.t))
    return first.price + slope * Decimal(str(record.scenario.deadline))


def test_a_linear_seller_reveals_its_cost_by_39_s_and_noise_hides_it() -> None:
    scenarios = [s for s in generate(20, seed=3, tiers=["mid"]) if s.gains > 0][:10]
    exact, hidden = 0, 0
    for index, scenario in enumerate(scenarios):
        cent = Decimal("0.01") * 2
        plain = play_alone("linear", "seller", scenario)
        exact += abs(extrapolated_end(plain, "seller", 39) - scenario.seller_cost) <= cent
        noisy = play(scenario, silent, resolve("linear:noise=0.3"), seed=index)
        gap = extrapolated_end(noisy, "seller", 39) - scenario.seller_cost
        hidden += gap > scenario.list_price * Decimal("0.005")  # ends short: above its cost
        assert min(own_prices(noisy, "seller")) >= scenario.seller_cost  # never past its cost
        assert play(scenario, silent, resolve("linear:noise=0.3"), seed=index) == noisy  # seeded
    assert exact == len(scenarios)  # the classic tactic: to within two cents, every time
    assert hidden >= len(scenarios) - 2  # with noise the estimate only bounds it (a 0..30% band)


def test_noise_is_off_by_default_and_out_of_range_values_are_refused() -> None:
    scenario = scenario_at(0, 0, "mid")
    for spec in ("boulware", "linear", "conceder", "hardliner"):
        default, off = (play_alone(s, "seller", scenario) for s in (spec, f"{spec}:noise=0"))
        assert (default.events, default.outcome) == (off.events, off.outcome)
    for bad in ("-0.1", "1", "2"):
        with pytest.raises(ValueError, match="'noise' must be in"):
            resolve(f"linear:noise={bad}")


@pytest.mark.parametrize("finish", [0.5, 0.7])
def test_finish_ends_the_curve_at_that_share_of_the_deadline(finish: float) -> None:
    scenario = scenario_at(0, 3, "mid")
    record = play_alone(f"linear:finish={finish}", "seller", scenario)
    end = finish * scenario.deadline
    offers = [e for e in record.events if isinstance(e, OfferMade) and e.by == "seller"]
    last = offers[-1].price
    assert last == scenario.seller_cost  # the curve's end: its reservation
    # It gets there at its first wake after the finish (a step of 10 s, then a wake's 1 s of
    # thinking and an offer's 5 s on the virtual clock) and stands there to the end; before,
    # it concedes step by step.
    assert end < min(e.t for e in offers if e.price == last) <= end + 10 + 1 + 5
    early = [e.price for e in offers if e.t < end - 10]
    assert len(set(early)) > 2 and early == sorted(early, reverse=True) and min(early) > last


def test_finish_one_is_the_classic_tactic() -> None:
    scenario = scenario_at(0, 5, "high")
    for role in ("buyer", "seller"):
        classic = play_alone("boulware", role, scenario)
        finish = play_alone("boulware:finish=1", role, scenario)
        assert (finish.events, finish.outcome) == (classic.events, classic.outcome)


@pytest.mark.parametrize("spec", ["paced:finish=0", "paced:finish=1.5", "linear:finish=-1"])
def test_finish_outside_the_deadline_is_refused_in_one_line(spec: str) -> None:
    with pytest.raises(AgentSpecError, match="'finish' must be in \\(0, 1\\]"):
        resolve(spec)

"""Behaviour of tit-for-tat, nice tit-for-tat, MiCRO and ZI-C."""

import itertools
import random
from decimal import Decimal

import pytest

from dealroom.agents import entries, resolve
from dealroom.engine.match import play
from dealroom.protocol import (
    AgentFactory,
    MakeOffer,
    OfferAccepted,
    OfferMade,
    Role,
    Scenario,
    SeatView,
    other,
)
from dealroom.protocol.generator import generate, scenario_at
from dealroom.protocol.record import NegotiationRecord
from dealroom.testing import ScriptedAgent


def silent(view: SeatView, rng: random.Random) -> ScriptedAgent:
    """An opponent that never does anything."""
    return ScriptedAgent([])


def scripted(*fractions: float, wait: float = 5.0) -> AgentFactory:
    """An opponent that offers these fractions of the list price, one per wake."""

    def build(view: SeatView, rng: random.Random) -> ScriptedAgent:
        list_price = view.scenario.list_price
        prices = (list_price * Decimal(repr(f)) for f in fractions)
        return ScriptedAgent.of(*(MakeOffer(price=p) for p in prices), wait=wait)

    return build


def seat(role: Role, agent: AgentFactory, opponent: AgentFactory) -> tuple[AgentFactory, ...]:
    return (agent, opponent) if role == "buyer" else (opponent, agent)


def offers(record: NegotiationRecord, role: Role) -> list[OfferMade]:
    return [e for e in record.events if isinstance(e, OfferMade) and e.by == role]


def fractions(record: NegotiationRecord, role: Role) -> list[float]:
    list_price = record.scenario.list_price
    return [float(e.price / list_price) for e in offers(record, role)]


def with_values(scenario: Scenario, *, cost: float, value: float) -> Scenario:
    """The scenario with private values set as fractions of its list price."""
    list_price = scenario.list_price
    return Scenario.model_validate(
        scenario.model_dump()
        | {
            "seller_cost": round(list_price * Decimal(repr(cost)), 2),
            "buyer_value": round(list_price * Decimal(repr(value)), 2),
        }
    )


def deal_rate(spec: str, scenarios: list[Scenario]) -> float:
    agent = resolve(spec)
    deals = sum(play(s, agent, agent).outcome.status == "deal" for s in scenarios)
    return deals / len(scenarios)


ZONE = [s for s in generate(12, seed=5) if s.gains > 0]


# -- every strategy ------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["buyer", "seller"])
@pytest.mark.parametrize("name", [e.name for e in entries()])
def test_every_agent_accepts_an_offer_better_than_its_opening(name: str, role: Role) -> None:
    scenario = with_values(scenario_at(1, 0, "mid"), cost=0.7, value=0.9)
    generous = scripted(0.4 if role == "buyer" else 1.4)
    record = play(scenario, *seat(role, resolve(name), generous))
    assert record.outcome.status == "deal"
    assert any(isinstance(e, OfferAccepted) and e.by == role for e in record.events)


@pytest.mark.parametrize("role", ["buyer", "seller"])
@pytest.mark.parametrize("name", ["boulware", "linear", "conceder", "tit_for_tat", "nice_tft"])
def test_time_pressured_agents_keep_conceding_when_the_other_side_goes_quiet(
    name: str, role: Role
) -> None:
    scenario = scenario_at(3, 1, "mid")
    record = play(scenario, *seat(role, resolve(name), silent))
    made = offers(record, role)
    assert len({e.price for e in made}) >= 4
    assert made[-1].t > 0.8 * scenario.deadline
    assert made[-1].price != made[0].price


@pytest.mark.parametrize("role", ["buyer", "seller"])
def test_zic_keeps_quoting_when_the_other_side_goes_quiet(role: Role) -> None:
    record = play(scenario_at(3, 1, "mid"), *seat(role, resolve("zic"), silent))
    assert len(offers(record, role)) >= 8


# -- tit-for-tat -----------------------------------------------------------------------------


def test_tit_for_tat_mirrors_the_relative_concession_of_the_other_side() -> None:
    scenario = with_values(scenario_at(1, 0, "mid"), cost=0.7, value=0.9)
    record = play(scenario, scripted(0.5, 0.55, wait=1), resolve("tit_for_tat"))
    asks = fractions(record, "seller")
    # The buyer raised its bid by 10%: the seller lowers its ask by the same ratio.
    assert asks[0] == pytest.approx(1.3)
    assert asks[1] == pytest.approx(1.3 * 0.5 / 0.55, rel=1e-4)


def test_tit_for_tat_retreats_when_the_other_side_retreats() -> None:
    scenario = with_values(scenario_at(1, 0, "mid"), cost=0.7, value=0.9)
    record = play(scenario, resolve("tit_for_tat"), scripted(1.3, 1.2, 1.25, wait=1))
    bids = fractions(record, "buyer")
    assert bids[0] == pytest.approx(0.5)
    assert bids[1] == pytest.approx(0.5 * 1.3 / 1.2, rel=1e-4)
    assert bids[2] == pytest.approx(0.5 * 1.3 / 1.25, rel=1e-4)


def test_tit_for_tat_without_a_floor_never_moves_first() -> None:
    record = play(scenario_at(1, 0, "mid"), silent, resolve("tit_for_tat:floor_e=0"))
    assert len(offers(record, "seller")) == 1


def test_tit_for_tat_reaches_a_deal_with_itself_in_most_scenarios() -> None:
    assert deal_rate("tit_for_tat", ZONE) >= 0.8


# -- nice tit-for-tat ----------------------------------------------------------------------------


def test_nice_tft_comes_as_far_towards_the_nash_point_as_the_other_side_did() -> None:
    # Openings 1.3 and 0.5 put the estimated Nash point at 0.9; the buyer comes half way
    # (0.5 -> 0.7), so the seller comes half way too (1.3 -> 1.1).
    scenario = with_values(scenario_at(1, 0, "mid"), cost=0.7, value=0.95)
    record = play(scenario, scripted(0.5, 0.7, wait=1), resolve("nice_tft"))
    asks = fractions(record, "seller")
    assert asks[0] == pytest.approx(1.3)
    assert asks[1] == pytest.approx(1.1, abs=1e-3)


def test_nice_tft_never_asks_less_than_the_other_side_has_offered() -> None:
    scenario = with_values(scenario_at(1, 0, "mid"), cost=0.7, value=1.2)
    record = play(scenario, scripted(0.5, 1.0, 0.6, wait=1), resolve("nice_tft"))
    assert min(fractions(record, "seller")) >= 1.0 - 1e-6


def test_nice_tft_reaches_a_deal_with_itself_in_most_scenarios() -> None:
    assert deal_rate("nice_tft", ZONE) >= 0.8


# -- MiCRO -----------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["buyer", "seller"])
def test_micro_against_a_hardliner_never_goes_past_its_second_offer(role: Role) -> None:
    for scenario in generate(3, seed=6):
        record = play(scenario, *seat(role, resolve("micro"), resolve("hardliner")))
        assert len({e.price for e in offers(record, role)}) <= 2


@pytest.mark.parametrize("opponent", ["linear", "conceder", "zic", "tit_for_tat", "micro"])
def test_micro_makes_a_new_offer_only_after_as_many_distinct_offers_received(
    opponent: str,
) -> None:
    for scenario in generate(4, seed=6):
        for role in ("buyer", "seller"):
            record = play(scenario, *seat(role, resolve("micro"), resolve(opponent)))
            sent: set[Decimal] = set()
            received: set[Decimal] = set()
            for event in record.events:
                if not isinstance(event, OfferMade):
                    continue
                if event.by == role:
                    if event.price not in sent:
                        assert len(received) >= len(sent)
                    sent.add(event.price)
                elif event.by == other(role):
                    received.add(event.price)


def test_micro_walks_down_equal_steps_from_its_opening_to_its_reservation_value() -> None:
    scenario = with_values(scenario_at(1, 0, "mid"), cost=0.7, value=0.72)
    record = play(scenario, resolve("micro:steps=10"), resolve("micro:steps=10"))
    asks = fractions(record, "seller")
    steps = [a - b for a, b in itertools.pairwise(asks)]
    assert asks[0] == pytest.approx(1.3)
    assert steps == pytest.approx([0.06] * len(steps), abs=1e-5)
    assert record.outcome.status == "deal"


def test_micro_reaches_a_deal_with_itself_in_most_scenarios() -> None:
    assert deal_rate("micro", ZONE) >= 0.8


# -- ZI-C ----------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["buyer", "seller"])
def test_zic_quotes_between_its_reservation_value_and_its_bound(role: Role) -> None:
    for scenario in generate(4, seed=8):
        record = play(scenario, *seat(role, resolve("zic"), resolve("linear")), seed=3)
        reservation = float(scenario.private_value(role) / scenario.list_price)
        low, high = (0.5, reservation) if role == "buyer" else (reservation, 1.3)
        for quote in fractions(record, role):
            assert min(low, high) - 1e-6 <= quote <= max(low, high) + 1e-6


def test_zic_draws_only_from_the_generator_it_is_given() -> None:
    state = random.getstate()
    scenario = scenario_at(1, 2, "mid")
    first = play(scenario, resolve("zic"), resolve("zic"), seed=1)
    assert random.getstate() == state
    random.seed(12345)  # the global generator has no say
    again = play(scenario, resolve("zic"), resolve("zic"), seed=1)
    random.setstate(state)
    assert first.model_dump_json() == again.model_dump_json()

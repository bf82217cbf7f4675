"""negmas:CLASS seats make the offers their negotiators make in NegMAS's own mechanism, play
full matches, tournaments and training episodes, and draw only from their own stream.

The parity check: two negmas: seats play a dealroom match; the same two negotiators, on the same
utility functions, play NegMAS's own SAOMechanism (one offer per step, its clock advanced 6 s a
step: the dealroom cadence of a turn, 1 s thinking + 5 s for the offer, which is exactly when
the seats decide, since the seller opens at 0 and each offer wakes the other side). The offers
must be the same prices in the same order, up to the deadline (a NegMAS step decided at
``deadline - 6`` s or later would land at or after the deadline in dealroom), and the outcome the
same. Run with ``pytest -m negmas`` (needs the negmas extra).
"""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import pytest

from dealroom import resolve
from dealroom.engine.match import play
from dealroom.protocol import Role, offer_of
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.outcome import PerRole
from dealroom.protocol.scenario import Scenario

pytestmark = pytest.mark.negmas

pytest.importorskip("negmas")

from dealroom.agents.negmas_adapter import NegmasParams, mechanism, ufun  # noqa: E402
from dealroom.agents.negmas_specs import negotiator_class  # noqa: E402

TURN_S = 6.0
"""Clock seconds of one turn: 1 s thinking and 5 s for the offer (docs/design.md, section 4)."""


def negmas_run(scenario: Scenario, buyer: str, seller: str) -> tuple[list[Any], Decimal | None]:
    """The offers ``(role, price)`` and agreed price of the two negotiators in NegMAS's own
    SAOMechanism on the seats' utility functions, steps decided up to the last one whose offer
    lands before the deadline."""
    params = NegmasParams()
    grid = params.grid(scenario.list_price)
    mech = mechanism(scenario.deadline, params.points)
    values: dict[Role, Decimal] = {"seller": scenario.seller_cost, "buyer": scenario.buyer_value}
    seats: list[tuple[Role, str]] = [("seller", seller), ("buyer", buyer)]
    for role, name in seats:
        preferences = ufun(grid, role, values[role], mech.issues)
        mech.add(negotiator_class(name)(name=role), preferences=preferences)
    clock = 0.0
    while mech.state.running or not mech.state.started:
        clock = mech.clock = TURN_S * mech.state.step
        mech.step()
    roles = {negotiator.id: negotiator.name for negotiator in mech.negotiators}
    offers = [
        (roles[who], grid.price(outcome[0]))
        for step, who, outcome in mech.extended_trace
        if TURN_S * step + TURN_S < scenario.deadline  # lands before the deadline
    ]
    agreement = mech.state.agreement
    if agreement is None or clock + 1 >= scenario.deadline:  # an accept takes 1 s
        return offers, None
    return offers, grid.price(agreement[0])


def dealroom_run(scenario: Scenario, buyer: str, seller: str) -> tuple[list[Any], Decimal | None]:
    """The same through two negmas: seats in a dealroom match."""
    record = play(scenario, resolve(f"negmas:{buyer}"), resolve(f"negmas:{seller}"), seed=7)
    offers = [(offer.by, offer.price) for event in record.events if (offer := offer_of(event))]
    outcome = record.outcome
    assert outcome.invalid_actions == PerRole()
    return offers, outcome.price if outcome.end_reason == "accepted" else None


@pytest.mark.parametrize(
    ("buyer", "seller"),
    [
        ("BoulwareTBNegotiator", "ConcederTBNegotiator"),
        ("LinearTBNegotiator", "NaiveTitForTatNegotiator"),
        ("MiCRONegotiator", "ConcederTBNegotiator"),
        ("HardHeaded", "ConcederTBNegotiator"),  # Genius (ANAC 2011)
        ("TimeDependentAgentBoulware", "AgentGG"),  # Genius (ANAC 2019)
    ],
)
def test_a_negmas_seat_makes_the_offers_its_negotiator_makes_in_negmas(
    buyer: str, seller: str
) -> None:
    deals = 0
    for index in range(6):
        scenario = scenario_at(0, index, "mid")
        theirs, agreed = negmas_run(scenario, buyer, seller)
        ours, price = dealroom_run(scenario, buyer, seller)
        assert ours == theirs, f"scenario {index}"
        assert price == agreed, f"scenario {index}"
        assert len(ours) >= 10
        deals += price is not None
    if buyer == "BoulwareTBNegotiator":
        assert deals >= 3  # the check covers acceptance too, not only offers


@pytest.mark.parametrize(
    ("buyer", "seller"),
    [
        ("negmas:BoulwareTBNegotiator", "conceder"),
        ("linear", "negmas:HardHeaded"),
        ("negmas:AgentK", "negmas:Atlas3:guard=1"),
        ("negmas:ConcederTBNegotiator:low=0.2,high=3,points=561,step=15", "micro"),
    ],
)
def test_a_negmas_spec_plays_a_full_match_to_a_clean_end(buyer: str, seller: str) -> None:
    for tier in ("low", "mid", "high"):
        record = play(scenario_at(1, 2, tier), resolve(buyer), resolve(seller), seed=3)
        outcome = record.outcome
        assert outcome.end_reason in {"accepted", "deadline", "walk_away"}
        assert outcome.invalid_actions == PerRole()
        assert any(offer_of(event) for event in record.events)


def test_a_conceding_negmas_seat_makes_deals_with_a_scripted_one() -> None:
    deals = 0
    for index in range(6):
        record = play(
            scenario_at(0, index, "mid"),
            resolve("conceder"),
            resolve("negmas:ConcederTBNegotiator"),
            seed=1,
        )
        deals += record.outcome.end_reason == "accepted"
    assert deals >= 3


def test_a_random_genius_agent_is_reproducible_and_leaves_the_global_stream_alone() -> None:
    scenario = scenario_at(0, 0, "mid")
    random.seed(12345)
    before = random.getstate()
    first = play(scenario, resolve("negmas:AgentK"), resolve("negmas:Atlas3"), seed=5)
    assert random.getstate() == before
    again = play(scenario, resolve("negmas:AgentK"), resolve("negmas:Atlas3"), seed=5)
    assert first.model_dump() == again.model_dump()
    other = play(scenario, resolve("negmas:AgentK"), resolve("negmas:Atlas3"), seed=6)
    assert [offer_of(e) for e in other.events] != [offer_of(e) for e in first.events]


def test_the_guard_keeps_a_negmas_seat_from_losing_money() -> None:
    for index in range(6):
        scenario = scenario_at(0, index, "low")
        record = play(scenario, resolve("negmas:AgentHP:guard=1"), resolve("boulware"), seed=3)
        if record.outcome.end_reason == "accepted":
            assert record.outcome.price is not None
            assert record.outcome.price <= scenario.buyer_value


def test_a_negmas_spec_is_a_training_opponent() -> None:
    from dealroom.training.gym_env import BargainEnv

    env = BargainEnv(role="buyer", opponent="negmas:BoulwareTBNegotiator")
    env.reset(seed=0)
    done, steps = False, 0
    while not done and steps < 100:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        done, steps = terminated or truncated, steps + 1
    assert done


def test_a_tournament_plays_negmas_seats_and_reports(tmp_path, capsys) -> None:
    from dealroom.cli import main

    out = tmp_path / "run.db"
    agents = "boulware,conceder,negmas:BoulwareTBNegotiator,negmas:HardHeaded"
    argv = ["tournament", "--agents", agents, "--tiers", "mid", "--per-pair", "1"]
    code = main([*argv, "--concurrency", "1", "--secret", "5eed" * 8, "--out", str(out)])
    assert code == 0
    assert main(["report", str(out)]) == 0
    report = capsys.readouterr().out
    assert "negmas:HardHeaded" in report and "negmas:BoulwareTBNegotiator" in report

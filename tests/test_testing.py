"""The shipped test doubles and check_agent."""

import random
from decimal import Decimal

import pytest

from dealroom.agents import resolve
from dealroom.engine.match import play
from dealroom.protocol import Accept, Decision, MakeOffer, Observation, SeatView
from dealroom.protocol.generator import scenario_at
from dealroom.testing import AgentCheckError, ScriptedAgent, check_agent


def test_check_agent_passes_a_builtin_strategy_in_both_seats() -> None:
    records = check_agent(resolve("conceder"), opponents=["boulware"], scenarios_per_tier=1)
    assert {r.buyer for r in records} == {"buyer"}
    assert len(records) == 6  # 3 tiers x 2 seats


def test_check_agent_rejects_an_agent_that_does_not_return_a_decision() -> None:
    class Broken:
        def __init__(self, view: SeatView, rng: random.Random) -> None: ...

        def act(self, observation: Observation) -> object:
            return None

    with pytest.raises(AgentCheckError, match="not a Decision"):
        check_agent(Broken, opponents=["linear"], scenarios_per_tier=1)  # pyright: ignore[reportArgumentType]


def test_check_agent_rejects_an_agent_that_uses_global_randomness() -> None:
    class Noisy:
        def __init__(self, view: SeatView, rng: random.Random) -> None:
            self.view = view

        def act(self, observation: Observation) -> Decision:
            price = float(self.view.scenario.list_price) * (1 + random.random())
            return Decision(actions=(MakeOffer(price=Decimal(str(price))),), wait=5)

    with pytest.raises(AgentCheckError, match="same seed differ"):
        check_agent(Noisy, opponents=["hardliner"], scenarios_per_tier=1)


def test_check_agent_rejects_an_agent_that_accepts_a_losing_deal() -> None:
    class Pushover:
        def __init__(self, view: SeatView, rng: random.Random) -> None: ...

        def act(self, observation: Observation) -> Decision:
            theirs = observation.their_offer
            if theirs is None:
                return Decision(wait=1)
            return Decision(actions=(Accept(offer_id=theirs.offer_id),))

    with pytest.raises(AgentCheckError, match="loses money"):
        check_agent(Pushover, opponents=["hardliner"], scenarios_per_tier=1)


def test_scripted_agent_replays_its_decisions_and_records_what_it_saw() -> None:
    scenario = scenario_at(0, 0, "low")
    seller = ScriptedAgent.of(MakeOffer(price=scenario.list_price), wait=5)
    record = play(scenario, resolve("hardliner"), lambda view, rng: seller)
    first = record.events[0]
    assert first.type == "offer_made" and first.by in {"buyer", "seller"}
    assert seller.observations[0].role == "seller"
    assert seller.observations[0].now == 0

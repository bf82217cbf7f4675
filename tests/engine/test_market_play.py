"""Markets on the virtual clock: one buyer is the bilateral game, and N buyers play out."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dealroom.agents import builtin  # noqa: F401  # pyright: ignore[reportUnusedImport]
from dealroom.agents.market import market_seller
from dealroom.engine.market import MarketRoom, market_agents, play_market
from dealroom.engine.match import play
from dealroom.play.registry import resolve
from dealroom.protocol import Decision
from dealroom.protocol.agent import DecisionError
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.market import MarketDecision, MarketScenario
from dealroom.protocol.market_scenarios import generate_markets, market_at

AGENTS = ["boulware", "linear", "conceder", "tit_for_tat", "micro", "zic", "nice_tft"]


@settings(max_examples=60, deadline=None)
@given(
    index=st.integers(0, 10_000),
    tier=st.sampled_from(["low", "mid", "high"]),
    buyer=st.sampled_from(AGENTS),
    seller=st.sampled_from(AGENTS),
    seed=st.integers(0, 2**31),
)
def test_a_market_of_one_buyer_is_the_bilateral_negotiation_event_for_event(
    index: int, tier: str, buyer: str, seller: str, seed: int
) -> None:
    scenario = scenario_at(seed, index, tier)  # type: ignore[arg-type]
    record = play(scenario, resolve(buyer), resolve(seller), seed=seed)
    market = play_market(
        MarketScenario.of(scenario), market_seller(seller), [resolve(buyer)], seed=seed
    )
    assert market.thread_events("b1") == record.events
    assert market.outcome.threads == (record.outcome,)
    assert market.outcome.price == record.outcome.price


def test_a_market_record_is_the_same_for_the_same_seed() -> None:
    market = market_at(11, 0, "mid", 3)
    runs = [
        play_market(
            market, market_seller("auctioneer"), [resolve("zic")] * 3, seed=5
        ).model_dump_json()
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    other = play_market(market, market_seller("auctioneer"), [resolve("zic")] * 3, seed=6)
    assert other.model_dump_json() != runs[0]  # zic draws from its seat's generator


@pytest.mark.parametrize("seller", ["auctioneer", "sequential", "linear"])
def test_scripted_sellers_sell_to_the_buyer_who_values_it_most_against_linear_buyers(
    seller: str,
) -> None:
    outcomes = [
        play_market(m, market_seller(seller), [resolve("linear")] * 3, seed=1).outcome
        for m in generate_markets(10, 3, seed=2)
    ]
    assert all(o.status == "deal" for o in outcomes)
    assert sum(bool(o.allocative) for o in outcomes) >= 27


def test_the_seller_driven_from_outside_plays_to_the_end() -> None:
    market = market_at(3, 1, "low", 2)
    seller, buyers = market_agents(market, market_seller("auctioneer"), [resolve("linear")] * 2, 9)
    room = MarketRoom(market, buyers=buyers)
    wakes = 0
    while (wake := room.next_wake()) is not None:
        wakes += 1
        room.decide(seller.act(wake.observation))
    expected = play_market(market, market_seller("auctioneer"), [resolve("linear")] * 2, seed=9)
    assert wakes > 1 and room.referee.outcome == expected.outcome


def test_a_market_seller_that_returns_a_bilateral_decision_gets_one_line() -> None:
    market = market_at(3, 1, "low", 2)
    _, buyers = market_agents(market, market_seller("auctioneer"), [resolve("linear")] * 2, 9)

    class Wrong:
        def act(self, observation: object) -> Decision:
            return Decision()

    room = MarketRoom(market, seller=Wrong(), buyers=buyers)  # type: ignore[arg-type]
    with pytest.raises(
        DecisionError, match="returned Decision from act\\(\\), not a MarketDecision"
    ):
        room.run()
    assert MarketDecision().actions == ()

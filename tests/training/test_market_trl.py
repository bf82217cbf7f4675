"""The market seller's TRL environment (``MarketSellerEnv``), its reward, and the scripted
seller's conversations (``training.market_sft``), without TRL: the contract is duck-typed."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from dealroom.agents.market import market_seller
from dealroom.cli import main
from dealroom.engine.market import market_view
from dealroom.play.registry import AgentSpecError, resolve
from dealroom.protocol import DEFAULT_RULES
from dealroom.protocol.market import MarketRules
from dealroom.protocol.market_scenarios import market_at
from dealroom.protocol.market_seat import market_tools
from dealroom.protocol.market_text import market_briefing
from dealroom.protocol.rules import Rules
from dealroom.training.market_sft import market_sft_example
from dealroom.training.market_trl import MarketSellerEnv, pool_factories
from dealroom.training.rewards import UNCLIPPED, RewardSpec, market_terms
from dealroom.training.runlog import OutcomeTally, observed_env

POOL = "boulware+linear+conceder"


def test_reset_reads_the_market_briefing_of_the_rows_market() -> None:
    env = MarketSellerEnv(pool=POOL, buyers=3, seed=4)
    market = market_at(4, 2, "high", 3)
    assert env.reset(index=2, tier="high") == market_briefing(market_view(market))
    prompted = env.reset(index=2, tier="high", prompt=[{"role": "user", "content": "Sell."}])
    assert prompted == "\n\n" + market_briefing(market_view(market))
    assert env.pool == ("boulware", "linear", "conceder")


def test_a_call_naming_no_buyer_of_the_market_is_refused_and_counted() -> None:
    env = MarketSellerEnv(pool="conceder", buyers=2)
    env.reset(index=0)
    text = env.make_offer(buyer="b7", price=900.0)
    assert text.startswith("unknown_buyer: ")
    seat = env.seat
    assert seat is not None
    assert not [e for e in seat.room.referee.log if e.event.by == "seller"]  # nothing happened
    assert env.make_offer(buyer="b2", price=-5).startswith("invalid_arguments: ")


def test_a_sale_below_cost_is_paid_the_clipped_share_less_the_ir_penalty() -> None:
    env = MarketSellerEnv(pool="conceder", buyers=3, seed=1)
    env.reset(index=0)
    assert env.make_offer(buyer="b1", price=1.0).startswith("ok\n")
    env.wait_for_opponent(timeout_s=60)
    reward = env.get_reward()
    seat = env.seat
    assert seat is not None
    outcome = seat.room.referee.outcome
    assert outcome is not None and outcome.status == "deal" and outcome.seller_ir_violation
    share = outcome.seller_share
    assert share is not None and -1 < share < -0.5
    assert reward == pytest.approx(share - 1)  # the share, and -1 for selling below cost
    listed = seat.room.referee.market.base.list_price
    assert RewardSpec(clip=(-0.5, 1.0)).market(outcome, listed) == -1.5
    assert UNCLIPPED.market(outcome, listed) == pytest.approx(share - 1)
    assert env.terms == market_terms(outcome, listed)


def test_a_silent_seller_sells_nothing_and_is_paid_the_no_deal_terms() -> None:
    env = MarketSellerEnv(pool="boulware", buyers=2)
    env.reset(index=3)
    assert env.terms is None  # open
    assert env.get_reward() == 0.0
    terms = env.terms
    assert terms is not None and (terms.deal, terms.no_deal, terms.share) == (0.0, 1.0, 0.0)
    assert RewardSpec(no_deal=-0.5).weigh(terms) == -0.5


def test_the_observed_environment_counts_each_market_it_scores() -> None:
    tally = OutcomeTally()
    cls = observed_env(tally, MarketSellerEnv)
    assert cls.__name__ == "MarketSellerEnv"  # TRL names the reward column after it
    env = cls(pool="conceder", buyers=2, seed=1)
    env.reset(index=0)
    env.make_offer(buyer="b1", price=1.0)
    env.wait_for_opponent(timeout_s=60)
    env.get_reward()
    terms = env.terms
    assert terms is not None and terms.deal == 1.0
    expected = {"deal_rate": 1.0, "share": terms.share, "ir_violation_rate": 1.0}
    assert tally.drain() == expected


@pytest.mark.parametrize(
    ("pool", "buyers", "needle"),
    [
        ("linear+boulware", 3, "names 2 buyers, not 3"),
        ("llm:m", 2, "a market's buyers are scripted specs"),
        ("nosuchagent", 1, "nosuchagent"),
    ],
)
def test_a_pool_that_cannot_play_is_refused_in_one_line(
    pool: str, buyers: int, needle: str
) -> None:
    with pytest.raises(AgentSpecError, match=needle) as caught:
        pool_factories(pool, buyers)
    assert "\n" not in str(caught.value)


def test_the_environment_under_other_rules_describes_them() -> None:
    odd = Rules(max_price_multiple=3.0, max_message_chars=120)
    env = MarketSellerEnv(rules=MarketRules(rules=odd))
    assert type(env) is not MarketSellerEnv and isinstance(env, MarketSellerEnv)
    doc = type(env).make_offer.__doc__ or ""
    assert "at most 3 times the list price" in doc
    assert MarketSellerEnv.make_offer.__doc__ != doc


@pytest.mark.parametrize("seller", ["auctioneer", "sequential", "linear"])
def test_a_scripted_sellers_row_is_what_the_environment_returns_for_its_calls(
    seller: str,
) -> None:
    """The SFT row of a scripted seller, its calls made again on ``MarketSellerEnv``, reads the
    same texts: SFT trains on what GRPO rolls out."""
    market = market_at(2, 1, "mid", 3)
    pool = ("boulware", "linear", "conceder")
    row = market_sft_example(
        market,
        market_seller(seller),
        [resolve(spec) for spec in pool],
        names=(seller, pool),
        seed=2,
    )
    assert row["tools"] == market_tools(DEFAULT_RULES)
    messages: list[dict[str, Any]] = row["messages"]
    env = MarketSellerEnv(pool="+".join(pool), buyers=3, seed=2)
    assert messages[0] == {"role": "user", "content": env.reset(index=1)}
    calls = 0
    for asked, answered in zip(messages[1::2], messages[2::2], strict=True):
        (call,) = asked["tool_calls"]
        function = call["function"]
        assert answered["content"] == getattr(env, function["name"])(**function["arguments"])
        calls += 1
    assert calls > 3
    meta = row["metadata"]
    assert (meta["role"], meta["agent"], meta["opponent"]) == ("seller", seller, POOL)
    seat = env.seat
    assert seat is not None and seat.over
    outcome = seat.room.referee.outcome
    assert outcome is not None and meta["status"] == outcome.status
    assert meta["seller_share"] == outcome.seller_share


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--buyers", "3", "--role", "buyer"], "--buyers trains a market's seller"),
        (["--buyers", "3", "--opponent", "linear+boulware"], "names 2 buyers, not 3"),
        (["--buyers", "2", "--opponent", "llm:m"], "scripted specs"),
    ],
)
def test_train_grpo_refuses_a_market_it_cannot_train_in_one_line(
    flags: list[str], needle: str, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    argv = ["train", "grpo", "--model", "m", "--output-dir", str(tmp_path / "out"), *flags]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_market_terms_score_the_sellers_share_of_the_best_price() -> None:
    env = MarketSellerEnv(pool="conceder", buyers=3, seed=1)
    env.reset(index=0)
    seat = env.seat
    assert seat is not None
    market = seat.room.referee.market
    best = max(market.buyer_values)
    env.make_offer(buyer="b1", price=float(market.seller_cost + Decimal("1.00")))
    env.wait_for_opponent(timeout_s=60)
    env.get_reward()
    outcome = seat.room.referee.outcome
    assert outcome is not None
    terms = market_terms(outcome, market.base.list_price)
    if outcome.status == "deal":
        assert outcome.price is not None
        assert terms.share == pytest.approx(
            float((outcome.price - market.seller_cost) / (best - market.seller_cost)), abs=1e-6
        )
    assert terms.utility == pytest.approx(
        float(outcome.seller_surplus) / float(market.base.list_price)
    )

"""The market seller's one model seat: the same model reads the same conversation on the match
CLI's ``llm:`` seller (``agents.llm_market``, over the chat-completions wire) and in the TRL
environment the seller is trained in (``training.market_trl.MarketSellerEnv``, played by TRL's
rollout loop, ``training.evaluate.market_rollout``), for the same market and buyers.

One deterministic policy (``fake_openai.market_seller``: ask every buyer above the list price,
wait, read every thread, accept the best bid, then answer in text) plays both; every request's
conversation as the model reads it (``model_seat.canonical``) is equal, the tools are equal byte
for byte, and the markets end with the same record and reward. ``dealroom train evaluate
--buyers N`` plays the ``llm:`` seller's seat, held to the same requests in
``tests/training/test_evaluate_market.py``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from dealroom.agents.llm import LLMPlayer, LLMSettings
from dealroom.agents.llm_market import play_llm_market
from dealroom.play.registry import resolve
from dealroom.protocol import DEFAULT_RULES, model_seat
from dealroom.protocol.market_referee import MarketRecord
from dealroom.protocol.market_scenarios import market_at
from dealroom.protocol.market_seat import market_tools
from dealroom.training.evaluate import Completion, market_rollout
from dealroom.training.market_trl import MarketSellerEnv
from dealroom.training.rewards import RewardSpec
from fake_openai import Brain, Text, ToolCalls, market_seller, serve
from scripted_llm import FAST_RETRY

SEED = 5
POOLS = ("linear+boulware+conceder", "conceder")
BRAINS = {"probe": market_seller(), "quick": market_seller(waits=1, ask=1.1)}


def wire(
    brain: Brain, index: int, pool: Sequence[str]
) -> tuple[list[dict[str, Any]], MarketRecord]:
    """The requests the ``llm:`` market seller sends, and its market's record."""
    market = market_at(SEED, index, "mid", len(pool))
    with serve(brain) as fake:
        player = LLMPlayer.from_spec(
            "llm:m", base_url=fake.base_url, api_key="k", settings=LLMSettings(retry=FAST_RETRY)
        )

        async def main() -> MarketRecord:
            async with player:
                factories = [resolve(spec) for spec in pool]
                record, _ = await play_llm_market(
                    market, player, factories, buyer_names=pool, seed=SEED
                )
                return record

        record = anyio.run(main)
        return list(fake.requests), record


def trained(
    brain: Brain, index: int, pool: Sequence[str]
) -> tuple[list[dict[str, Any]], MarketRecord, float]:
    """The requests TRL's loop makes in the training environment, its record and reward."""
    requests: list[dict[str, Any]] = []

    def complete(messages: Any, tools: Any) -> Completion:
        request = {"messages": json.loads(json.dumps(list(messages))), "tools": tools}
        requests.append(request)
        reply = brain(request)
        if isinstance(reply, Text):
            return Completion(content=reply.text)
        assert isinstance(reply, ToolCalls)
        return Completion(content=reply.text or "", tool_calls=reply.calls)

    env = MarketSellerEnv(pool="+".join(pool), buyers=len(pool), seed=SEED)
    played = market_rollout(env, complete, {"index": index, "tier": "mid"}, seller="llm:m")
    return requests, played.record, played.reward


@pytest.mark.parametrize("brain", sorted(BRAINS))
@pytest.mark.parametrize("pool", POOLS)
def test_the_llm_market_seller_and_the_training_environment_read_the_same(
    brain: str, pool: str
) -> None:
    buyers = tuple(pool.split("+")) if "+" in pool else (pool,) * 3
    sold = 0
    for index in range(3):
        sent, record = wire(BRAINS[brain], index, buyers)
        rolled, rolled_record, reward = trained(BRAINS[brain], index, buyers)
        assert [model_seat.canonical(r["messages"]) for r in sent] == [
            model_seat.canonical(r["messages"]) for r in rolled
        ], (brain, pool, index)
        tools = market_tools(DEFAULT_RULES)
        assert all(r["tools"] == tools for r in sent)
        assert all(r["tools"] == tools for r in rolled)
        assert rolled_record == record
        market = record.scenario
        assert reward == RewardSpec().market(record.outcome, market.base.list_price)
        sold += record.outcome.status == "deal"
    assert sold  # the policy sells, so the texts after a sale are compared too


def test_the_environments_tools_are_the_market_seats_in_trls_order() -> None:
    """TRL offers an environment's public methods but reset and get_reward, in name order: the
    market seller's tools, with the buyer first in the signatures that name one."""
    import inspect

    env = MarketSellerEnv()
    methods = {
        name: fn
        for name, fn in inspect.getmembers(type(env), inspect.isfunction)
        if not name.startswith("_") and name not in ("reset", "get_reward")
    }
    schemas = market_tools(DEFAULT_RULES)
    assert list(methods) == [s["function"]["name"] for s in schemas]
    for schema in schemas:
        params = [p for p in inspect.signature(methods[schema["function"]["name"]]).parameters]
        assert params[1:] == list(schema["function"]["parameters"]["properties"])

"""Models in a market's buyer seats (``dealroom.play.market_players``), against the loopback
scripted endpoint of ``tests/fake_openai.py``: a model buyer reads what an MCP buyer client of
the same room making the same calls reads (the briefing and every tool result, byte for byte),
several model buyers take turns on the virtual clock (the same record and conversations run
after run), nothing a model buyer reads holds another buyer's value, thread or events, and a
failing model walks its seat out of its thread while the market goes on."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from market_support import assert_reads_only_its_thread
from mcp import Client
from mcp_support import text_of

from dealroom.agents.llm import LLMPlayer, LLMSettings
from dealroom.agents.llm_market import play_llm_market
from dealroom.agents.llm_market_served import model_market_player
from dealroom.agents.market import market_seller
from dealroom.play.market_players import play_served_market
from dealroom.play.registry import resolve
from dealroom.protocol import model_seat
from dealroom.protocol.market import DEFAULT_MARKET_RULES, MarketScenario
from dealroom.protocol.market_referee import MarketRecord
from dealroom.protocol.market_scenarios import market_at
from dealroom.server.market_room import MarketPlayer, MarketRoomServed, SellerHouse
from dealroom.server.market_seats import ServedMarketBuyer
from dealroom.server.mcp_app import build_app
from dealroom.server.room_settings import House
from fake_openai import Brain, Status, market_buyer, market_seats, serve
from fake_openai import market_seller as market_seller_brain
from scripted_llm import FAST_RETRY

SEED = 38
SELLER = "auctioneer"


def _model(base_url: str, name: str = "llm:fake") -> LLMPlayer:
    return LLMPlayer.from_spec(
        name, base_url=base_url, api_key="k", settings=LLMSettings(retry=FAST_RETRY)
    )


def _houses(market: MarketScenario, specs: dict[str, str]) -> dict[str, House]:
    return {name: House(spec, resolve(spec)) for name, spec in specs.items()}


def play(
    brain: Brain, market: MarketScenario, houses: dict[str, str], models: tuple[str, ...]
) -> tuple[MarketRecord, dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The market with models (one player) in seats ``models``: record, data, requests."""
    with serve(brain) as fake:
        player = _model(fake.base_url)

        async def main() -> tuple[MarketRecord, dict[str, dict[str, Any]]]:
            async with player:
                seats: dict[str, House | MarketPlayer] = {
                    **_houses(market, houses),
                    **dict.fromkeys(models, model_market_player(player)),
                }
                return await play_served_market(
                    market,
                    DEFAULT_MARKET_RULES,
                    seller=SellerHouse(SELLER, market_seller(SELLER)),
                    buyers=seats,
                    seed=SEED,
                )

        record, played = anyio.run(main)
        return record, played, list(fake.requests)


class _Played:
    """A finished market as ``assert_reads_only_its_thread`` reads a room."""

    def __init__(self, record: MarketRecord) -> None:
        self.market = record.scenario
        self._record = record

    def record(self) -> MarketRecord:
        return self._record


def _calls(conversation: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (call["function"]["name"], json.loads(call["function"]["arguments"]))
        for message in conversation["messages"]
        for call in message.get("tool_calls") or []
    ]


def _results(conversation: dict[str, Any]) -> list[str]:
    return [m["content"] for m in conversation["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("index", range(3))
def test_a_model_buyer_reads_what_an_mcp_buyer_client_making_the_same_calls_reads(
    index: int,
) -> None:
    market = market_at(SEED, index, "mid", 3)
    houses = {"b1": "linear", "b3": "boulware"}
    record, played, _ = play(market_buyer(), market, houses, ("b2",))
    conversation = played["b2"]["conversation"]
    assert conversation["tools"] == model_seat.tools(DEFAULT_MARKET_RULES.rules)
    calls = _calls(conversation)
    assert len(calls) >= 3

    room = MarketRoomServed(
        "r",
        market,
        DEFAULT_MARKET_RULES,
        seller=SellerHouse(SELLER, market_seller(SELLER)),
        buyers=_houses(market, houses),
        seed=SEED,
        run="r",
        writer=None,
        client_names={"b2": "llm:fake"},
    )

    async def client_reads() -> list[str]:
        seat = ServedMarketBuyer(room, "b2")
        async with Client(build_app(lambda: seat, series=False)) as client:
            briefing = await client.get_prompt("briefing")
            texts = [briefing.messages[0].content.text]  # type: ignore[union-attr]
            for name, arguments in calls:
                texts.append(text_of(await client.call_tool(name, arguments)))
            while room.is_open:  # the model's play ended: it sat out to the end
                await client.call_tool("wait_for_opponent", {"timeout_s": 20})
            return texts

    texts = anyio.run(client_reads)
    assert texts[0] == conversation["messages"][0]["content"]
    assert "This is a market: 3 buyers, you among them" in texts[0]
    assert texts[1:] == _results(conversation)
    assert room.record() == record and record.buyers == ("linear", "llm:fake", "boulware")


def test_model_buyers_take_turns_and_the_market_is_the_same_run_after_run() -> None:
    market = market_at(SEED, 1, "mid", 4)
    runs = [play(market_buyer(), market, {"b2": "linear"}, ("b1", "b3", "b4")) for _ in range(2)]
    (record, played, requests), (again, played_again, _) = runs
    assert record == again
    assert record.buyers == ("llm:fake", "linear", "llm:fake", "llm:fake")
    assert list(played) == ["b1", "b3", "b4"]
    for seat in played:
        # The same conversation, but for the call ids (the endpoint numbers its replies).
        assert model_seat.canonical(played[seat]["conversation"]["messages"]) == (
            model_seat.canonical(played_again[seat]["conversation"]["messages"])
        )
        assert played[seat]["model_calls"] >= 2 and played[seat]["refused_tool_calls"] == 0
    assert record.outcome.status == "deal"
    # Each seat's requests (found by its briefing): everything its model read.
    for seat in played:
        briefing = played[seat]["conversation"]["messages"][0]["content"]
        mine = [r for r in requests if r["messages"][0]["content"] == briefing]
        assert len(mine) == played[seat]["model_calls"]
        everything = json.dumps(mine) + json.dumps(played[seat]["conversation"])
        assert_reads_only_its_thread(everything, _Played(record), seat)  # type: ignore[arg-type]


def test_a_failing_model_walks_its_buyer_out_of_its_thread_and_the_market_goes_on() -> None:
    market = market_at(SEED, 0, "mid", 3)
    record, played, _ = play(lambda request: Status(400), market, {"b1": "linear"}, ("b2", "b3"))
    for seat in ("b2", "b3"):
        assert played[seat]["error"].startswith("model call failed after 1 attempt")
        events = record.thread_events(seat)
        assert events[-2].type == "walked_away" and events[-2].by == "buyer"
        assert events[-1].type == "negotiation_ended"
    assert record.thread_events("b1")[-1].type == "negotiation_ended"


@pytest.mark.parametrize("index", range(2))
def test_a_served_model_seller_reads_what_the_llm_market_seller_reads(index: int) -> None:
    """The seller's seat played at its turns (``llm_market_served``) beside scripted buyers is
    ``play_llm_market``'s seat (held to the TRL environment): the same requests, the same
    record."""
    market = market_at(SEED, index, "mid", 3)
    pool = ["linear", "boulware", "conceder"]
    with serve(market_seller_brain()) as fake:
        player = _model(fake.base_url)

        async def bare() -> MarketRecord:
            async with player:
                factories = [resolve(spec) for spec in pool]
                record, _ = await play_llm_market(
                    market, player, factories, buyer_names=pool, seed=SEED
                )
                return record

        record = anyio.run(bare)
        expected = [model_seat.canonical(r["messages"]) for r in fake.requests]
    with serve(market_seller_brain()) as fake:
        player = _model(fake.base_url)

        async def served() -> tuple[MarketRecord, dict[str, dict[str, Any]]]:
            async with player:
                return await play_served_market(
                    market,
                    DEFAULT_MARKET_RULES,
                    seller=model_market_player(player),
                    buyers=_houses(market, dict(zip(market.buyers, pool, strict=True))),
                    seed=SEED,
                )

        again, played = anyio.run(served)
        assert [model_seat.canonical(r["messages"]) for r in fake.requests] == expected
    assert again == record and record.outcome.status == "deal"
    assert list(played) == ["seller"] and played["seller"]["name"] == "llm:fake"


def _models_everywhere(market: MarketScenario) -> tuple[MarketRecord, dict[str, dict[str, Any]]]:
    """The market with the model as seller, b1 and b3 (b2 ``linear``)."""
    with serve(market_seats()) as fake:
        player = _model(fake.base_url)
        seat = model_market_player(player)

        async def main() -> tuple[MarketRecord, dict[str, dict[str, Any]]]:
            async with player:
                return await play_served_market(
                    market,
                    DEFAULT_MARKET_RULES,
                    seller=seat,
                    buyers={**_houses(market, {"b2": "linear"}), "b1": seat, "b3": seat},
                    seed=SEED,
                )

        return anyio.run(main)


def test_a_model_seller_and_model_buyers_play_one_market_the_same_way_twice() -> None:
    market = market_at(SEED, 2, "mid", 3)
    runs = [_models_everywhere(market) for _ in range(2)]
    (record, played), (again, played_again) = runs
    assert record == again and record.seller == "llm:fake"
    assert record.buyers == ("llm:fake", "linear", "llm:fake")
    assert list(played) == ["seller", "b1", "b3"]
    for seat_name, data in played.items():
        assert "error" not in data and data["model_calls"] >= 2, seat_name
        assert model_seat.canonical(data["conversation"]["messages"]) == model_seat.canonical(
            played_again[seat_name]["conversation"]["messages"]
        )
    for buyer in ("b1", "b3"):
        everything = json.dumps(played[buyer]["conversation"])
        assert_reads_only_its_thread(everything, _Played(record), buyer)  # type: ignore[arg-type]

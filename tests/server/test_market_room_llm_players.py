"""``llm:`` players in a market room's house buyer seats (``house_buyers: {"b2": "llm:M"}``): the
server plays them in process (``dealroom.play.market_players.market_house_player``), each taking
its turns as a client seat does, under the same idle rule; a restored room counts them absent
(their conversations did not survive). The model is the loopback fake of tests/fake_openai.py."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import pytest
from market_support import assert_reads_only_its_thread, buyer_plays, sell
from mcp import Client
from mcp_support import ADMIN, HttpServer, house_resolver, secret_of, tls
from test_faults import serve_process

from dealroom.agents.llm import LLMPlayer, LLMSettings
from dealroom.agents.llm_market_served import model_market_player
from dealroom.agents.market import market_seller
from dealroom.cli import main
from dealroom.protocol import RoomRequest
from dealroom.protocol.market import DEFAULT_MARKET_RULES
from dealroom.protocol.market_scenarios import market_at
from dealroom.protocol.text import money
from dealroom.server.journal import Journals
from dealroom.server.market_room import MarketPlayer, MarketRoomServed, SellerHouse
from dealroom.server.market_seats import ServedMarketBuyer, ServedMarketSeller
from dealroom.server.mcp_app import build_app
from dealroom.server.negotiation import RoomLimits
from dealroom.server.room_settings import House
from dealroom.server.rooms import RoomRegistry
from dealroom.store.results import ResultsStore
from fake_openai import Brain, market_buyer, market_seats, serve, with_latency
from scripted_llm import FAST_RETRY

pytestmark = pytest.mark.anyio

REQUEST = RoomRequest(
    buyers=3, house_buyers={"b2": "llm:fake", "b3": "linear"}, secret=secret_of(38).hex()
)


def _registry(base_url: str, *, idle_s: float = 30.0, journals: Path | None = None) -> Any:
    player = LLMPlayer.from_spec(
        "llm:fake", base_url=base_url, api_key="k", settings=LLMSettings(retry=FAST_RETRY)
    )

    def resolve(spec: str) -> MarketPlayer | None:
        return model_market_player(player) if spec == "llm:fake" else None

    registry = RoomRegistry(
        writer=None,
        resolve_house=house_resolver,
        limits=RoomLimits(idle_s=idle_s),
        journals=None if journals is None else Journals(journals),
        resolve_seller=market_seller,
        resolve_market_player=resolve,
    )
    return registry, player


@asynccontextmanager
async def _serving(registry: RoomRegistry) -> AsyncIterator[None]:
    async with anyio.create_task_group() as group:
        group.start_soon(registry.reap, 0.05)
        await anyio.lowlevel.checkpoint()
        try:
            yield
        finally:
            group.cancel_scope.cancel()


async def _clients(market: MarketRoomServed, replies: list[str]) -> dict[str, Any]:
    """The seller's and b1's clients play the market to its end: the seller's last view."""
    ends: dict[str, Any] = {}

    async def seller() -> None:
        async with Client(build_app(lambda: ServedMarketSeller(market), series=False)) as c:
            ends["seller"] = await sell(c)

    async def b1() -> None:
        seat = ServedMarketBuyer(market, "b1")
        async with Client(build_app(lambda: seat, series=False)) as client:
            ends["b1"] = await buyer_plays(client, replies)

    async with anyio.create_task_group() as group:
        group.start_soon(seller)
        group.start_soon(b1)
    return ends["seller"]


async def _play(brain: Brain, *, idle_s: float = 30.0) -> tuple[MarketRoomServed, list[Any]]:
    with serve(brain) as fake:
        registry, player = _registry(fake.base_url, idle_s=idle_s)
        async with player, _serving(registry):
            created = registry.create(REQUEST)
            assert list(created.tokens) == ["seller", "b1"]  # no token for the model's seat
            market = registry.markets[created.room].current
            ops: list[Any] = []
            market.turns._journal = ops.append  # pyright: ignore[reportAttributeAccessIssue]
            with anyio.fail_after(60):
                await _clients(market, [])
                # The model's play returns once it has read the end (its last report).
                while market.played.get("b2", {}).get("ended_by") is None:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
        return market, ops


async def test_an_llm_house_buyer_takes_its_turns_beside_the_client_seats() -> None:
    market, ops = await _play(market_buyer())
    record = market.record()
    assert record.seller == "mcp" and record.buyers == ("mcp", "llm:fake", "linear")
    assert record.outcome.status == "deal"
    played = market.played["b2"]
    assert played["name"] == "llm:fake" and played["model_calls"] >= 2
    assert "error" not in played and played["refused_tool_calls"] == 0
    assert any(op[:2] == ["buyer", "b2"] for op in ops)  # its decisions are journaled
    assert not any(op[0] == "absent" for op in ops)  # it answered in time
    view = market.view()
    assert view["players"]["b2"]["model_calls"] == played["model_calls"]
    assert "conversation" not in view["players"]["b2"]
    everything = str(played["conversation"])
    assert everything.count("This is a market: 3 buyers, you among them") == 1
    assert_reads_only_its_thread(everything, market, "b2")


async def test_a_slow_llm_house_buyer_is_counted_absent_as_an_idle_client_and_comes_back() -> None:
    market, ops = await _play(with_latency(market_buyer(), 0.5), idle_s=0.1)
    assert ["absent", "b2"] in ops and ["back", "b2"] in ops
    assert not market.is_open and market.played["b2"]["model_calls"] >= 1


async def test_a_restored_market_room_counts_its_llm_house_buyer_absent(tmp_path: Path) -> None:
    with serve(market_buyer()) as fake:
        first, _ = _registry(fake.base_url, journals=tmp_path)
        created = first.create(REQUEST)  # not served: its model has not played yet
        first.close()
        second, player = _registry(fake.base_url, journals=tmp_path)
        assert second.restore() == 1 and not second.unrestored
        market = second.markets[created.room].current
        assert market.turns.absent == {"b2"}
        async with player, _serving(second):
            with anyio.fail_after(60):
                await _clients(market, [])
        assert not market.is_open and market.played == {} and fake.requests == []
        second.close()
    journal = (tmp_path / f"{created.room}.jsonl").read_text()
    assert '{"n":1,"op":["absent","b2"]}' in journal.splitlines()


@pytest.mark.parametrize(
    ("request_fields", "error"),
    [
        ({"house_buyers": {"b2": "llm:"}}, "house_buyers.b2: agent 'llm' needs MODEL: llm:..."),
        ({"house_seller": "llm:"}, "house_seller: agent 'llm' needs MODEL: llm:..."),
        (
            {"house_seller": "llm:fake", "house_buyers": dict.fromkeys(("b1", "b2", "b3"), "zic")},
            "house_buyers: a market room serves at least one client seat; here every seat",
        ),
    ],
)
def test_a_bad_llm_house_seat_is_refused_in_one_line_and_nothing_opens(
    request_fields: dict[str, Any], error: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    registry = RoomRegistry(
        writer=None,
        resolve_house=house_resolver,
        resolve_seller=market_seller,
        resolve_market_player=_resolver,
    )
    with pytest.raises(ValueError) as refused:
        registry.create(RoomRequest(buyers=3, secret=secret_of(38).hex(), **request_fields))
    assert str(refused.value).startswith(error) and "\n" not in str(refused.value)
    assert registry.markets == {}


def _resolver(spec: str) -> MarketPlayer | None:
    from dealroom.play.registry import resolve_player

    if spec.startswith("llm:"):
        player = resolve_player(spec)
        assert isinstance(player, LLMPlayer)
        return model_market_player(player)
    return None


async def test_an_llm_house_seller_sells_to_a_client_beside_an_llm_house_buyer() -> None:
    request = REQUEST.model_copy(update={"house_seller": "llm:fake"})
    with serve(market_seats()) as fake:
        registry, player = _registry(fake.base_url)
        async with player, _serving(registry):
            created = registry.create(request)
            assert list(created.tokens) == ["b1"]
            market = registry.markets[created.room].current
            replies: list[str] = []
            seat = ServedMarketBuyer(market, "b1")
            with anyio.fail_after(60):
                async with Client(build_app(lambda: seat, series=False)) as client:
                    await buyer_plays(client, replies)
                while any(  # noqa: ASYNC110  (each model's play returns once it has read the end)
                    market.played.get(name, {}).get("ended_by") is None for name in ("seller", "b2")
                ):
                    await anyio.sleep(0.01)
    record = market.record()
    assert record.seller == "llm:fake" and record.buyers == ("mcp", "llm:fake", "linear")
    assert not market.is_open and record.outcome.status == "deal"
    assert market.view()["players"]["seller"]["model_calls"] >= 2
    assert "error" not in market.played["seller"] and "error" not in market.played["b2"]
    assert_reads_only_its_thread("\n".join(replies), market, "b1")
    assert_reads_only_its_thread(str(market.played["b2"]["conversation"]), market, "b2")


async def test_a_player_that_raises_is_counted_absent_and_stalls_nobody() -> None:
    async def broken(room: MarketRoomServed, seat: str) -> None:
        raise RuntimeError("a bug in the player")

    market = REQUEST.run_secret()
    room = MarketRoomServed(
        "r",
        market_at(market, 0, "mid", 3),
        DEFAULT_MARKET_RULES,
        seller=SellerHouse("auctioneer", market_seller("auctioneer")),
        buyers={"b3": House("linear", house_resolver("linear"))},
        seed=market,
        run="r",
        writer=None,
        players={"b2": MarketPlayer("broken", broken)},
    )
    seat = ServedMarketBuyer(room, "b1")
    with anyio.fail_after(60):
        await room.play()
        async with Client(build_app(lambda: seat, series=False)) as client:
            await buyer_plays(client, [])
    assert room.turns.absent == {"b2"} and not room.is_open
    assert room.record().buyers == ("mcp", "broken", "linear")


@pytest.mark.slow
async def test_a_served_market_room_plays_its_llm_house_seats_with_the_servers_llm_flags(
    tmp_path: Path,
) -> None:
    """``dealroom serve --transport http --base-url ...`` in its own process: a room with an
    ``llm:`` house seller and house buyer, and a client in ``b1``; the market is stored with
    the model's seats named, and the admin view shows their usage."""
    results = tmp_path / "results.db"
    with serve(market_seats()) as fake, anyio.fail_after(90):
        flags = ("--base-url", fake.base_url, "--model-timeout", "5")
        async with serve_process(results, *flags) as (url, _):
            server = HttpServer(url, None)  # type: ignore[arg-type]  (no registry in this process)
            created = await server.create_room(
                buyers=3,
                house_seller="llm:fake",
                house_buyers={"b2": "llm:fake", "b3": "linear"},
                secret=secret_of(38).hex(),
            )
            assert list(created["tokens"]) == ["b1"]
            async with server.seat(created["tokens"]["b1"]) as client:
                end = await buyer_plays(client, [])
            assert end["outcome"] is not None
            admin = f"{url}/admin/rooms/{created['room']}"
            headers = {"Authorization": f"Bearer {ADMIN}"}
            async with httpx2.AsyncClient(verify=tls()) as http:
                while True:  # the models' plays return once they have read the end
                    view = (await http.get(admin, headers=headers)).json()
                    ended = all(p["ended_by"] is not None for p in view["players"].values())
                    if ended and view["stored"]:  # stored once the players are done
                        break
                    await anyio.sleep(0.05)
    assert set(view["players"]) == {"seller", "b2"} and view["stored"]
    assert all(p["model_calls"] >= 1 and "error" not in p for p in view["players"].values())
    with ResultsStore(results) as store:
        (record,) = dict(store.iter_markets()).values()
        (extra,) = store.market_extras().values()
    assert record.seller == "llm:fake" and record.buyers == ("mcp", "llm:fake", "linear")
    assert set(extra) == {"seller", "b2"}  # the models' usage and conversations, kept
    for seat, data in extra.items():
        assert data["model_calls"] == view["players"][seat]["model_calls"]
        assert data["conversation"] and data["ended_by"] == view["players"][seat]["ended_by"]
    # export-sft --markets clones the model seller's conversation as it was stored.
    out = tmp_path / "rows.jsonl"
    assert main(["export-sft", str(results), "--markets", "--out", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    conversation = extra["seller"]["conversation"]
    assert row["tools"] == conversation["tools"] and row["metadata"]["source"] == "conversation"
    assert [m["content"] for m in row["messages"]] == [
        m["content"] or "" for m in conversation["messages"]
    ]


async def test_an_llm_house_buyer_plays_each_market_of_a_series_with_a_fresh_conversation() -> None:
    request = RoomRequest(
        buyers=3,
        house_buyers={"b1": "llm:fake", "b2": "linear", "b3": "linear"},
        secret=secret_of(38).hex(),
        negotiations=2,
    )
    with serve(market_buyer()) as fake:
        registry, player = _registry(fake.base_url)
        async with player, _serving(registry):
            created = registry.create(request)
            assert list(created.tokens) == ["seller"]  # one client seat: a series
            series = registry.markets[created.room]
            played: list[MarketRoomServed] = []
            app = build_app(lambda: registry.served_seat(created.room, "seller"))
            async with Client(app) as client:
                for number in (1, 2):
                    if number > 1:
                        assert not (await client.call_tool("new_negotiation", {})).is_error
                    market = series.current
                    played.append(market)
                    with anyio.fail_after(60):
                        await sell(client)
                        while market.played.get("b1", {}).get("ended_by") is None:  # noqa: ASYNC110
                            await anyio.sleep(0.01)
    first, second = (market.played["b1"] for market in played)
    assert first["model_calls"] >= 1 and second["model_calls"] >= 1
    assert "error" not in first and "error" not in second
    for market, data in zip(played, (first, second), strict=True):
        conversation = str(data["conversation"])  # each market's own, from its briefing on
        assert conversation.count("This is a market: 3 buyers, you among them") == 1
        other = played[1 - played.index(market)]
        mine, theirs = (money(m.market.value("b1"), "USD") for m in (market, other))
        assert mine in conversation and theirs not in conversation

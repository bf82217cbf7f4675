"""Market rooms over HTTP: a client in the seller's seat of a 3-buyer room sells the item; a
client in a buyer's seat reads only its own thread; bad requests and calls are one line each."""

from __future__ import annotations

import os
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from market_support import assert_reads_only_its_thread, buyer_plays, create, sell
from mcp import Client, StdioServerParameters
from mcp_support import ADMIN, HttpServer, http_server, ok, refused, secret_of, tls

from dealroom.agents.market import market_seller
from dealroom.engine.market import market_view
from dealroom.protocol.market_seat import MARKET_TOOLS, market_tools
from dealroom.protocol.market_text import market_briefing
from dealroom.server.market_room import MarketRoomServed
from dealroom.server.mcp_app import OBSERVATION_URI, TRANSCRIPT_URI
from dealroom.server.negotiation import RoomLimits
from dealroom.store.results import ResultsStore

pytestmark = pytest.mark.anyio

SECRET = secret_of(38).hex()
LINEAR = {"b1": "linear", "b2": "linear", "b3": "linear"}


def _market(server: HttpServer, room: str) -> MarketRoomServed:
    return server.registry.markets[room].current


async def test_a_seller_client_of_a_three_buyer_room_sells_over_http(tmp_path: Path) -> None:
    async with http_server(tmp_path, resolve_seller=market_seller) as server:
        created = await server.create_room(buyers=3, house_buyers=LINEAR, secret=SECRET)
        assert list(created["tokens"]) == ["seller"] and created["spectator"] is not None
        async with server.seat(created["tokens"]["seller"]) as client:
            tools = (await client.list_tools()).tools  # one client seat: a series of markets
            assert [t.name for t in tools] == sorted([*MARKET_TOOLS, "new_negotiation"])
            offer = next(t for t in tools if t.name == "make_offer")
            assert offer.input_schema["required"][0] == "buyer"
            briefing = await client.get_prompt("briefing")
            assert "market with 3 buyers: b1, b2, b3" in briefing.messages[0].content.text  # type: ignore[union-attr]
            end = await sell(client)
            after = await refused(client, "make_offer", buyer="b1", price=100.0)
            assert after.startswith("negotiation_closed: ")
        market = _market(server, created["room"])
        outcome = end["outcome"]
        assert outcome["status"] == "deal" and outcome["buyer"] in ("b1", "b2", "b3")
        assert Decimal(str(outcome["price"])) > market.market.seller_cost
        stored = dict(server.registry.writer.store.iter_markets())  # type: ignore[union-attr]
        record = stored[f"{created['room']}/1"]
        assert record.seller == "mcp" and record.buyers == ("linear", "linear", "linear")
        assert record.outcome.buyer == outcome["buyer"]
        assert record.outcome.price == Decimal(str(outcome["price"]))
        async with httpx2.AsyncClient(verify=tls()) as http:
            shown = await http.get(
                f"{server.url}/admin/rooms/{created['room']}",
                headers={"Authorization": f"Bearer {ADMIN}"},
            )
        assert shown.status_code == 200
        assert shown.json()["seats"] == {"seller": "mcp", **LINEAR} and shown.json()["stored"]
        assert shown.json()["outcome"]["buyer"] == outcome["buyer"]
        await server.registry.tick()
        assert len(stored) == 1 and len(dict(server.registry.writer.store.iter_markets())) == 1  # type: ignore[union-attr]


@pytest.mark.parametrize("know_count", [True, False])
async def test_a_buyer_client_never_reads_another_buyers_value_or_thread(
    tmp_path: Path, know_count: bool
) -> None:
    async with http_server(tmp_path, resolve_seller=market_seller) as server:
        created = await server.create_room(
            buyers=3,
            house_seller="auctioneer",
            house_buyers={"b1": "linear", "b3": "boulware"},
            buyers_know_count=know_count,
            secret=SECRET,
            negotiations=1,
        )
        assert list(created["tokens"]) == ["b2"]
        replies: list[str] = []
        async with server.seat(created["tokens"]["b2"]) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            assert "new_negotiation" in tools and "make_offer" in tools
            briefing = await client.get_prompt("briefing")
            replies.append(briefing.messages[0].content.text)  # type: ignore[union-attr]
            await buyer_plays(client, replies)
            for uri in (OBSERVATION_URI, TRANSCRIPT_URI):
                contents = (await client.read_resource(uri)).contents
                replies.append("".join(getattr(c, "text", "") for c in contents))
            replies.append(await refused(client, "make_offer", price=1.0, buyer="b1"))
            replies.append(over := await refused(client, "new_negotiation"))
            assert over.startswith("series_over: ")
        assert not _market(server, created["room"]).is_open
        counted = "This is a market: 3 buyers, you among them"
        assert (counted in replies[0]) is know_count
        assert ("Other buyers may be bargaining" in replies[0]) is not know_count
        assert_reads_only_its_thread("\n".join(replies), _market(server, created["room"]), "b2")


async def test_bad_market_requests_get_one_line_and_open_nothing(tmp_path: Path) -> None:
    async with http_server(tmp_path, resolve_seller=market_seller) as server:
        bad: list[tuple[dict[str, Any], str]] = [
            ({"buyers": 0}, "buyers: "),
            ({"buyers": 17}, "buyers: "),
            ({"buyers": 3, "house_buyers": {"b9": "linear"}}, "house_buyers: no buyer b9"),
            (
                {
                    "buyers": 2,
                    "house_seller": "auctioneer",
                    "house_buyers": {"b1": "zic", "b2": "zic"},
                },
                "house_buyers: a market room serves at least one client seat",
            ),
            ({"buyers": 2, "house_seller": "auctioneer", "house_buyers": LINEAR}, "house_buyers:"),
            ({"buyers": 3, "house_buyer": "linear"}, "house_buyer: not in a market room"),
            (
                {"buyers": 3, "house_buyers": {"b1": "linear"}, "clock": "wall", "negotiations": 2},
                "negotiations: a market room with several client seats plays one market",
            ),
            ({"house_buyers": {"b1": "linear"}}, "house_buyers: only a market room"),
            ({"buyers": 2, "house_buyers": {"b1": "nobody"}}, "house_buyers.b1: unknown agent"),
            ({"buyers": 2, "house_seller": "nobody", "house_buyers": {"b1": "linear"}}, "house_se"),
        ]
        for request, start in bad:
            response = await create(server, **request)
            assert response.status_code == 400, (request, response.text)
            error = response.json()["error"]
            assert error.startswith(start) and "\n" not in error, (request, error)
        assert not server.registry.markets and not server.registry.rooms


async def test_bad_seller_calls_get_one_line_with_a_stable_code(tmp_path: Path) -> None:
    async with http_server(tmp_path, resolve_seller=market_seller) as server:
        created = await server.create_room(buyers=3, house_buyers=LINEAR, secret=SECRET)
        async with server.seat(created["tokens"]["seller"]) as client:
            before = await ok(client, "get_state")
            no_buyer = await refused(client, "make_offer", price=100.0)
            assert no_buyer.startswith("invalid_arguments: ")
            running = await refused(client, "new_negotiation")
            assert running.startswith("negotiation_running: The current market is still running")
            assert await ok(client, "get_state") == before  # nothing changed
            unknown = await refused(client, "make_offer", buyer="b7", price=100.0)
            assert unknown.startswith("unknown_buyer: ")
            view = await ok(client, "get_state")  # the offer went to no buyer
            assert not any(e["by"] == "seller" for t in view["threads"] for e in t["events"])
            assert view["actions_left"] == before["actions_left"]


async def test_a_market_seat_is_held_to_the_rooms_message_budget(tmp_path: Path) -> None:
    limits = RoomLimits(message_chars_per_series=12)
    async with http_server(tmp_path, limits=limits, resolve_seller=market_seller) as server:
        created = await server.create_room(buyers=2, house_buyers={"b1": "linear", "b2": "zic"})
        async with server.seat(created["tokens"]["seller"]) as client:
            before = await ok(client, "get_state")
            over = await refused(client, "send_message", buyer="b1", text="x" * 13)
            assert over.startswith("too_many_message_chars: ")
            assert await ok(client, "get_state") == before  # nothing was sent
            await ok(client, "send_message", buyer="b2", text="x" * 12)
            left = await refused(client, "make_offer", buyer="b1", price=900.0, message="hi")
            assert left.startswith("too_many_message_chars: ") and "0 are left" in left


async def test_a_stdio_seller_sells_in_a_series_of_three_buyer_markets_each_stored(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results.db"
    env = {k: os.environ[k] for k in ("HOME", "PATH", "PYTHONPATH") if k in os.environ}
    command = ["serve", "--role", "seller", "--buyers", "3"]
    options = ["--opponent", "linear", "--secret", SECRET, "--results", str(results)]
    dealroom = str(Path(sys.executable).parent / "dealroom")
    params = StdioServerParameters(command=dealroom, args=[*command, *options], env=env)
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            assert tools == sorted([*MARKET_TOOLS, "new_negotiation"])  # a series, as on HTTP
            end = await sell(client)
            second = await ok(client, "new_negotiation")
            assert second["series"]["negotiation"] == 2 and second["outcome"] is None
            last = await sell(client)
    assert end["outcome"]["status"] == "deal"
    with ResultsStore(results) as store:
        stored = list(store.iter_markets())
    assert [key.rpartition("/")[2] for key, _ in stored] == ["1", "2"]
    assert all(record.buyers == ("linear",) * 3 for _, record in stored)
    assert [r.outcome.buyer for _, r in stored] == [
        end["outcome"]["buyer"],
        last["outcome"]["buyer"],
    ]
    assert stored[0][1].scenario.id != stored[1][1].scenario.id


async def test_the_seller_client_reads_the_model_seats_briefing_and_tools(tmp_path: Path) -> None:
    """What an MCP client in the seller's seat reads is the market seller's one model seat (the
    ``llm:`` seller and the TRL environment read the same: tests/test_market_seat_parity.py):
    its briefing word for word, each tool's description and arguments."""
    async with http_server(tmp_path, resolve_seller=market_seller) as server:
        created = await server.create_room(buyers=3, house_buyers=LINEAR, secret=SECRET)
        market = _market(server, created["room"])
        async with server.seat(created["tokens"]["seller"]) as client:
            briefing = await client.get_prompt("briefing")
            tools = (await client.list_tools()).tools
    read = briefing.messages[0].content.text  # type: ignore[union-attr]
    view = market_view(market.market, market.engine.rules)
    assert read == market_briefing(view, series=True)  # one client seat: a series
    assert read.startswith(market_briefing(view)) and "new_negotiation starts the next" in read
    served = {t.name: (t.description, t.input_schema) for t in tools}
    model = {
        f["function"]["name"]: (f["function"]["description"], f["function"]["parameters"])
        for f in market_tools(market.engine.rules.rules, series=True)
    }
    assert served == model

"""What the market room tests share: a seller client and a buyer client that play over MCP, a
raw room request, the check that a buyer's client read nothing of another buyer's, and the wall
clock's tests' house sellers (``wall_sellers``) and injected timer (``Clock``)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import httpx2
from mcp import Client
from mcp.types import CallToolResult
from mcp_support import ADMIN, HttpServer, ok, text_of, tls

from dealroom.agents.market import market_seller
from dealroom.protocol import OfferMade
from dealroom.protocol.market import (
    MarketAgent,
    MarketAgentFactory,
    MarketDecision,
    MarketObservation,
    MarketView,
)
from dealroom.server.market_room import MarketRoomServed
from leaks import leaked

Clock = list[float]
"""An injected timer's reading, in seconds: a test moves it (``now[0] = ...``)."""


class Silent:
    """A house seller that never acts of itself: every offer it gets is answered by the wall
    clock's rule (a rejection a thinking time later), never by its agent."""

    def act(self, observation: MarketObservation, /) -> MarketDecision:
        return MarketDecision()


def wall_sellers(spec: str) -> MarketAgentFactory:
    """The market sellers, plus ``silent`` (``Silent``)."""
    if spec == "silent":

        def silent(view: MarketView, rng: object) -> MarketAgent:
            return Silent()

        return silent
    return market_seller(spec)


async def sell(client: Client) -> dict[str, Any]:
    """A simple seller: asks every open buyer a falling price, accepts the best bid that
    clears its cost by 5%; the market's view once it has ended."""
    view = await ok(client, "get_state")
    cost = Decimal(str(view["private_value"]))
    price = cost * 2
    for _ in range(80):
        if view["outcome"] is not None:
            return view
        bids = [
            (Decimal(str(offer["price"])), thread["buyer"], offer["offer_id"])
            for thread in view["threads"]
            for offer in thread["live_offers"]
            if offer["by"] == "buyer"
        ]
        if bids and max(bids)[0] >= cost * Decimal("1.05"):
            _, buyer, offer_id = max(bids)
            accepted = await client.call_tool("accept", {"buyer": buyer, "offer_id": offer_id})
            # A client buyer may replace its bid before the acceptance takes effect.
            if accepted.is_error:
                view = await ok(client, "get_state")
            else:
                assert accepted.structured_content is not None
                view = accepted.structured_content
            continue
        for thread in view["threads"]:
            if thread["open"] and view["outcome"] is None:
                rounded = float(round(price, 2))
                view = await ok(client, "make_offer", buyer=thread["buyer"], price=rounded)
        if view["outcome"] is None:
            view = await ok(client, "wait_for_opponent", timeout_s=5)
        price = max(cost * Decimal("1.05"), price * Decimal("0.9"))
    raise AssertionError("the market did not end")


async def create(server: HttpServer, **request: Any) -> httpx2.Response:
    async with httpx2.AsyncClient(verify=tls()) as http:
        return await http.post(
            f"{server.url}/admin/rooms", json=request, headers={"Authorization": f"Bearer {ADMIN}"}
        )


async def buyer_plays(client: Client, replies: list[str]) -> dict[str, Any]:
    """A buyer that offers low, concedes, and accepts a seller's offer under its value; every
    reply it reads goes to ``replies``."""

    async def call(tool: str, **arguments: Any) -> CallToolResult:
        result = await client.call_tool(tool, arguments)
        replies.append(text_of(result) + json.dumps(result.structured_content, default=str))
        return result

    state = (await call("get_state")).structured_content
    assert state is not None
    value = Decimal(str(state["observation"]["private_value"]))
    price = value * Decimal("0.5")
    update: dict[str, Any] = state["observation"]
    for _ in range(60):
        if update["outcome"] is not None:
            return update
        theirs = [o for o in update["live_offers"] if o["by"] == "seller"]
        if theirs and Decimal(str(theirs[0]["price"])) <= value:
            accepted = await call("accept", offer_id=theirs[0]["offer_id"])
            if not accepted.is_error:
                assert accepted.structured_content is not None
                return accepted.structured_content
        result = await call("make_offer", price=float(round(price, 2)))
        if result.is_error:  # the thread ended under it
            update = (await call("get_state")).structured_content["observation"]  # type: ignore[index]
            continue
        assert result.structured_content is not None
        update = result.structured_content
        if update["outcome"] is None:
            waited = (await call("wait_for_opponent", timeout_s=5)).structured_content
            assert waited is not None
            update = waited
        price = min(value * Decimal("0.95"), price * Decimal("1.08"))
    raise AssertionError("the thread did not end")


def assert_reads_only_its_thread(everything: str, room: MarketRoomServed, buyer: str) -> None:
    """Nothing in ``everything`` (all a buyer's client read) holds another buyer's value, name,
    thread id or events; its own value is found (the search works)."""
    market, record = room.market, room.record()
    public = {e.price for e in record.thread_events(buyer) if isinstance(e, OfferMade)}
    assert leaked(everything, market.value(buyer), set(), fields=()) is not None
    others = [b for b in market.buyers if b != buyer]
    for other in others:
        assert leaked(everything, market.value(other), public) is None, other
        assert f"{market.id}.{other}" not in everything
        assert f'"{other}"' not in everything and f" {other}:" not in everything
    mine = {e.model_dump_json() for e in record.thread_events(buyer)}
    theirs = {
        e.model_dump_json()
        for b in others
        for e in record.thread_events(b)
        if e.model_dump_json() not in mine
    }
    assert theirs and not any(event in everything for event in theirs)

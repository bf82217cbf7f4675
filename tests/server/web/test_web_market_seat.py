"""The seat page of a market room's seats: its views (pure, from a served market) and its routes
over loopback HTTP. A buyer's page holds its own thread only (never another buyer's value,
thread, offers or name) and the market buyer's briefing; the seller's every thread, its own cost,
the turn budget and, once over, its outcome and the measures of its own conduct; both say whose
turn the market waits for. Calls go through the seat's MCP calls and wait for its turn."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp_support import ADMIN, HttpServer, house_resolver, http_server, ok, secret_of, tls

from dealroom.agents.market import market_seller
from dealroom.engine.market import market_view
from dealroom.protocol import MakeOffer, OfferMade, RoomRequest, people_text
from dealroom.protocol.market import Addressed, MarketDecision
from dealroom.protocol.market_text import buyer_market_text, market_facts
from dealroom.protocol.people_market import LEAVE_MARKET
from dealroom.server import texts
from dealroom.server.market_room import MarketRoomServed, open_market
from dealroom.server.market_seats import ServedMarketBuyer, ServedMarketSeller
from dealroom.server.negotiation import DEFAULT_LIMITS, RoomLimits
from dealroom.server.web.market_seat_views import (
    MarketBuyerPageView,
    MarketSellerPageView,
    market_buyer_view,
    market_seller_view,
)
from dealroom.server.web.seat_calls import seller_call
from leaks import leaked

pytestmark = pytest.mark.anyio

SECRET = secret_of(38).hex()
LINEAR = {"b1": "linear", "b2": "linear", "b3": "linear"}


def market(limits: RoomLimits = DEFAULT_LIMITS, **request: Any) -> MarketRoomServed:
    """A served market room, opened as the admin API opens one (no writer)."""
    return open_market(
        "room-t",
        RoomRequest(secret=SECRET, **request),
        resolve_house=house_resolver,
        resolve_seller=market_seller,
        writer=None,
        limits=limits,
    )


def offered(room: MarketRoomServed, buyers: set[str] | None = None) -> set[Decimal]:
    """Every price offered in the market (of ``buyers``' threads only, if given)."""
    return {
        e.event.price
        for e in room.engine.referee.log
        if isinstance(e.event, OfferMade) and (buyers is None or e.buyer in buyers)
    }


def no_other_buyer(body: str, room: MarketRoomServed, buyer: str) -> None:
    """Nothing of another buyer in a buyer's page: its value, its name, its thread's prices."""
    mine = offered(room, {buyer})
    names = room.market.buyers
    for other, value in zip(names, room.market.buyer_values, strict=True):
        if other == buyer:
            continue
        assert leaked(body, value, mine, fields=("buyer_values", "seller_cost")) is None
        assert f'"{other}"' not in body and f"{other}'" not in body, other
    for price in offered(room) - mine:
        assert leaked(body, price, set(), fields=()) is None, price
    assert leaked(body, room.market.seller_cost, mine, fields=()) is None


# -- views (pure) -------------------------------------------------------------------------------


async def test_a_buyers_page_is_its_own_thread_with_the_market_buyers_briefing() -> None:
    room = market(
        buyers=3, house_seller="auctioneer", house_buyers={"b1": "linear", "b3": "boulware"}
    )
    value = room.market.buyer_values[1]
    view = market_buyer_view(room, "b2")
    assert isinstance(view, MarketBuyerPageView) and view.kind == "seat"
    assert view.role == "buyer" and view.observation.private_value == value
    assert view.briefing.rstrip().endswith(buyer_market_text(3, know_count=True))
    assert "3 buyers" in view.briefing and people_text.tool_names_in(view.briefing) == []
    assert view.turn.yours and view.turn.text.startswith("Your turn")
    assert not view.can_start_next and not view.needs_consent and view.consent is None
    no_other_buyer(view.model_dump_json(), room, "b2")

    seat = ServedMarketBuyer(room, "b2")
    for _ in range(6):  # a few moves in its thread while the house seats play theirs
        if not room.is_open:
            break
        await seat.act(MakeOffer(price=round(value * Decimal("0.6"), 2)))
        await seat.wait(20)
        body = market_buyer_view(room, "b2").model_dump_json()
        no_other_buyer(body, room, "b2")
    shown = market_buyer_view(room, "b2")
    assert shown.observation.events == (await seat.state()).observation.events
    assert shown.log and all(people_text.tool_names_in(line) == [] for line in shown.log)


async def test_a_buyer_who_is_not_told_the_count_reads_no_count() -> None:
    room = market(
        buyers=3,
        house_seller="auctioneer",
        house_buyers={"b1": "linear", "b3": "linear"},
        buyers_know_count=False,
    )
    view = market_buyer_view(room, "b2")
    assert view.briefing.rstrip().endswith(buyer_market_text(3, know_count=False))
    assert "3 buyers" not in view.briefing and "b1" not in view.model_dump_json()


async def test_the_sellers_page_shows_every_thread_its_own_cost_and_the_budget() -> None:
    room = market(buyers=3, house_buyers=LINEAR)
    view = market_seller_view(room)
    assert isinstance(view, MarketSellerPageView) and view.kind == "market_seller"
    assert view.private_value == room.market.seller_cost
    assert [t.buyer for t in view.threads] == ["b1", "b2", "b3"]
    assert all(t.seat is None for t in view.threads)  # not told who plays each buyer
    assert (view.seller_actions, view.seller_budget) == (0, 100) and view.actions_left == 100
    assert view.turn.yours and view.outcome is None and view.measures is None
    facts = market_facts(market_view(room.market, room.rules))
    for fact in (facts.threads, facts.offers, facts.clock, facts.budget):
        assert fact in view.briefing
    assert LEAVE_MARKET in view.briefing
    for text in (view.briefing, view.hint, view.turn.text):
        assert people_text.tool_names_in(text) == [], text

    seller = ServedMarketSeller(room)
    price = float(round(room.market.seller_cost * 2, 2))
    await seller.call("make_offer", {"buyer": "b1", "price": price})
    await seller.call("wait_for_opponent", {"timeout_s": 20})
    view = market_seller_view(room)
    body = view.model_dump_json()
    for value in room.market.buyer_values:
        assert leaked(body, value, offered(room), fields=("buyer_values",)) is None
    assert view.seller_actions == 1
    assert view.threads[0].log[0].endswith(f"You offered ${price:,.2f}.")
    bids = [(o.price, t.buyer) for t in view.threads for o in t.live_offers if o.by == "buyer"]
    assert view.best_bid is not None and view.best_bid.price == max(bids)[0]
    assert view.best_bid.buyer in view.hint

    best = view.best_bid
    await seller.call("accept", {"buyer": best.buyer, "offer_id": best.offer_id})
    over = market_seller_view(room)
    assert over.outcome is not None and over.outcome.buyer == best.buyer
    assert over.outcome_text == (
        f"Sold to {best.buyer} at ${best.price:,.2f}; your surplus ${over.outcome.surplus:,.2f}."
    )
    assert over.measures is not None and over.measures.probed == 1
    for thread in over.threads:  # the others' threads: sold to another buyer, by this seller
        if thread.buyer != best.buyer:
            assert thread.log[-1].endswith("you sold the item to another buyer.")
    body = over.model_dump_json()
    assert "early_sale_loss" not in body and "efficiency" not in body
    for value in room.market.buyer_values:
        assert leaked(body, value, offered(room), fields=("buyer_values",)) is None
    assert over.turn.text == "The market is over." and not over.turn.yours


def test_the_sellers_page_says_which_buyer_the_market_waits_for_and_a_buyers_never() -> None:
    """On the virtual clock the seller's page names the buyer whose turn it is (the seller
    knows every buyer; it said only "other seats are deciding"); the other buyer's page names
    no seat, and the buyer whose turn it is reads its own turn."""
    room = market(buyers=3, house_buyers={"b3": "linear"})
    assert room.turns.turn == "seller"
    offer = Addressed("b2", MakeOffer(price=room.market.base.list_price))
    room.turns.decide_seller(MarketDecision((offer,), wait=30.0))
    assert room.turns.turn == "b1"
    seller = market_seller_view(room).turn
    assert not seller.yours and seller.text.startswith("Waiting for the market: b1 is deciding")
    waiting = market_buyer_view(room, "b2")
    assert not waiting.turn.yours and "other seats are deciding" in waiting.turn.text
    no_other_buyer(waiting.model_dump_json(), room, "b2")
    assert market_buyer_view(room, "b1").turn.text.startswith("Your turn")


async def test_a_wall_clock_markets_pages_say_the_wall_clock_and_no_turns() -> None:
    """On the wall clock a seat's page says real time, never a turn to wait for, and both
    briefings state the wall clock's rule (they said the virtual clock's, merged from two
    branches that each knew one half)."""
    room = market(buyers=3, house_buyers={"b1": "linear", "b3": "linear"}, clock="wall")
    seller = market_seller_view(room)
    wall = market_facts(market_view(room.market, room.rules), "wall").clock
    assert wall in seller.briefing
    assert market_facts(market_view(room.market, room.rules)).clock not in seller.briefing
    assert seller.turn.yours and "real time" in seller.turn.text
    buyer = market_buyer_view(room, "b2")
    observation = room.buyer_calls["b2"].observe(deliver=False)
    person = texts.people_briefing(observation, room.rules.rules, clock="wall", surface="web")
    assert buyer.briefing.startswith(person)
    assert buyer.turn.yours and "real time" in buyer.turn.text
    no_other_buyer(buyer.model_dump_json(), room, "b2")


async def test_a_wall_clock_sellers_page_reads_a_wait_still_asleep_as_buyers_deciding() -> None:
    """A wait the server stops waiting on (``max_wait_s``) reads, on the wall clock, that the
    buyers are still deciding, not that the market waits for other seats (it waits for none)."""
    room = market(
        RoomLimits(max_wait_s=0.1), buyers=3, house_buyers=LINEAR, clock="wall", deadline=60.0
    )
    seat = ServedMarketSeller(room)
    with anyio.fail_after(5):  # its first call: the clock starts, the buyers' first moves 1 s on
        reply = await seller_call(seat, "wait_for_opponent", {"timeout_s": 30})
    assert reply["text"] == "The buyers are still deciding; their moves will appear here."


# -- routes (HTTP) ------------------------------------------------------------------------------


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def post_call(server: HttpServer, token: str, tool: str, **arguments: Any) -> dict[str, Any]:
    async with httpx2.AsyncClient(verify=tls(), timeout=30) as http:
        response = await http.post(
            f"{server.url}/web/api/seat/call",
            json={"tool": tool, "arguments": arguments},
            headers=auth(token),
        )
    assert response.status_code == 200, response.text
    return response.json()


async def get_view(server: HttpServer, token: str) -> dict[str, Any]:
    async with httpx2.AsyncClient(verify=tls()) as http:
        response = await http.get(f"{server.url}/web/api/seat", headers=auth(token))
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_person_sells_through_the_seat_page_in_a_market_of_house_buyers(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path) as server:
        created = await server.create_room(buyers=3, house_buyers=LINEAR, secret=SECRET)
        token = created["tokens"]["seller"]
        served = server.registry.markets[created["room"]].current
        first = MarketSellerPageView.model_validate(await get_view(server, token))
        assert first.turn.yours and len(first.threads) == 3
        price = float(round(served.market.seller_cost * 2, 2))
        reply = await post_call(server, token, "make_offer", buyer="b2", price=price)
        assert reply["text"] == "Done." and reply["result"]["actions_left"] == 99
        waited = await post_call(server, token, "wait_for_opponent")
        assert waited["text"] in {"A buyer moved.", "No buyer moved in that time."}
        view = MarketSellerPageView.model_validate(await get_view(server, token))
        assert view.best_bid is not None
        best = view.best_bid
        sold = await post_call(server, token, "accept", buyer=best.buyer, offer_id=best.offer_id)
        assert sold["text"] == "Done." and sold["result"]["outcome"]["buyer"] == best.buyer
        over = MarketSellerPageView.model_validate(await get_view(server, token))
        assert over.outcome_text is not None and over.outcome_text.startswith("Sold to")
        assert over.measures is not None and served.stored  # stored as an MCP seller's is
        late = await post_call(server, token, "make_offer", buyer="b1", price=price)
        assert late["error"]["code"] == "negotiation_closed"
        assert people_text.tool_names_in(late["error"]["text"]) == []


async def test_a_seat_page_plays_the_rooms_series_of_markets(tmp_path: Path) -> None:
    """A room of one client seat plays a series: the page's *Next market* (the seller's) and
    *Next negotiation* (a buyer's, the bilateral page's) start the next market through the
    seat's series, and the page shows its number and the totals (the page called a seat
    without the series: new_negotiation was refused series_over)."""
    async with http_server(tmp_path, resolve_seller=market_seller) as server:
        created = await server.create_room(
            buyers=3, house_buyers=LINEAR, secret=SECRET, negotiations=2
        )
        token = created["tokens"]["seller"]
        left = await post_call(server, token, "walk_away")
        assert left["result"]["outcome"]["end_reason"] == "walk_away"
        over = MarketSellerPageView.model_validate(await get_view(server, token))
        assert (over.negotiation, over.finished, over.can_start_next) == (1, 1, True)
        nxt = await post_call(server, token, "new_negotiation")
        assert "error" not in nxt, nxt
        second = MarketSellerPageView.model_validate(await get_view(server, token))
        assert (second.negotiation, second.finished, second.open) == (2, 1, True)
        assert not second.can_start_next
        assert second.market != over.market

        bought = await server.create_room(
            buyers=3,
            house_seller="auctioneer",
            house_buyers={"b1": "linear", "b3": "linear"},
            secret=SECRET,
            negotiations=2,
        )
        buyer = bought["tokens"]["b2"]
        await post_call(server, buyer, "walk_away")
        page = MarketBuyerPageView.model_validate(await get_view(server, buyer))
        assert page.can_start_next and not page.series_over and page.finished == 1
        await post_call(server, buyer, "new_negotiation")
        page = MarketBuyerPageView.model_validate(await get_view(server, buyer))
        assert page.negotiation == 2 and page.observation.outcome is None


async def test_market_seat_page_refusals_are_one_line_with_a_code(tmp_path: Path) -> None:
    async with (
        http_server(tmp_path, resolve_seller=market_seller) as server,
        httpx2.AsyncClient(verify=tls()) as http,
    ):
        created = await server.create_room(buyers=3, house_buyers=LINEAR, secret=SECRET)
        seller = created["tokens"]["seller"]
        buyers = await server.create_room(
            buyers=2, house_seller="auctioneer", house_buyers={"b1": "linear"}
        )
        buyer = buyers["tokens"]["b2"]
        for path in ("/web/api/seat", "/web/api/seat/events"):
            for token in (seller[:-1], created["spectator"], ADMIN):
                response = await http.get(f"{server.url}{path}", headers=auth(token))
                assert response.status_code == 401, (path, response.text)
                assert response.json() == {"error": "missing or wrong seat token"}
        # The seller's tools take a buyer; a buyer's are the bilateral buyer's.
        unknown = await post_call(server, seller, "make_offer", buyer="b9", price=900.0)
        assert unknown["error"]["code"] == "unknown_buyer"
        missing = await post_call(server, seller, "make_offer", price=900.0)
        assert missing["error"]["code"] == "invalid_arguments"
        other = await post_call(server, buyer, "make_offer", buyer="b1", price=900.0)
        assert other["error"]["code"] == "invalid_arguments"
        tool = await post_call(server, buyer, "open_the_books")
        assert tool["error"]["code"] == "unknown_tool"
        assert "open_the_books" not in tool["error"]["text"]
        for token in (seller, buyer):
            consent = await http.post(
                f"{server.url}/web/api/seat/consent", json={}, headers=auth(token)
            )
            assert consent.status_code == 400
            assert consent.json() == {"error": "this room asks for no consent"}
            bad = await http.post(
                f"{server.url}/web/api/seat/call", content=b"{", headers=auth(token)
            )
            assert bad.status_code == 400 and bad.json() == {"error": "the body must be JSON"}
            page = await http.post(
                f"{server.url}/web/api/seat/page", json={"event": "x"}, headers=auth(token)
            )
            assert page.status_code == 400 and set(page.json()) == {"error"}
            opened = await http.post(
                f"{server.url}/web/api/seat/page", json={"event": "open"}, headers=auth(token)
            )
            assert opened.status_code == 204
        views = [await get_view(server, t) for t in (seller, buyer)]
        assert views[0]["seller_actions"] == 0  # refused: no valid action spent
        assert views[1]["observation"]["events"] == []  # nothing else changed


async def test_a_buyers_page_call_waits_for_its_turn_and_says_whose_it_is(tmp_path: Path) -> None:
    """A seller's MCP client and a buyer's page in one market: the page's call is served at the
    buyer's turn, after the seller's client has decided; meanwhile the page says it waits."""
    async with http_server(tmp_path) as server:
        created = await server.create_room(buyers=2, house_buyers={"b1": "linear"}, secret=SECRET)
        buyer = created["tokens"]["b2"]
        async with server.seat(created["tokens"]["seller"]) as seller:
            view = await get_view(server, buyer)
            assert not view["turn"]["yours"]  # the seller's client decides first
            assert view["turn"]["text"].startswith("Waiting for the market")
            replies: list[dict[str, Any]] = []
            woke: list[dict[str, Any]] = []
            answered = anyio.Event()

            async def bid() -> None:
                replies.append(await post_call(server, buyer, "make_offer", price=300.0))
                answered.set()

            async def seller_waits() -> None:
                woke.append(await ok(seller, "wait_for_opponent", timeout_s=30))

            with anyio.fail_after(20):
                async with anyio.create_task_group() as group:
                    group.start_soon(bid)
                    await anyio.sleep(0.3)
                    assert replies == []  # held until the buyer's turn
                    await ok(seller, "make_offer", buyer="b2", price=5000.0)
                    assert replies == []  # the seller's client still holds the clock
                    group.start_soon(seller_waits)  # it sleeps: the clock goes on to b2's turn
                    await answered.wait()
                    mine = await get_view(server, buyer)
                    assert mine["turn"] == {
                        "yours": True,
                        "text": "Your turn: the market's clock waits for your move.",
                    }
                    assert woke == []  # the seller's wait waits for the page's next move
                    left = await post_call(server, buyer, "walk_away")
                    assert left["result"]["ok"]
            (reply,) = replies
            assert reply["result"]["ok"] and reply["text"].startswith("Done.")
            assert woke[0]["threads"][1]["open"] is False
            thread = woke[0]["threads"][1]
            assert any(e["by"] == "buyer" and e.get("price") == 300.0 for e in thread["events"])
        body = json.dumps(await get_view(server, buyer))
        no_other_buyer(body, server.registry.markets[created["room"]].current, "b2")


async def test_a_market_seats_page_is_live_and_takes_no_study_step(tmp_path: Path) -> None:
    async with (
        http_server(tmp_path) as server,
        httpx2.AsyncClient(verify=tls(), timeout=10) as http,
    ):
        created = await server.create_room(buyers=3, house_buyers=LINEAR, secret=SECRET)
        token = created["tokens"]["seller"]
        url = f"{server.url}/web/api/seat/events"
        async with http.stream("GET", url, headers=auth(token)) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            async for line in stream.aiter_lines():
                if line.startswith("data: "):
                    view = MarketSellerPageView.model_validate_json(line.removeprefix("data: "))
                    assert view.room == created["room"] and len(view.threads) == 3
                    break
            else:
                raise AssertionError("the stream sent no view")
        for step in ("quiz", "form"):
            response = await http.post(
                f"{server.url}/web/api/seat/{step}", json={"answers": []}, headers=auth(token)
            )
            assert response.status_code == 400
            assert response.json() == {"error": "this is a study participant's request"}

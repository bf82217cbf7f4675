"""A person in a market room in a real browser (headless Debian Chromium through Selenium): the
seller of three house buyers, every thread side by side with its controls, to the sale; and a
buyer beside two house buyers and a house seller, on the bilateral buyer's page of its own
thread. Each page passes axe, names no tool, shows no other seat's value, and wraps on a phone.

Set DEALROOM_SCREENSHOTS=DIR to save the pages' screenshots there.
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from browser_support import (
    axe_violations,
    chromium,
    needs_axe,
    needs_browser,
    server_thread,
    svg_text_contrast,
    until,
)
from mcp_support import secret_of

from dealroom.agents.market import market_seller
from dealroom.protocol import OfferMade, people_text
from dealroom.protocol.market_text import buyer_market_text
from dealroom.protocol.people_market import LEAVE_MARKET
from dealroom.server.market_room import MarketRoomServed

pytestmark = [needs_browser(), needs_axe(), pytest.mark.slow]  # a real browser: seconds a test

XSS = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'
LINEAR = {"b1": "linear", "b2": "linear", "b3": "linear"}

_COLUMNS = """
return [...document.querySelectorAll("#m-threads > .thread")].map((c) => ({
  buyer: c.dataset.buyer, left: Math.round(c.getBoundingClientRect().left),
  won: c.classList.contains("won"), offers: c.querySelector("svg.chart").dataset.offers }));
"""


def columns(driver: Any) -> list[dict[str, Any]]:
    return list(driver.execute_script(_COLUMNS))


def by_id(driver: Any, element: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, element)


def shown(driver: Any, element: str) -> Any:
    found = by_id(driver, element)
    return found if found.is_displayed() else None


def screenshot(driver: Any, name: str) -> None:
    folder = os.environ.get("DEALROOM_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1200, min(int(height) + 140, 2400))
        driver.save_screenshot(str(Path(folder) / name))
        driver.set_window_size(1200, 1000)


def secret_values(room: MarketRoomServed, *, but: str | None = None) -> list[str]:
    """The private values a page may not show (each as the page prints money), less those
    offered in public anyway."""
    market = room.market
    offered = {e.event.price for e in room.engine.referee.log if isinstance(e.event, OfferMade)}
    values = [v for b, v in zip(market.buyers, market.buyer_values, strict=True) if b != but]
    if but is not None:
        values.append(market.seller_cost)
    return [f"${v:,.2f}" for v in values if v not in offered]


def body(driver: Any) -> str:
    return str(driver.find_element("tag name", "body").text)


def test_a_person_sells_to_three_house_buyers_in_the_browser(tmp_path: Path) -> None:
    with server_thread(tmp_path) as server, chromium() as driver:
        created = server.create(buyers=3, house_buyers=LINEAR, secret=secret_of(38).hex())
        room = server.registry.markets[created.room].current
        driver.get(f"{server.url}/web/seat#token={created.tokens['seller']}")
        until(lambda: by_id(driver, "status").text == "live", "the seat page to go live")
        until(lambda: len(columns(driver)) == 3, "three buyers' columns")
        assert [c["buyer"] for c in columns(driver)] == ["b1", "b2", "b3"]
        assert len({c["left"] for c in columns(driver)}) == 3  # side by side
        assert not driver.find_elements("css selector", "main#main")  # one main: the market's
        assert by_id(driver, "m-turn").text.startswith("Your turn")
        assert f"${room.market.seller_cost:,.2f}" in by_id(driver, "value").text
        assert by_id(driver, "m-leave").text == LEAVE_MARKET
        assert "0 of 100 used, 100 left" in by_id(driver, "m-facts").text
        assert axe_violations(driver) == []

        price = f"{room.market.seller_cost * 2:.2f}"
        by_id(driver, "m-price-b1").send_keys(price)
        by_id(driver, "m-offer-message-b1").send_keys(XSS)
        by_id(driver, "m-make-offer-b1").click()
        until(lambda: "b1: Done." in by_id(driver, "m-replies").text, "the offer's reply")
        until(lambda: columns(driver)[0]["offers"] != "0", "the offer in b1's column")
        assert "<script>" in body(driver) and driver.title == "dealroom: your seat"
        assert "1 of 100 used" in by_id(driver, "m-facts").text
        by_id(driver, "m-price-b2").send_keys("-5")
        by_id(driver, "m-make-offer-b2").click()
        until(lambda: "Refused:" in by_id(driver, "m-replies").text, "the refusal")
        for _ in range(20):  # wait for bids, then take the highest
            if by_id(driver, "m-facts").text.split("highest bid")[-1].strip() != "none":
                break
            by_id(driver, "m-wait").click()
            until(
                lambda: by_id(driver, "m-wait").get_attribute("aria-disabled") == "false",
                "the wait",
            )
        best = room.watched().best_bid()
        assert best is not None
        buyer = best[0]
        until(lambda: shown(driver, f"m-accept-{buyer}"), f"{buyer}'s live offer")
        assert not [s for s in secret_values(room) if s in body(driver)]  # no buyer's value
        assert people_text.tool_names_in(body(driver)) == []
        screenshot(driver, "web-market-seller.png")
        by_id(driver, f"m-accept-{buyer}").click()
        until(lambda: "Sold to" in by_id(driver, "m-outcome").text, "the sale")
        assert f"Sold to {buyer}" in by_id(driver, "m-outcome").text
        assert [c["buyer"] for c in columns(driver) if c["won"]] == [buyer]
        assert "How you sold" in by_id(driver, "m-measures").text
        assert not shown(driver, "m-market-controls")
        assert not [s for s in secret_values(room) if s in body(driver)]
        assert room.stored or room.writer is not None
        assert axe_violations(driver) == [] and svg_text_contrast(driver) == []
        screenshot(driver, "web-market-seller-ended.png")
        driver.set_window_size(420, 900)  # a phone: the columns wrap, one under another
        until(lambda: len({c["left"] for c in columns(driver)}) == 1, "the columns to wrap")


def test_a_person_buys_beside_house_buyers_in_the_browser(tmp_path: Path) -> None:
    with server_thread(tmp_path, resolve_seller=market_seller) as server, chromium() as driver:
        created = server.create(
            buyers=3,
            house_seller="auctioneer",
            house_buyers={"b1": "linear", "b3": "boulware"},
            secret=secret_of(38).hex(),
        )
        room = server.registry.markets[created.room].current
        value = room.market.buyer_values[1]
        driver.get(f"{server.url}/web/seat#token={created.tokens['b2']}")
        until(lambda: by_id(driver, "status").text == "live", "the seat page to go live")
        assert not driver.find_elements("css selector", "main#market-seat")
        assert f"${value:,.2f}" in by_id(driver, "value").text
        assert buyer_market_text(3, know_count=True) in by_id(driver, "briefing").text
        until(lambda: shown(driver, "turn"), "whose turn it is")
        assert axe_violations(driver) == []

        by_id(driver, "offer-price").send_keys(f"{value * Decimal('0.5'):.2f}")
        by_id(driver, "make-offer").click()
        until(lambda: by_id(driver, "chart").get_attribute("data-offers") != "0", "my offer")
        for _ in range(8):  # hear from the seller a few times, or to the end
            if not shown(driver, "wait"):
                break
            by_id(driver, "wait").click()
            until(
                lambda: by_id(driver, "wait").get_attribute("aria-disabled") == "false", "the wait"
            )
        page = body(driver)
        assert not [s for s in secret_values(room, but="b2") if s in page]
        for other in ("b1", "b3"):
            assert other not in page and other not in driver.page_source
        assert people_text.tool_names_in(page) == []
        assert axe_violations(driver) == [] and svg_text_contrast(driver) == []
        screenshot(driver, "web-market-buyer.png")
        driver.set_window_size(420, 900)  # a phone: the page's parts one under another
        lefts = (
            "return [...document.querySelectorAll('#seat-page > section')]"
            ".filter((s) => s.offsetParent)"
            ".map((s) => Math.round(s.getBoundingClientRect().left))"
        )
        until(lambda: len(set(driver.execute_script(lefts))) == 1, "the page to wrap")

"""The room page of a market room in a real browser (headless Debian Chromium through Selenium):
three buyers' threads side by side, live, then the outcome and the scoring.

Set DEALROOM_SCREENSHOTS=DIR to save the page's screenshots there.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from anyio.from_thread import start_blocking_portal
from browser_support import (
    WAIT_S,
    axe_violations,
    chromium,
    needs_axe,
    needs_browser,
    server_thread,
    svg_text_contrast,
    until,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_support import ok, secret_of
from test_web_market_room import sell

from dealroom.protocol import OfferMade

pytestmark = [needs_browser(), needs_axe(), pytest.mark.slow]  # a real browser: seconds a test

XSS = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'
LINEAR = {"b1": "linear", "b2": "linear", "b3": "linear"}


@asynccontextmanager
async def mcp_seat(url: str, token: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(WAIT_S)) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,  # type: ignore[arg-type]
    ):
        yield client


_COLUMNS = """
return [...document.querySelectorAll("#threads > .thread")].map((c) => ({
  buyer: c.dataset.buyer, left: Math.round(c.getBoundingClientRect().left),
  won: c.classList.contains("won"), offers: c.querySelector("svg.chart").dataset.offers }));
"""


def columns(driver: Any) -> list[dict[str, Any]]:
    """The thread columns as they are now, read in one script (each view redraws them, so an
    element found before may be gone by the time it is read)."""
    return list(driver.execute_script(_COLUMNS))


def lefts(driver: Any) -> list[int]:
    return [column["left"] for column in columns(driver)]


def screenshot(driver: Any, name: str) -> None:
    folder = os.environ.get("DEALROOM_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1200, min(int(height) + 140, 2400))
        driver.save_screenshot(str(Path(folder) / name))
        driver.set_window_size(1200, 1000)


def test_the_room_page_shows_a_markets_threads_side_by_side_and_its_outcome(
    tmp_path: Path,
) -> None:
    with (
        server_thread(tmp_path) as server,
        chromium() as driver,
        start_blocking_portal() as portal,
    ):
        created = server.create(buyers=3, house_buyers=LINEAR, secret=secret_of(38).hex())
        assert created.spectator is not None
        served = server.registry.markets[created.room].current
        market = served.market
        secrets = [f"{v:,.2f}" for v in (market.seller_cost, *market.buyer_values)]
        driver.get(f"{server.url}/web/room#token={created.spectator}")
        until(lambda: by_id(driver, "status").text == "live", "the room page to go live")
        until(lambda: len(columns(driver)) == 3, "three thread columns")
        assert [c["buyer"] for c in columns(driver)] == ["b1", "b2", "b3"]
        assert by_id(driver, "item").text.endswith("(market 1, 3 buyers)")
        assert not driver.find_elements("css selector", "#negotiation")  # one main: the market
        assert len(set(lefts(driver))) == 3  # side by side on a wide window

        with portal.wrap_async_context_manager(
            mcp_seat(server.url, created.tokens["seller"])
        ) as seller:
            price = float(round(market.seller_cost * 2, 2))
            portal.call(lambda: ok(seller, "make_offer", buyer="b1", price=price, message=XSS))
            until(lambda: columns(driver)[0]["offers"] == "2", "the seller's offer in b1's column")
            page = driver.find_element("tag name", "body").text
            assert "<script>" in page and driver.title == "dealroom: live room"
            assert "1 of 100 used" in by_id(driver, "market-facts").text
            assert "highest bid" in page
            offered = {  # a price offered is public, even one equal to a value
                f"{e.event.price:,.2f}"
                for e in served.engine.referee.log
                if isinstance(e.event, OfferMade)
            }
            assert not [s for s in secrets if s in page and s not in offered]  # no value yet
            assert axe_violations(driver) == []
            screenshot(driver, "web-market.png")
            end = portal.call(sell, seller)

        winner = end["outcome"]["buyer"]
        until(lambda: "Sold to" in by_id(driver, "market-outcome").text, "the outcome")
        assert f"Sold to {winner}" in by_id(driver, "market-outcome").text
        assert len(columns(driver)) == 3
        assert [c["buyer"] for c in columns(driver) if c["won"]] == [winner]
        values = by_id(driver, "market-values").text
        assert all(secret in values for secret in secrets)  # every value once it is over
        scores = by_id(driver, "market-scores").text
        for label in ("efficiency", "allocative", "seller's share of the best price", "fixation"):
            assert label in scores
        assert driver.find_elements("css selector", "#threads img") == []
        assert axe_violations(driver) == [] and svg_text_contrast(driver) == []
        screenshot(driver, "web-market-ended.png")
        driver.set_window_size(420, 900)  # a phone: the columns wrap, one under another
        until(lambda: len(set(lefts(driver))) == 1, "the columns to wrap on a narrow window")

        with portal.wrap_async_context_manager(  # the room's series: the page follows it
            mcp_seat(server.url, created.tokens["seller"])
        ) as seller:
            portal.call(lambda: ok(seller, "new_negotiation"))
        next_title = "the next market's title"
        until(lambda: by_id(driver, "item").text.endswith("(market 2, 3 buyers)"), next_title)
        until(lambda: "running" in by_id(driver, "market-outcome").text, "the next market, open")


def by_id(driver: Any, element: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, element)

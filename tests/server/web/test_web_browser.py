"""The pages in a real browser (headless Debian Chromium through Selenium): a person plays a
whole negotiation against a house agent, and a spectator page follows two MCP clients live.

Set DEALROOM_SCREENSHOTS=DIR to save the pages' screenshots there (docs/images comes from it).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
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
    until,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_support import ADMIN

from dealroom.analysis.report import FEATURE_LABELS
from dealroom.play.backends import SerialBackend
from dealroom.play.tournament import Tournament, TournamentConfig
from dealroom.protocol import people_text
from dealroom.store.results import ResultsStore

pytestmark = [needs_browser(), needs_axe(), pytest.mark.slow]  # a real browser: seconds a test

XSS = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'


def screenshot(driver: Any, name: str) -> None:
    folder = os.environ.get("DEALROOM_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1200, min(int(height) + 140, 2200))
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(str(Path(folder) / name))


def by_id(driver: Any, element: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, element)


def shown(driver: Any, element: str) -> Any:
    from selenium.common.exceptions import NoSuchElementException

    try:
        found = by_id(driver, element)
    except NoSuchElementException:
        return None
    return found if found.is_displayed() else None


def test_a_person_plays_a_whole_negotiation_in_the_browser_against_a_house_agent(
    tmp_path: Path,
) -> None:
    with server_thread(tmp_path) as server, chromium() as driver:
        created = server.create(
            house_seller="conceder", secret="21e721c35a5823fdb452fa2f9f0a612c", deadline=600
        )
        driver.get(f"{server.url}/web/seat#token={created.tokens['buyer']}")
        until(lambda: by_id(driver, "status").text == "live", "the seat page to go live")
        assert "#token" not in driver.current_url  # the token leaves the address bar
        value = by_id(driver, "value").text
        assert value.startswith("your value (the most you would pay) $")
        # A refused offer shows its message, in the page's words (people_text.refusal).
        by_id(driver, "offer-price").send_keys("-5")
        by_id(driver, "make-offer").click()
        until(lambda: by_id(driver, "refusals").text.strip() != "", "the refusal")
        assert people_text.tool_names_in(by_id(driver, "refusals").text) == []
        price = by_id(driver, "offer-price")
        price.clear()
        price.send_keys("1.00")
        by_id(driver, "offer-message").send_keys(XSS)
        by_id(driver, "make-offer").click()
        until(lambda: by_id(driver, "chart").get_attribute("data-offers") != "0", "my offer")
        for _ in range(20):  # wait for their offers until one is live, then take it
            if shown(driver, "accept"):
                break
            by_id(driver, "wait").click()
            until(lambda: not by_id(driver, "wait").get_attribute("disabled"), "the wait")
        until(lambda: shown(driver, "accept"), "their live offer")
        screenshot(driver, "web-seat.png")
        by_id(driver, "accept").click()
        until(lambda: "Deal at" in by_id(driver, "outcome").text, "the deal")
        assert "your surplus" in by_id(driver, "outcome").text
        assert driver.title == "dealroom: your seat"  # the message never ran as HTML
        messages = by_id(driver, "messages")
        assert "<script>" in messages.text
        assert messages.find_elements("tag name", "img") == []
        room = server.registry.rooms[created.room]
        assert room.series.finished == 1 and room.current.referee.outcome is not None
        assert room.current.referee.outcome.status == "deal"


@asynccontextmanager
async def mcp_seat(url: str, token: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(WAIT_S)) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,  # type: ignore[arg-type]
    ):
        yield client


Call = tuple[Client, str, dict[str, Any]]


async def ok(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def concurrently(*calls: Call) -> None:
    with anyio.fail_after(WAIT_S):
        async with anyio.create_task_group() as group:
            for client, name, arguments in calls:
                group.start_soon(ok, client, name, arguments)


def test_a_spectator_page_follows_two_mcp_clients_live(tmp_path: Path) -> None:
    with (
        server_thread(tmp_path) as server,
        chromium() as driver,
        start_blocking_portal() as portal,
    ):
        created = server.create(secret="4ca669ac3713d1f4aea07dae8dcc0d1c")
        room = server.registry.rooms[created.room]
        scenario = room.current.scenario
        driver.get(f"{server.url}/web/room#token={created.spectator}")
        until(lambda: by_id(driver, "status").text == "live", "the room page to go live")
        offers = lambda: by_id(driver, "chart").get_attribute("data-offers")  # noqa: E731
        with (
            portal.wrap_async_context_manager(mcp_seat(server.url, created.tokens["buyer"])) as b,
            portal.wrap_async_context_manager(mcp_seat(server.url, created.tokens["seller"])) as s,
        ):

            def tool(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
                return portal.call(ok, client, name, arguments)

            def together(first: Call, second: Call) -> None:
                """Two seats' calls at once: on the virtual clock an action of one client
                takes effect once the other client has made its own move or wait."""
                portal.call(concurrently, first, second)

            low = round(float(scenario.list_price) * 0.5, 2)
            together(
                (b, "make_offer", {"price": low, "message": XSS}),
                (s, "wait_for_opponent", {"timeout_s": 30}),
            )
            until(lambda: offers() == "1", "the buyer's offer on the page")
            assert "<script>" in by_id(driver, "messages").text
            high = float(scenario.list_price)
            together(
                (s, "make_offer", {"price": high, "message": "meet me here"}),
                (b, "wait_for_opponent", {"timeout_s": 30}),
            )
            until(lambda: offers() == "2", "the seller's offer on the page")
            page = driver.find_element("tag name", "body").text
            for secret in (scenario.buyer_value, scenario.seller_cost):
                assert f"{secret:,.2f}" not in page  # no private value before the end
            screenshot(driver, "web-room.png")
            assert axe_violations(driver) == []  # accessible, as the seat page is
            theirs = tool(b, "get_state")["observation"]["live_offers"]
            offer = next(o for o in theirs if o["by"] == "seller")
            together(
                (b, "accept", {"offer_id": offer["offer_id"]}),
                (s, "wait_for_opponent", {"timeout_s": 30}),
            )
        until(lambda: "Deal at" in by_id(driver, "outcome").text, "the outcome on the page")
        split = by_id(driver, "split").text
        assert f"{scenario.buyer_value:,.2f}" in split and f"{scenario.seller_cost:,.2f}" in split
        assert driver.title == "dealroom: live room"
        assert by_id(driver, "messages").find_elements("tag name", "img") == []
        screenshot(driver, "web-room-ended.png")
        assert axe_violations(driver) == []


def test_a_participant_agrees_then_plays_on_the_wall_clock_and_the_deal_is_stored(
    tmp_path: Path,
) -> None:
    consent = "I agree to take part; my offers and messages are recorded."
    with server_thread(tmp_path) as server, chromium() as driver:
        created = server.create(
            house_seller="conceder", clock="wall", deadline=60, participant="p01", consent=consent
        )
        driver.get(f"{server.url}/web/seat#token={created.tokens['buyer']}")
        until(lambda: shown(driver, "consent-page"), "the instructions and consent")
        assert by_id(driver, "consent-text").text == consent
        assert "You are the buyer" in by_id(driver, "consent-briefing").text
        assert not shown(driver, "seat-page")
        screenshot(driver, "web-consent.png")
        by_id(driver, "agree").click()
        until(lambda: shown(driver, "seat-page"), "the seat page after agreeing")
        # On the wall clock the house agent's offer arrives by itself: no wait pressed.
        until(lambda: shown(driver, "accept"), "the house agent's offer, live", timeout=15)
        by_id(driver, "accept").click()
        until(lambda: "Deal at" in by_id(driver, "outcome").text, "the deal")
        room = server.registry.rooms[created.room]
        until(lambda: not room.records.has_pending(), "the result in the store")
    with ResultsStore(tmp_path / "results.db", create=False) as store:
        (row,) = store.iter("p01")
        assert row.extra["participant"] == "p01"
        assert list(row.extra["consent"]["agreed"]) == ["buyer"]
        assert row.record.outcome.status == "deal"


def test_the_tournament_page_shows_a_runs_progress_and_leaderboard(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "results.db") as store:
        agents = ("boulware", "conceder", "hardliner")
        config = TournamentConfig(agents=agents, tiers=("low", "mid"), per_pair=2)
        Tournament(config, store, "cup").run(backend=SerialBackend())
        # "a-killed": 3 of its 48 negotiations stored two minutes ago, then its writer died.
        store.set_run_config("a-killed", {**(store.run_config("cup") or {}), "per_pair": 4})
        for i, row in enumerate(list(store.iter("cup"))[:3]):
            store.add(f"a-killed/{i}", row.record, run="a-killed")
    with sqlite3.connect(tmp_path / "results.db") as db:
        old = (datetime.now(UTC) - timedelta(seconds=120)).isoformat(timespec="seconds")
        db.execute("UPDATE negotiations SET finished_at = ? WHERE run = 'a-killed'", (old,))
    with server_thread(tmp_path) as server, chromium() as driver:
        driver.get(f"{server.url}/web/tournament#token={ADMIN}")
        until(lambda: "24 of 24" in by_id(driver, "progress-text").text, "the run's progress")
        assert "(finished)" in by_id(driver, "progress-text").text
        until(lambda: "stopped at 3 of 48" in by_id(driver, "runs").text, "the killed run")
        rows = driver.find_elements("css selector", "#leaderboard tr.board-row")
        assert {r.text.split()[0] for r in rows} == set(agents)
        assert "cup" in by_id(driver, "runs").text
        plots = driver.find_elements("css selector", "#plots-surplus-by-tier img")
        until(
            lambda: (
                len(plots) == 2
                and all(
                    driver.execute_script("return arguments[0].naturalWidth", p) == 320
                    for p in plots
                )
            ),
            "the plots, drawn",
        )
        features = driver.find_elements("css selector", "#plots-feature img")
        assert len(features) == len(FEATURE_LABELS)
        screenshot(driver, "web-tournament.png")
        assert axe_violations(driver) == []
        driver.find_element("link text", "a-killed").click()
        until(lambda: "Not finished" in by_id(driver, "progress-text").text, "the killed run")
        assert "3 of 48 negotiations stored" in by_id(driver, "progress-text").text
        assert "stopped (last result" in by_id(driver, "progress-text").text

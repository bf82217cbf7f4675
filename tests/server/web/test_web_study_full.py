"""A whole study in a real browser, as a researcher runs it (issue 26): two solo participants
against a house agent (one with the mouse at desktop size, one by keyboard alone on a phone) and
one pair playing each other in two tabs; then the researcher's study page, live, checked by
axe-core, and its CSV downloads checked against the results store, value for value."""

from __future__ import annotations

import csv
import io
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx2
import pytest
from browser_support import (
    WAIT_S,
    ThreadServer,
    axe_violations,
    chromium,
    needs_axe,
    needs_browser,
    server_thread,
    until,
)
from mcp_support import ADMIN
from test_web_study_page import DESKTOP, PHONE, by_id, open_page, press, shown, tab_to

from dealroom.store.results import ResultsStore

pytestmark = [needs_browser(), needs_axe(), pytest.mark.slow]

SECRET = "8c1f0e2d9b7a64531e2f0a9c8d7b6e5f"
PAYOFF = {"exchange_rate": "0.1", "show_up_fee": "2", "currency": "EUR"}


def create(server: ThreadServer, **fields: Any) -> dict[str, Any]:
    """POST /admin/studies (what ``dealroom study create`` sends)."""
    body = {"secret": SECRET, "clock": "virtual", "payoff": PAYOFF, "completion_code": "OK1"}
    response = httpx2.post(
        f"{server.url}/admin/studies",
        json=body | fields,
        headers={"Authorization": f"Bearer {ADMIN}"},
        timeout=WAIT_S,
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


def solo_by_mouse(driver: Any, server: ThreadServer, token: str) -> None:
    open_page(driver, server, token, DESKTOP)
    until(lambda: shown(driver, "seat-page"), "the negotiation")  # no consent asked
    by_id(driver, "offer-price").send_keys("1.00")
    by_id(driver, "make-offer").click()
    by_id(driver, "wait").click()
    until(lambda: shown(driver, "their-offer"), "the house's counter-offer")
    by_id(driver, "accept").click()
    until(lambda: shown(driver, "final"), "the final screen")


def solo_by_keyboard(driver: Any, server: ThreadServer, token: str) -> None:
    from selenium.webdriver.common.keys import Keys

    open_page(driver, server, token, PHONE)  # in the tab that showed p01's final screen
    # another link in the same tab is a new page at once (not after the stream's 10 s)
    until(lambda: shown(driver, "seat-page"), "p02's negotiation", timeout=5)
    tab_to(driver, "offer-price")
    press(driver, "2.00", Keys.ENTER)
    until(lambda: by_id(driver, "chart").get_attribute("data-offers") != "0", "my offer")
    tab_to(driver, "wait")
    press(driver, Keys.ENTER)
    until(lambda: shown(driver, "their-offer"), "the house's counter-offer")
    tab_to(driver, "accept", back=True)
    press(driver, Keys.ENTER)
    until(lambda: shown(driver, "final"), "the final screen")


def pair_in_two_tabs(driver: Any, server: ThreadServer, tokens: dict[str, str]) -> None:
    """a and b, each in a tab of their own, on the wall clock (people's time: each sees the
    other's moves as they happen): matched as they arrive, a offers, b accepts."""
    open_page(driver, server, tokens["a"], PHONE)
    until(lambda: "Waiting for another participant" in by_id(driver, "lobby-message").text, "a")
    first = driver.current_window_handle
    driver.switch_to.new_window("tab")
    open_page(driver, server, tokens["b"], PHONE)
    until(lambda: shown(driver, "seat-page"), "b's negotiation")
    assert by_id(driver, "value").text.startswith("your cost")  # a waited longer: a buys
    driver.switch_to.window(first)
    until(lambda: shown(driver, "seat-page"), "a's negotiation, live")
    by_id(driver, "offer-price").send_keys("999.00")
    by_id(driver, "make-offer").click()
    second = next(h for h in driver.window_handles if h != first)
    driver.switch_to.window(second)
    until(lambda: shown(driver, "their-offer"), "a's offer, live on b's page")
    by_id(driver, "accept").click()
    until(lambda: shown(driver, "final"), "b's final screen")
    driver.switch_to.window(first)
    until(lambda: shown(driver, "final"), "a's final screen")


def download(driver: Any, folder: Path, study: str, name: str) -> str:
    """Press the study page's button for one export; the saved file's text."""
    path = folder / f"{study}-{name}.csv"
    by_id(driver, "exports").find_element("css selector", f'[data-export="{name}"]').click()
    until(lambda: path.exists() and path.stat().st_size > 0, f"{path.name} saved")
    until(lambda: "Saved" in by_id(driver, "export-status").text, "the page to say so")
    return path.read_text(encoding="utf-8")


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_a_whole_study_of_two_solo_participants_and_a_pair_is_run_followed_and_exported(
    tmp_path: Path,
) -> None:
    saved = tmp_path / "downloads"
    saved.mkdir()
    exports: dict[str, dict[str, str]] = {}
    with server_thread(tmp_path) as server, chromium() as driver:
        solo = create(server, id="solo", participants=["p01", "p02"], house="conceder")
        pair = create(server, id="pair", participants=["a", "b"], matching="pairs", clock="wall")
        solo_by_mouse(driver, server, solo["participants"]["p01"])
        solo_by_keyboard(driver, server, solo["participants"]["p02"])
        pair_in_two_tabs(driver, server, pair["participants"])

        driver.execute_cdp_cmd(
            "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(saved)}
        )
        for created, size in ((solo, DESKTOP), (pair, PHONE)):
            study = created["study"]
            driver.switch_to.new_window("tab")
            driver.set_window_size(*size)
            driver.get(f"{server.url}/web/study#token={created['token']}")
            until(lambda: by_id(driver, "status").text == "live", "the study page")
            until(lambda: "2 done" in by_id(driver, "counts").text, "everyone done")
            assert axe_violations(driver) == [], study
            width = driver.execute_script("return document.documentElement.scrollWidth")
            assert width <= size[0], f"{study}: the page scrolls sideways"
            states = driver.find_elements("css selector", "#participants tr[data-state]")
            assert {s.get_attribute("data-state") for s in states} == {"done"}
            watch = driver.find_elements(
                "css selector", "#participants a[href^='/web/room#token=']"
            )
            assert len(watch) == 2  # a watch link to each participant's room
            if folder := os.environ.get("DEALROOM_SCREENSHOTS"):  # docs/images comes from it
                driver.execute_script("window.scrollTo(0, 0)")
                driver.save_screenshot(str(Path(folder) / f"web-study-page-{study}.png"))
            exports[study] = {
                name: download(driver, saved, study, name) for name in ("negotiations", "payments")
            }

    with ResultsStore(tmp_path / "results.db", create=False) as store:
        stored = {row.key: row.record for run in ("solo", "pair") for row in store.iter(run)}
    negotiations = [r for study in exports.values() for r in rows(study["negotiations"])]
    assert len(negotiations) == 4 and len(stored) == 3  # the pair's one negotiation: two rows
    assert {r["key"] for r in negotiations} == set(stored)
    for row in negotiations:
        record = stored[row["key"]]
        assert record.outcome.status == "deal" == row["status"]
        assert Decimal(row["buyer_value"]) == record.scenario.buyer_value
        assert Decimal(row["seller_cost"]) == record.scenario.seller_cost
        assert Decimal(row["price"]) == record.outcome.price
        own = (
            record.outcome.buyer_surplus
            if row["role"] == "buyer"
            else record.outcome.seller_surplus
        )
        assert Decimal(row["surplus"]) == own and row["pays"] == "true"
    for study in exports.values():
        for payment in rows(study["payments"]):
            mine = [r for r in negotiations if r["participant"] == payment["participant"]]
            surplus = sum(Decimal(r["surplus"]) for r in mine)
            earnings = max((Decimal("0.1") * surplus).quantize(Decimal("0.01")), Decimal("0.00"))
            assert Decimal(payment["total"]) == Decimal("2.00") + earnings, payment
            assert (payment["state"], payment["completion_code"]) == ("done", "OK1")
    pair_rows = {r["participant"]: r for r in negotiations if r["study"] == "pair"}
    assert (pair_rows["a"]["role"], pair_rows["a"]["counterpart"]) == ("buyer", "b")
    assert (pair_rows["b"]["role"], pair_rows["b"]["counterpart"]) == ("seller", "a")

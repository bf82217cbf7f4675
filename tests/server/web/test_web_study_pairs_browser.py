"""A pair study run as a recruitment platform runs it, in a real browser (headless Chromium):
every participant comes through the study's one URL with a label, and

- G1 agrees, waits and closes the tab: G2, arriving a moment later, is not matched with them;
- G3 arrives and is matched with G2; G2 makes an offer, then G3 closes the tab mid-way: the
  negotiation ends for G2 with a clear screen saying the partner left;
- G4, the odd one, waits past the study's limit and is let go with the fee and the code.

Nobody is matched with a leaver, everyone who consented has a payment line under the stated
rule, and the states (the study page's view and payments.csv) say who dropped and who timed out.
"""

from __future__ import annotations

import csv
import io
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx2
import pytest
from browser_support import WAIT_S, ThreadServer, chromium, needs_browser, server_thread, until
from test_web_study_page import by_id, shown

from dealroom.protocol.study import CLOSE_GRACE_S, PayoffRule, StudyRequest
from dealroom.protocol.study_join import StudyJoin
from dealroom.server.study import Study

pytestmark = [needs_browser(), pytest.mark.slow]  # a real browser: about a minute

SECRET = "8d2f5c1a9e0b47d3a6c81f2e5b9d0a47"
MAX_WAIT_S = 10
FEE = Decimal("2.00")


def open_study(server: ThreadServer) -> tuple[Study, str]:
    """A pair study open to 4 labels through its one URL; the study and the researcher's token."""
    request = StudyRequest(
        id="pairs",
        join=StudyJoin(capacity=4, label="PROLIFIC_PID"),
        matching="pairs",
        house=None,
        secret=SECRET,
        consent="I agree to take part.",
        payoff=PayoffRule(exchange_rate=Decimal("0.01"), show_up_fee=FEE, currency="GBP"),
        completion_code="C0DE",
        deadline=120,
        max_wait_s=MAX_WAIT_S,
        dropout_s=30,
    )
    created = server.registry.studies.create(request)
    return server.registry.studies.studies["pairs"], created.token


def arrive(driver: Any, server: ThreadServer, label: str) -> str:
    """``label`` opens the study's URL in a new tab and agrees; the tab's handle."""
    driver.switch_to.new_window("tab")
    driver.get(f"{server.url}/web/study/pairs/join?PROLIFIC_PID={label}")
    until(lambda: shown(driver, "consent-box"), f"{label}'s consent")
    by_id(driver, "agree").click()
    return str(driver.current_window_handle)


def waiting(driver: Any, handle: str) -> bool:
    driver.switch_to.window(handle)
    return "waiting" in by_id(driver, "lobby-message").text.lower()


def playing(driver: Any, handle: str) -> bool:
    driver.switch_to.window(handle)
    return shown(driver, "seat-page")


def close(driver: Any, handle: str, keep: str) -> None:
    """Close the tab ``handle`` (the participant leaves), then look at ``keep``."""
    driver.switch_to.window(handle)
    driver.close()
    driver.switch_to.window(keep)


def state(study: Study, label: str) -> str:
    return study.state(study.participants[study.joined[label]])


def test_a_pair_study_through_the_one_url_with_leavers_and_an_odd_one(tmp_path: Path) -> None:
    with server_thread(tmp_path, reap=True) as server, chromium() as driver:
        study, researcher = open_study(server)
        blank = str(driver.current_window_handle)  # kept open: the browser outlives the tabs

        g1 = arrive(driver, server, "G1")
        until(lambda: waiting(driver, g1), "G1 waiting")
        close(driver, g1, blank)  # G1 leaves while waiting
        g2 = arrive(driver, server, "G2")  # a moment later
        until(lambda: waiting(driver, g2), "G2 waiting")
        time.sleep(1.0)  # the reaper's pass and the matching have run meanwhile
        assert waiting(driver, g2) and study.current(study.participants["J0002"]) is None

        g3 = arrive(driver, server, "G3")
        until(lambda: playing(driver, g3) and playing(driver, g2), "G2 and G3 matched")
        g2_who, g3_who = study.participants["J0002"], study.participants["J0003"]
        seat2, seat3 = study.current(g2_who), study.current(g3_who)
        assert seat2 is not None and seat3 is not None and seat2[0] is seat3[0]
        driver.switch_to.window(g2)
        by_id(driver, "offer-price").send_keys("500")
        by_id(driver, "make-offer").click()
        until(lambda: playing(driver, g3) and shown(driver, "their-offer"), "G2's offer at G3")
        close(driver, g3, g2)  # G3 leaves mid-negotiation

        def left() -> bool:
            driver.switch_to.window(g2)
            return "left the study" in driver.find_element("tag name", "body").text

        until(left, "G2 told that G3 left", timeout=CLOSE_GRACE_S + WAIT_S)
        assert not seat2[0].current.is_open

        g4 = arrive(driver, server, "G4")  # the odd one: nobody else comes
        until(lambda: waiting(driver, g4), "G4 waiting")
        until(lambda: state(study, "G4") == "timed_out", "G4 to time out", MAX_WAIT_S + WAIT_S)
        driver.switch_to.window(g4)
        until(lambda: shown(driver, "final"), "G4's final screen")
        final = by_id(driver, "final").text
        assert "C0DE" in final and "2.00" in final
        until(lambda: state(study, "G1") == "dropped", "G1 to be dropped")

        view = httpx2.get(
            f"{server.url}/web/api/study",
            headers={"Authorization": f"Bearer {researcher}"},
            timeout=WAIT_S,
        ).json()
        payments = httpx2.get(
            f"{server.url}/web/api/study/payments.csv",
            headers={"Authorization": f"Bearer {researcher}"},
            timeout=WAIT_S,
        ).text

    states = {p["join_label"]: p["state"] for p in view["participants"]}
    assert states == {"G1": "dropped", "G2": "done", "G3": "dropped", "G4": "timed_out"}
    rows = {row["join_label"]: row for row in csv.DictReader(io.StringIO(payments))}
    assert {label: row["state"] for label, row in rows.items()} == states
    for row in rows.values():  # the fee to everyone who consented; nobody's deal paid more
        assert row["consented_at"] and Decimal(row["total"]) == FEE
        assert row["completion_code"] == "C0DE"
    matched = [seats for who in study.participants.values() for seats in who.seats]
    assert [room for room, _ in matched].count(seat2[0].id) == 2 and len(matched) == 2

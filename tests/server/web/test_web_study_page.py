"""A study participant's seat page in a real browser (headless Debian Chromium, Selenium), at
desktop (1200x1000) and phone (390x844) sizes: the consent and the researcher's instructions,
the wait for a partner, play, the end of a negotiation and the final screen with the payment and
the completion code, with no *Next* after the last negotiation. One participant plays by
keyboard alone; focus survives the wall clock's updates; the live region announces the other
side's offers, refusals and the end; axe-core finds no violation in any state (and the chart's
labels, which axe leaves unchecked, read at 4.5:1).

Set DEALROOM_SCREENSHOTS=DIR to save each state's screenshot there (docs/images comes from it).
"""

from __future__ import annotations

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
    svg_text_contrast,
    until,
)

from dealroom.protocol import people_text
from dealroom.protocol.study import PayoffRule, StudyRequest

pytestmark = [needs_browser(), needs_axe(), pytest.mark.slow]  # a real browser: seconds a test

SECRET = "21e721c35a5823fdb452fa2f9f0a612c"
DESKTOP = (1200, 1000)
PHONE = (390, 844)
SHOTS = {
    ("consent", "desktop"),
    ("playing", "desktop"),
    ("final", "desktop"),
    ("waiting", "phone"),
    ("playing", "phone"),
    ("final", "phone"),
}
"""The states whose screenshots docs/web.md shows."""
CONSENT = "I agree to take part; my offers and messages are recorded."
INSTRUCTIONS = """# How this study works

You negotiate the price of an item. **Each unit of surplus** pays you money.

- Make offers with the *Price* field.
- Accept the other side's offer when it suits you.
"""


def study(server: ThreadServer, **fields: Any) -> dict[str, str]:
    """Open a study on the server's registry; each participant's token by label."""
    request = StudyRequest.model_validate(
        {
            "id": "s1",
            "participants": ["p01"],
            "house": "conceder",
            "secret": SECRET,
            "consent": CONSENT,
            "instructions": INSTRUCTIONS,
            "payoff": PayoffRule(
                exchange_rate=Decimal("0.05"), show_up_fee=Decimal("5"), currency="GBP"
            ),
            "completion_code": "C0MPLETE",
            "completion_url": "https://example.org/done?code=C0MPLETE",
            "deadline": 120,
        }
        | fields
    )
    return server.registry.studies.create(request).participants


def by_id(driver: Any, element: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, element)


def shown(driver: Any, element: str) -> bool:
    return bool(by_id(driver, element).is_displayed())


def focused(driver: Any) -> str:
    return str(driver.execute_script("return document.activeElement.id"))


def announced(driver: Any) -> str:
    return str(by_id(driver, "announce").get_attribute("textContent"))


def press(driver: Any, *keys: str) -> None:
    """Keys sent to whatever has focus (no element is clicked)."""
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(*keys).perform()


def tab_to(driver: Any, element: str, *, back: bool = False) -> None:
    """Tab (or Shift+Tab) until ``element`` has focus: every control is reachable by Tab."""
    from selenium.webdriver.common.keys import Keys

    for _ in range(30):
        if focused(driver) == element:
            return
        if back:
            from selenium.webdriver.common.action_chains import ActionChains

            ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(
                Keys.SHIFT
            ).perform()
        else:
            press(driver, Keys.TAB)
    raise AssertionError(f"Tab never reached #{element} (focus on #{focused(driver)})")


FOCUSABLE = """
const selector = "a[href], button, input, select, textarea, summary, [tabindex]";
return [...document.querySelectorAll(selector)]
  .filter((e) => e.tabIndex >= 0 && e.getClientRects().length > 0)
  .map((e) => e.id);
"""


def reached_by_tab(driver: Any) -> set[str]:
    """The controls that Tab reaches, going once round the page."""
    from selenium.webdriver.common.keys import Keys

    seen: set[str] = set()
    for _ in range(40):
        press(driver, Keys.TAB)
        seen.add(focused(driver))
    return seen - {""}


def check_state(driver: Any, state: str, size: tuple[int, int]) -> None:
    """One page state: no axe-core violation (of any impact), every chart label at 4.5:1, no
    horizontal scroll; saved as a screenshot when asked."""
    assert axe_violations(driver) == [], state
    assert svg_text_contrast(driver) == [], state
    width = driver.execute_script("return document.documentElement.scrollWidth")
    assert width <= size[0], f"{state}: the page scrolls sideways ({width} px)"
    folder = os.environ.get("DEALROOM_SCREENSHOTS")
    kind = "phone" if size == PHONE else "desktop"
    if folder and (state, kind) in SHOTS:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(str(Path(folder) / f"web-study-{state}-{kind}.png"))


def open_page(driver: Any, server: ThreadServer, token: str, size: tuple[int, int]) -> None:
    driver.set_window_size(*size)
    driver.get(f"{server.url}/web/seat#token={token}")
    until(lambda: by_id(driver, "status").text == "live", "the page to go live")


def test_a_solo_participant_consents_plays_two_negotiations_and_gets_paid_on_a_desktop(
    tmp_path: Path,
) -> None:
    with server_thread(tmp_path) as server, chromium() as driver:
        tokens = study(server, negotiations=2, clock="virtual")
        open_page(driver, server, tokens["p01"], DESKTOP)
        until(lambda: shown(driver, "consent-box"), "the consent")
        assert by_id(driver, "consent-text").text == CONSENT
        headings = by_id(driver, "lobby-instructions").find_elements("tag name", "h3")
        assert [h.text for h in headings] == ["How this study works"]
        items = by_id(driver, "lobby-instructions").find_elements("tag name", "li")
        assert items[0].text == "Make offers with the Price field."
        check_state(driver, "consent", DESKTOP)
        by_id(driver, "agree").click()
        until(lambda: shown(driver, "seat-page"), "the negotiation")
        assert "negotiation 1 of 2" in by_id(driver, "item").text
        room, role = server.registry.studies.studies["s1"].current(
            server.registry.studies.studies["s1"].participants["p01"]
        ) or (None, None)
        assert room is not None and role == "buyer"
        scenario = room.current.scenario
        assert f"{scenario.seller_cost:,.2f}" not in by_id(driver, "main").text  # theirs: never
        by_id(driver, "instructions-box").click()  # collapsed during play: one press opens it
        assert "Make offers with the Price field." in by_id(driver, "play-instructions").text
        by_id(driver, "offer-price").send_keys("1.00")
        by_id(driver, "make-offer").click()
        until(lambda: by_id(driver, "chart").get_attribute("data-offers") != "0", "my offer")
        by_id(driver, "wait").click()
        until(lambda: shown(driver, "their-offer"), "their counter-offer")
        until(lambda: "The seller offers" in announced(driver), "the offer announced")
        check_state(driver, "playing", DESKTOP)
        controls = set(driver.execute_script(FOCUSABLE))
        assert {"accept", "reject", "offer-price", "wait", "instructions-summary"} <= controls
        assert controls <= reached_by_tab(driver)  # every shown control, by Tab alone
        by_id(driver, "accept").click()
        until(lambda: shown(driver, "next"), "Next after the first negotiation")
        assert "Deal at" in by_id(driver, "outcome").text
        assert "The negotiation has ended: Deal at" in announced(driver)
        check_state(driver, "ended", DESKTOP)
        by_id(driver, "next").click()
        until(lambda: "negotiation 2 of 2" in by_id(driver, "item").text, "the second one")
        assert by_id(driver, "offer-price").get_attribute("value") == ""  # no old price
        by_id(driver, "walk-away").click()
        driver.switch_to.alert.accept()
        until(lambda: shown(driver, "final"), "the final screen")
        assert not shown(driver, "seat-page") and not shown(driver, "next")
        assert by_id(driver, "completion-code").text == "C0MPLETE"
        link = by_id(driver, "completion-link").get_attribute("href")
        assert link == "https://example.org/done?code=C0MPLETE"
        who = server.registry.studies.studies["s1"].participants["p01"]
        done = server.registry.studies.studies["s1"].completion(who)
        assert done is not None and done.payoff is not None
        assert by_id(driver, "payoff-total").text == f"£{done.payoff.total:,.2f}"
        assert by_id(driver, "payoff-fee").text == "£5.00"
        assert by_id(driver, "payoff-paid").text == "Negotiations 1, 2 pay."
        assert "0.05 GBP per unit" in by_id(driver, "payoff-rule").text
        rows = driver.find_elements("css selector", "#final-results tbody tr")
        assert [r.text.split()[0] for r in rows] == ["1", "2"]
        assert "You have finished all your negotiations." in announced(driver)
        assert people_text.tool_names_in(by_id(driver, "main").text) == []
        check_state(driver, "final", DESKTOP)


def test_a_participant_plays_by_keyboard_alone_on_a_phone_and_focus_survives_the_clock(
    tmp_path: Path,
) -> None:
    from selenium.webdriver.common.keys import Keys

    with server_thread(tmp_path) as server, chromium() as driver:
        tokens = study(server, negotiations=1)  # on the wall clock: a view every second
        open_page(driver, server, tokens["p01"], PHONE)
        until(lambda: shown(driver, "consent-box"), "the consent")
        check_state(driver, "consent", PHONE)
        tab_to(driver, "agree")
        outline = driver.execute_script(
            "const s = getComputedStyle(document.activeElement); return [s.outlineStyle, "
            "s.outlineWidth]"
        )
        assert outline == ["solid", "3px"]  # a visible focus outline
        press(driver, Keys.ENTER)
        until(lambda: shown(driver, "seat-page"), "the negotiation")
        assert focused(driver) == "move-heading"  # where the new part of the page starts
        top = lambda e: driver.execute_script(  # noqa: E731
            "return arguments[0].getBoundingClientRect().bottom", by_id(driver, e)
        )
        assert top("walk-away") < top("chart")  # one column, the controls first
        screen = driver.execute_script("return window.innerHeight")
        assert top("make-offer") < screen  # on the first screen
        tab_to(driver, "offer-price")
        press(driver, "-5", Keys.ENTER)  # Enter in the price field makes the offer
        until(lambda: "Refused: " in announced(driver), "the refusal, announced")
        assert by_id(driver, "notice").text != "" and focused(driver) == "offer-price"
        press(driver, Keys.BACKSPACE, Keys.BACKSPACE, "1.00", Keys.ENTER)
        until(lambda: by_id(driver, "chart").get_attribute("data-offers") != "0", "my offer")
        tab_to(driver, "message")
        press(driver, "Can you do better?", Keys.ENTER)  # Enter in the message field sends it
        until(lambda: "Can you do better?" in by_id(driver, "messages").text, "my message")
        until(lambda: shown(driver, "their-offer"), "their offer, live")
        until(lambda: "The seller offers" in announced(driver), "their offer, announced")
        check_state(driver, "playing", PHONE)
        tab_to(driver, "accept", back=True)
        ticks: set[str] = set()
        until(lambda: ticks.add(by_id(driver, "clock-text").text) or len(ticks) > 2, "2 ticks")
        assert focused(driver) == "accept"  # the page updated twice, the button kept focus
        press(driver, Keys.ENTER)
        until(lambda: shown(driver, "final"), "the final screen")
        assert focused(driver) == "final-heading"
        assert not shown(driver, "seat-page") and not shown(driver, "next")
        assert by_id(driver, "completion-code").text == "C0MPLETE"
        assert by_id(driver, "payoff-total").text.startswith("£")
        assert "You have finished all your negotiations." in announced(driver)
        check_state(driver, "final", PHONE)
        driver.get("about:blank")  # the tab goes: its page says so as it closes
        who = server.registry.studies.studies["s1"].participants["p01"]
        events = lambda: [e for _, e, _, _ in who.page]  # noqa: E731
        until(lambda: {"open", "close"} <= set(events()), "the page's open and close")
        assert events()[0] == "open" and set(events()) <= {"open", "hidden", "close"}


class Other:
    """The other participant of a pair, through the page's HTTP API (no browser)."""

    def __init__(self, server: ThreadServer, token: str) -> None:
        self.url, self.headers = server.url, {"Authorization": f"Bearer {token}"}

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = httpx2.post(f"{self.url}{path}", json=body, headers=self.headers, timeout=WAIT_S)
        assert response.status_code == 200, response.text
        return dict(response.json())

    def press(self, tool: str) -> None:
        reply = self.post("/web/api/seat/call", {"tool": tool, "arguments": {}})
        assert "error" not in reply, reply


def test_a_pair_participant_waits_plays_queues_again_and_finishes_on_a_phone(
    tmp_path: Path,
) -> None:
    with server_thread(tmp_path) as server, chromium() as driver:
        tokens = study(
            server, participants=["a", "b"], matching="pairs", house=None, negotiations=2
        )
        open_page(driver, server, tokens["a"], PHONE)
        until(lambda: shown(driver, "consent-box"), "the consent")
        by_id(driver, "agree").click()
        waiting = "Waiting for another participant"
        until(lambda: waiting in by_id(driver, "lobby-message").text, "the waiting message")
        assert waiting in announced(driver) and not shown(driver, "consent-box")
        assert by_id(driver, "lobby-heading").text == "Waiting for a partner"
        check_state(driver, "waiting", PHONE)
        other = Other(server, tokens["b"])
        other.post("/web/api/seat/consent", {})
        until(lambda: shown(driver, "seat-page"), "the match, live")
        assert "negotiation 1 of 2" in by_id(driver, "item").text
        assert "Negotiation 1 has started." in announced(driver)
        assert by_id(driver, "value").text.startswith("your value (the most you would pay) $")
        other.press("walk_away")
        until(lambda: shown(driver, "next"), "Next, once it ended")
        assert "The negotiation has ended: No deal (the other side walked away)" in announced(
            driver
        )
        check_state(driver, "ended", PHONE)
        by_id(driver, "next").click()  # back to the queue for a new partner
        until(lambda: waiting in by_id(driver, "lobby-message").text, "the queue again")
        other.press("new_negotiation")
        until(lambda: "negotiation 2 of 2" in by_id(driver, "item").text, "the second match")
        assert by_id(driver, "value").text.startswith("your cost (the least you would take) $")
        assert by_id(driver, "legend-mine").text == "your own cost"  # a seller now (b buys)
        other.press("walk_away")
        until(lambda: shown(driver, "final"), "the final screen")
        assert not shown(driver, "next") and not shown(driver, "seat-page")
        rows = driver.find_elements("css selector", "#final-results tbody tr")
        assert len(rows) == 2  # both rooms' negotiations, numbered in the series
        assert by_id(driver, "completion-code").text == "C0MPLETE"
        check_state(driver, "final-pair", PHONE)


def test_the_study_url_lands_on_the_seat_page_and_a_return_finds_the_same_participant(
    tmp_path: Path,
) -> None:
    with server_thread(tmp_path) as server, chromium() as driver:
        study(
            server,
            participants=(),
            join={"capacity": 1, "label": "PROLIFIC_PID"},
            completion_url="https://example.org/done?pid={label}",
            clock="virtual",
        )
        join = f"{server.url}/web/study/s1/join?PROLIFIC_PID=60ffe5c8371090c7041d43f8"
        driver.get(join)
        until(lambda: shown(driver, "consent-box"), "the consent, after the redirect")
        assert driver.current_url == f"{server.url}/web/seat"  # the token read, then cleared
        assert "60ffe5c8371090c7041d43f8" not in by_id(driver, "main").text
        by_id(driver, "agree").click()
        until(lambda: shown(driver, "seat-page"), "the negotiation")
        driver.get(join)  # the platform's link again: the same participant, in play
        until(lambda: shown(driver, "seat-page"), "the negotiation again, no second consent")
        assert list(server.registry.studies.studies["s1"].participants) == ["J0001"]
        driver.get(f"{server.url}/web/study/s1/join?PROLIFIC_PID=someone-else")
        assert driver.find_element("tag name", "body").text.startswith("study_full: ")

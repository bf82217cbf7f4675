"""A study's configuration as its researcher reads it: the study page's view (``/web/api/study``,
``/admin/studies/ID``) and ``dealroom study show`` carry every setting that decides what
participants do and are paid, rendered once (``study_config.configuration``), and say whether
the study has a completion code or link, never the code, the link or the secret."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx2
import pytest
from browser_support import (
    WAIT_S,
    axe_violations,
    chromium,
    needs_axe,
    needs_browser,
    server_thread,
    until,
)
from mcp_support import ADMIN, http_server, tls
from test_web_study_page import PHONE, by_id

from dealroom.cli import main as cli_main
from dealroom.protocol.study import StudyRequest
from dealroom.protocol.study_config import NOT_SHOWN, configuration

SECRET = "5f0c2a9e7d13b84f6a21c9e0d57b3a18"
CODE = "C0DE4711"
URL = "https://app.prolific.com/submissions/complete?cc=C0DE4711"

PAIRS = {
    "id": "cfg",
    "participants": ["a", "b"],
    "join": {"capacity": 10, "label": "PROLIFIC_PID", "ids": ["STUDY_ID"]},
    "matching": "pairs",
    "negotiations": 3,
    "tier": "high",
    "deadline": 90,
    "secret": SECRET,
    "consent": "I agree.",
    "payoff": {
        "exchange_rate": "0.0005",
        "show_up_fee": "2",
        "currency": "GBP",
        "pays": "one_random",
    },
    "completion_code": CODE,
    "completion_url": URL,
    "max_wait_s": 300,
    "dropout_s": 45,
    "design": {
        "quiz": {"max_attempts": 2},
        "practice": 1,
        "practice_house": "conceder",
        "treatments": [
            {"name": "short", "deadline": 60},
            {"name": "ranged", "tier": "low", "information": "value_range"},
        ],
        "questionnaire": [{"name": "fair", "text": "Was it fair?"}],
    },
}


def settings(request: StudyRequest) -> dict[str, str]:
    return {line.name: line.value for line in configuration(request)}


def test_a_pair_studys_configuration_names_every_rule_and_no_secret() -> None:
    request = StudyRequest.model_validate(PAIRS)
    shown = settings(request)
    assert shown["matching"].startswith("pairs, matched as they arrive")
    assert shown["negotiations"] == "3 per participant"
    assert shown["tier"] == "high (list prices $100,000.00 to $1,000,000.00)"
    assert shown["deadline"] == "1 minute 30 seconds per negotiation"
    assert shown["clock"].startswith("wall")
    assert shown["payment: currency"] == "GBP"
    assert shown["payment: show-up fee"] == "2.00 GBP"
    assert shown["payment: exchange rate"] == "0.0005 GBP per unit of surplus"
    assert shown["payment: negotiations that pay"].startswith("one of the 3, drawn at random")
    assert shown["payment: a loss"].startswith("never charged")
    assert "no cap" in shown["payment: a loss"]
    assert request.payoff is not None
    assert shown["payment: the rule in words"] == request.payoff.text(3)
    assert shown["waiting limit"].startswith("5 minutes")
    assert shown["dropout"].startswith("a page silent for 45 seconds, or closed for 10 seconds")
    assert shown["treatment short"] == (
        "tier high (list prices $100,000.00 to $1,000,000.00); deadline 1 minute per "
        "negotiation; information: own value only; the study's instructions"
    )
    assert shown["treatment ranged"] == (
        "tier low (list prices $10.00 to $100.00); deadline 1 minute 30 seconds per "
        "negotiation; information: own value and the range the other side's is drawn from; "
        "the study's instructions"
    )
    assert "information" not in shown  # each treatment says its own
    assert shown["quiz"].startswith("questions from the study's rules; 2 attempts")
    assert shown["practice"] == "1 unpaid negotiation against conceder"
    assert shown["questionnaire"] == "1 question"
    assert shown["consent"] == "asked" and shown["instructions"] == "none"
    assert shown["completion code"] == NOT_SHOWN == shown["completion link"]
    assert shown["joining"].startswith("2 invited participants (a link each); up to 10 through")
    everything = json.dumps(shown)
    assert CODE not in everything and SECRET not in everything and "prolific.com" not in everything
    housed = settings(
        StudyRequest.model_validate(PAIRS | {"after_wait": "house", "house": "paced"})
    )
    assert housed["waiting limit"] == (
        "5 minutes; then they negotiate once with the house agent paced, and queue again after it"
    )


def test_a_solo_studys_configuration_names_its_house_agent_and_the_defaults() -> None:
    request = StudyRequest.model_validate(
        {"id": "solo", "participants": ["p01"], "house": "boulware", "role": "alternate"}
    )
    shown = settings(request)
    assert shown["matching"] == (
        "solo, each participant against boulware, alternating buyer and seller"
    )
    assert shown["deadline"] == "2 minutes per negotiation (the default)"
    assert shown["payment"].startswith("no payoff rule")
    assert shown["completion code"] == "none" == shown["completion link"]
    assert "waiting limit" not in shown and "dropout" not in shown  # pairs only
    assert [shown[name] for name in ("quiz", "practice", "questionnaire")] == ["none"] * 3
    assert shown["information"] == "own value only"  # no treatments: today's condition


@pytest.mark.anyio
async def test_the_study_page_and_study_show_carry_the_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", ADMIN)
    expected = [line.model_dump() for line in configuration(StudyRequest.model_validate(PAIRS))]
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        admin = {"Authorization": f"Bearer {ADMIN}"}
        created = await http.post(f"{server.url}/admin/studies", json=PAIRS, headers=admin)
        assert created.status_code == 201, created.text
        token = created.json()["token"]
        page = await http.get(
            f"{server.url}/web/api/study", headers={"Authorization": f"Bearer {token}"}
        )
        assert page.status_code == 200 and page.json()["configuration"] == expected
        shown = await http.get(f"{server.url}/admin/studies/cfg", headers=admin)
        assert shown.json()["configuration"] == expected
        capsys.readouterr()
        argv = ["study", "show", "--server", server.url, "cfg"]
        assert await anyio.to_thread.run_sync(cli_main, argv) == 0
        out = capsys.readouterr().out
    assert json.loads(out)["configuration"] == expected
    for text in (page.text, out):
        assert CODE not in text and SECRET not in text and "prolific.com" not in text


@needs_browser()
@needs_axe()
def test_the_study_page_shows_the_configuration_as_its_view_renders_it(tmp_path: Path) -> None:
    """The page lists the view's lines as they come (one copy of the words: the server's),
    checked by axe-core, and no wider than a phone."""
    expected = [
        (line.name, line.value) for line in configuration(StudyRequest.model_validate(PAIRS))
    ]
    with server_thread(tmp_path) as server, chromium() as driver:
        created = httpx2.post(
            f"{server.url}/admin/studies",
            json=PAIRS,
            headers={"Authorization": f"Bearer {ADMIN}"},
            timeout=WAIT_S,
        )
        assert created.status_code == 201, created.text
        driver.set_window_size(*PHONE)
        driver.get(f"{server.url}/web/study#token={created.json()['token']}")
        until(lambda: by_id(driver, "status").text == "live", "the study page")
        listed = by_id(driver, "configuration")
        names = [node.text for node in listed.find_elements("css selector", "dt")]
        values = [node.text for node in listed.find_elements("css selector", "dd")]
        assert list(zip(names, values, strict=True)) == expected
        page = driver.find_element("css selector", "body").text
        assert CODE not in page and SECRET not in page and "prolific.com" not in page
        assert axe_violations(driver) == []
        width = driver.execute_script("return document.documentElement.scrollWidth")
        assert width <= PHONE[0], "the page scrolls sideways"


def test_a_one_negotiation_rule_reads_as_one() -> None:
    request = StudyRequest.model_validate(
        {
            "id": "one",
            "participants": ["p01"],
            "house": "boulware",
            "payoff": {"exchange_rate": "0.1", "currency": "EUR"},
        }
    )
    shown = settings(request)
    assert shown["payment: negotiations that pay"] == "the one negotiation"
    assert "the surplus of your negotiation;" in shown["payment: the rule in words"]
    assert "all 1" not in json.dumps(shown)


@needs_browser()
@needs_axe()
def test_the_researcher_pauses_resumes_and_closes_the_study_from_its_page(tmp_path: Path) -> None:
    with server_thread(tmp_path) as server, chromium() as driver:
        created = httpx2.post(
            f"{server.url}/admin/studies",
            json=PAIRS,
            headers={"Authorization": f"Bearer {ADMIN}"},
            timeout=WAIT_S,
        )
        assert created.status_code == 201, created.text
        study = server.registry.studies.studies[PAIRS["id"]]
        driver.get(f"{server.url}/web/study#token={created.json()['token']}")
        until(lambda: by_id(driver, "study-status").text.startswith("Open"), "the status")
        assert not by_id(driver, "resume").is_displayed()
        by_id(driver, "pause").click()
        until(lambda: by_id(driver, "study-status").text.startswith("Paused"), "paused")
        assert study.control.status == "paused" and not by_id(driver, "pause").is_displayed()
        assert axe_violations(driver) == []
        by_id(driver, "resume").click()
        until(lambda: study.control.status == "open", "resumed")
        by_id(driver, "close-study").click()
        driver.switch_to.alert.dismiss()  # asked first: nothing changes
        assert study.control.status == "open"
        by_id(driver, "close-study").click()
        driver.switch_to.alert.accept()
        until(lambda: by_id(driver, "study-status").text.startswith("Closed"), "closed")
        assert study.control.status == "closed"
        assert not any(by_id(driver, b).is_displayed() for b in ("pause", "resume", "close-study"))

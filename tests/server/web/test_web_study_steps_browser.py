"""A study's quiz, practice and questionnaire on the seat page in a real browser (headless
Chromium): a wrong attempt marked question by question with the attempts left, a passing one,
the practice negotiation labelled unpaid, then the study's own, and the questionnaire before the
completion code; axe-core finds no violation on the quiz and on the questionnaire."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from browser_support import chromium, needs_axe, needs_browser, server_thread, until
from test_web_study_page import DESKTOP, by_id, check_state, open_page, shown, study

from dealroom.protocol.study_quiz import quiz_questions

pytestmark = [needs_browser(), needs_axe(), pytest.mark.slow]  # a real browser: seconds a test

DESIGN = {
    "quiz": {"max_attempts": 2},
    "practice": 1,
    "treatments": [{"name": "A", "deadline": 90}, {"name": "B", "deadline": 150}],
    "questionnaire": [
        {"name": "fair", "text": "Was the other side fair?", "choices": ["yes", "no"]},
        {"name": "why", "text": "Why?"},
    ],
}


def choose(driver: Any, answers: list[int]) -> None:
    from selenium.webdriver.common.by import By

    for i, choice in enumerate(answers):
        driver.find_element(By.CSS_SELECTOR, f'input[name="quiz-{i}"][value="{choice}"]').click()
    driver.find_element(By.CSS_SELECTOR, "#quiz-form button").click()


def walk_away(driver: Any) -> None:
    by_id(driver, "walk-away").click()
    driver.switch_to.alert.accept()


def test_a_participant_answers_the_quiz_practises_and_fills_in_the_questionnaire(
    tmp_path: Path,
) -> None:
    with server_thread(tmp_path) as server, chromium() as driver:
        tokens = study(server, negotiations=1, clock="wall", design=DESIGN)
        open_page(driver, server, tokens["p01"], DESKTOP)
        until(lambda: shown(driver, "consent-box"), "the consent")
        by_id(driver, "agree").click()
        until(lambda: shown(driver, "quiz-form"), "the quiz")
        studied = server.registry.studies.studies["s1"]
        who = studied.participants["p01"]
        questions = quiz_questions(studied.request, who.treatment)
        legends = by_id(driver, "quiz-questions").find_elements("tag name", "legend")
        assert [legend.text for legend in legends] == [
            f"{i + 1}. {q.text}" for i, q in enumerate(questions)
        ]
        deadline = "1 minute 30 seconds" if who.treatment == "A" else "2 minutes 30 seconds"
        assert deadline in by_id(driver, "quiz-questions").text
        check_state(driver, "quiz", DESKTOP)
        wrong = [(q.answer + 1) % len(q.choices) for q in questions]
        choose(driver, wrong)
        until(lambda: "Attempts left: 1." in by_id(driver, "quiz-result").text, "the marks")
        marked = by_id(driver, "quiz-questions").find_elements("css selector", "fieldset.wrong")
        assert len(marked) == len(questions)
        choose(driver, [q.answer for q in questions])
        until(lambda: shown(driver, "seat-page"), "the practice negotiation")
        assert "practice negotiation 1 of 1, unpaid" in by_id(driver, "item").text
        walk_away(driver)
        until(lambda: shown(driver, "next"), "Next after the practice")
        by_id(driver, "next").click()
        until(lambda: "(negotiation 1 of 1)" in by_id(driver, "item").text, "the paid one")
        walk_away(driver)
        until(lambda: shown(driver, "form"), "the questionnaire")
        assert not shown(driver, "completion")  # the code waits for the answers
        check_state(driver, "form", DESKTOP)
        by_id(driver, "form-fair").send_keys("no")
        by_id(driver, "form-why").send_keys("They never moved.")
        driver.find_element("css selector", "#form button").click()
        until(lambda: shown(driver, "completion"), "the completion code")
        assert by_id(driver, "completion-code").text == "C0MPLETE"
        assert not shown(driver, "form")
        assert who.answers == {"fair": "no", "why": "They never moved."}
        assert [p.practice for p in who.practice] == [True] and len(who.results) == 1
        done = studied.completion(who)
        assert done is not None and done.payoff is not None
        assert done.payoff.total == Decimal("5.00")  # practice never pays; no deal paid

"""A study's design: balanced random assignment to treatments, a quiz rendered from the study's
actual rules, the questionnaire's checks."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from dealroom.protocol.generator import DEFAULT_SPEC
from dealroom.protocol.secret import Secret
from dealroom.protocol.study import StudyRequest, duration
from dealroom.protocol.study_design import FormQuestion, StudyDesign, assigned, form_answers
from dealroom.protocol.study_quiz import quiz_questions, wrong_answers

SECRET = "5f0c2a9e7d13b84f6a21c9e0d57b3a18"


@settings(max_examples=60, deadline=None)
@given(
    key=st.binary(min_size=16, max_size=16),
    k=st.integers(min_value=1, max_value=6),
    n=st.integers(min_value=0, max_value=120),
)
def test_assignment_is_balanced_at_every_arrival_and_equal_after_each_full_block(
    key: bytes, k: int, n: int
) -> None:
    secret = Secret.from_hex(key.hex())
    names = [f"T{i}" for i in range(k)]
    counts: Counter[str] = Counter()
    for arrival in range(n):
        counts[assigned(secret, names, arrival)] += 1
        seen = [counts[name] for name in names]
        assert max(seen) - min(seen) <= 1
        if (arrival + 1) % k == 0:
            assert len(set(seen)) == 1
    again = [assigned(secret, names, arrival) for arrival in range(n)]
    assert Counter(again) == counts  # the same secret and order: the same assignment


def test_assignment_is_random_across_blocks() -> None:
    secret = Secret.from_hex(SECRET)
    blocks = {tuple(assigned(secret, ["A", "B"], 2 * b + i) for i in range(2)) for b in range(40)}
    assert blocks == {("A", "B"), ("B", "A")}  # both orders occur: not alternation


def study(**update: object) -> StudyRequest:
    fields: dict[str, object] = {
        "id": "s",
        "participants": ["a"],
        "house": "boulware",
        "negotiations": 3,
        "secret": SECRET,
        "payoff": {"exchange_rate": "0.05", "show_up_fee": "2", "currency": "GBP"},
        "design": {
            "quiz": {},
            "practice": 1,
            "treatments": [{"name": "short", "deadline": 90}, {"name": "long"}],
        },
    }
    return StudyRequest.model_validate(fields | update)


def right(request: StudyRequest, treatment: str | None, starts: str) -> str:
    question = next(q for q in quiz_questions(request, treatment) if q.text.startswith(starts))
    return question.choices[question.answer]


@pytest.mark.parametrize("pays", ["all", "one_random"])
@pytest.mark.parametrize("negotiations", [1, 3])
def test_the_quiz_answers_are_the_study_s_actual_rules(pays: str, negotiations: int) -> None:
    payoff = {"exchange_rate": "0.05", "show_up_fee": "2", "currency": "GBP", "pays": pays}
    request = study(payoff=payoff, negotiations=negotiations)
    assert right(request, "short", "How many") == str(negotiations)
    assert right(request, "short", "How long") == duration(90) == "1 minute 30 seconds"
    assert right(request, "long", "How long") == duration(DEFAULT_SPEC.deadline)
    assert right(request, None, "Do the practice").startswith("No")
    assert "computer program" in right(request, None, "Who is")
    loss = right(request, None, "If you agree")
    assert "2.00 GBP" in loss and "never" in loss
    assert ("other negotiations" in loss) == (pays == "all" and negotiations > 1)
    which = [q for q in quiz_questions(request, None) if q.text.startswith("Which")]
    assert len(which) == (negotiations > 1)
    if which:
        assert which[0].choices[which[0].answer].startswith("All" if pays == "all" else "One")
    pairs = study(
        matching="pairs",
        house=None,
        design={"quiz": {}, "practice": 1, "practice_house": "boulware"},
    )
    assert right(pairs, None, "Who is") == "Another participant of this study"
    virtual = quiz_questions(study(clock="virtual"), None)
    assert not any(q.text.startswith("How long") for q in virtual)  # no wall-clock deadline


def test_grading_names_the_wrong_answers_and_the_researcher_s_questions_follow() -> None:
    own = {"text": "Is the sky blue?", "choices": ["yes", "no"], "answer": 0}
    request = study(design={"quiz": {"questions": [own], "from_rules": False}})
    questions = quiz_questions(request, None)
    assert [q.text for q in questions] == ["Is the sky blue?"]
    assert wrong_answers(questions, [1]) == (0,) and wrong_answers(questions, [0]) == ()


def test_a_bad_design_is_refused_in_one_line() -> None:
    with pytest.raises(ValidationError, match="answer: the number of one of the choices"):
        StudyDesign.model_validate(
            {"quiz": {"questions": [{"text": "?", "choices": ["a", "b"], "answer": 2}]}}
        )
    with pytest.raises(ValidationError, match="treatment names must be unique"):
        StudyDesign.model_validate({"treatments": [{"name": "A"}, {"name": "A"}]})
    with pytest.raises(ValidationError, match="practice needs a practice_house"):
        study(matching="pairs", house=None, design={"practice": 1})
    with pytest.raises(ValidationError, match="house agent plays only those who waited"):
        study(matching="pairs", house=None, design={"treatments": [{"name": "A", "house": "x"}]})
    solo = study(house=None, design={"treatments": [{"name": "A", "house": "boulware"}]})
    assert solo.houses() == {"boulware"}


def test_questionnaire_answers_are_checked() -> None:
    form = (
        FormQuestion(name="age", text="Your age?", required=True, max_chars=3),
        FormQuestion(name="fair", text="Was it fair?", choices=("yes", "no")),
    )
    assert form_answers(form, {"age": "34", "fair": "yes"}) == {"age": "34", "fair": "yes"}
    assert form_answers(form, {"age": " 34 "}) == {"age": "34"}
    assert form_answers(form, {"fair": "yes"}) == "question 'age' needs an answer"
    assert form_answers(form, {"age": "3", "fair": "maybe"}) == (
        "question 'fair': answer one of its choices"
    )
    assert form_answers(form, {"age": "1234"}) == "question 'age': at most 3 characters"
    assert form_answers(form, {"age": "3", "x": "1"}) == "no question named 'x'"

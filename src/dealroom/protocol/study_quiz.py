"""A study's comprehension quiz: questions rendered from its actual rules, then the
researcher's own, and the grading of an attempt (pure, no I/O).

Every question rendered here is true of the study the participant is in: the number of
negotiations and practice negotiations, which pay and what a loss costs (``PayoffRule``: earnings
are never below zero, the show-up fee is always paid), the deadline of their treatment on the
wall clock, what they are told of the other side's number (a ``value_range`` treatment), and who
sits on the other side. The choices are shuffled by a draw from the question's text, so the
right answer is not always the first and every reading shows the same order.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from dealroom.protocol.generator import DEFAULT_SPEC
from dealroom.protocol.study import StudyRequest, duration
from dealroom.protocol.study_design import QuizQuestion, QuizQuestionShown


def quiz_questions(request: StudyRequest, treatment: str | None) -> tuple[QuizQuestion, ...]:
    """The quiz a participant of ``treatment`` answers (empty without a quiz)."""
    quiz = request.design.quiz
    if quiz is None:
        return ()
    rendered = _from_rules(request, treatment) if quiz.from_rules else []
    return (*rendered, *quiz.questions)


def shown_questions(questions: Sequence[QuizQuestion]) -> tuple[QuizQuestionShown, ...]:
    """The questions as the page shows them: no answers."""
    return tuple(QuizQuestionShown(text=q.text, choices=q.choices) for q in questions)


def wrong_answers(questions: Sequence[QuizQuestion], answers: Sequence[int]) -> tuple[int, ...]:
    """The questions (numbered from 0) an attempt answered wrongly."""
    return tuple(i for i, q in enumerate(questions) if answers[i] != q.answer)


def _question(text: str, right: str, *wrong: str) -> QuizQuestion:
    choices = [right, *(w for w in dict.fromkeys(wrong) if w != right)]
    random.Random(text).shuffle(choices)
    return QuizQuestion(text=text, choices=tuple(choices), answer=choices.index(right))


def _from_rules(request: StudyRequest, treatment: str | None) -> list[QuizQuestion]:
    n = request.negotiations
    questions: list[QuizQuestion] = []
    practising = request.design.practice > 0
    not_practice = ", not counting the practice negotiations" if practising else ""
    questions.append(
        _question(
            f"How many negotiations will you play{not_practice}?",
            str(n),
            str(n + 1),
            str(2 * n + 2),
            str(max(n - 1, 1) if n > 2 else n + 3),
        )
    )
    rule = request.payoff
    if practising:
        questions.append(
            _question(
                "Do the practice negotiations count towards your payment?",
                "No: they are unpaid practice",
                "Yes, like the other negotiations",
            )
        )
    if rule is not None:
        if n > 1:
            right = {
                "all": "All of them: their surplus is added up",
                "one_random": "One of them, drawn at random",
            }[rule.pays]
            questions.append(
                _question(
                    "Which of your negotiations count towards your payment?",
                    right,
                    "All of them: their surplus is added up",
                    "One of them, drawn at random",
                    "Only the last one",
                )
            )
        fee = f"{rule.show_up_fee:.2f} {rule.currency}"
        if rule.pays == "all" and n > 1:
            right = (
                "It lowers your earnings from the other negotiations, but your earnings are "
                f"never below zero and the show-up fee ({fee}) is always paid"
            )
        else:
            right = (
                f"You earn nothing from it, but you are never charged: the show-up fee ({fee}) "
                "is always paid"
            )
        questions.append(
            _question(
                "If you agree to a price that leaves you with a loss, what does it cost you?",
                right,
                "The loss is taken from your show-up fee",
                "You pay the loss yourself, on top of losing the show-up fee",
            )
        )
    if request.clock == "wall":
        deadline = request.treatment(treatment).deadline or DEFAULT_SPEC.deadline
        questions.append(
            _question(
                "How long does each negotiation last at most (on the clock on your screen)?",
                duration(deadline),
                duration(deadline * 2),
                duration(max(deadline / 2, 1)),
                duration(deadline * 5),
            )
        )
    if request.treatment(treatment).information == "value_range":
        questions.append(
            _question(
                "What are you told about the other side's private number in each negotiation?",
                "The range it was drawn from, but not where in that range it is",
                "Nothing at all",
                "Its exact amount",
                "That it equals the list price",
            )
        )
    other = (
        "Another participant of this study"
        if request.matching == "pairs"
        else "A computer program (the study's automated negotiator)"
    )
    questions.append(
        _question(
            f"Who is on the other side of each negotiation{not_practice}?",
            other,
            "Another participant of this study",
            "A computer program (the study's automated negotiator)",
            "The researcher",
        )
    )
    return questions

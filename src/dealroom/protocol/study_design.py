"""A study's design beyond its rules: named treatments with balanced random assignment, a
comprehension quiz, a post-play questionnaire (pure, no I/O).

**Treatments.** A study may name treatments, each changing some of the study's settings (tier,
house agent, deadline, instructions) and setting an information condition (``Information``).
Arrivals are assigned by block randomisation: the n-th arrival (counted from 0, in the order
participants took part) falls in block ``n // k`` of the ``k`` treatments, and each block is
a permutation of the treatments drawn from the study's secret (``assigned``). So the counts
never differ by more than one, and by none after each full block; the same secret and arrival
order give the same assignment on every reading.

**Quiz.** Before they play, participants answer a few multiple-choice questions: the study's own
(``Quiz.questions``) and, by default, questions rendered from its actual rules
(``dealroom.protocol.study_quiz``). A failed attempt is recorded; the attempt that reaches
``Quiz.max_attempts`` without passing ends the participant's part (``quiz_failed``), paid the
show-up fee.

**Questionnaire.** After their part ends, participants answer a short form (free text or one
choice per question) before they see their completion code or link.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from pydantic import Field, field_validator, model_validator

from dealroom.protocol._base import Model
from dealroom.protocol.scenario import Tier
from dealroom.protocol.secret import Secret

NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$"
"""A treatment's or a question's name: letters, digits, ``_.-``, at most 32."""

Information = Literal["own_value", "value_range"]
"""What a participant is told about the other side's private number: ``own_value``, nothing
but that it exists (their own number only); ``value_range``, also the range it is drawn from
for each negotiation (``people_text.value_range_rule``: rendered from the scenario generator's
spec and the public list price, never the number itself)."""


class StepRefusal(StrEnum):
    """Why a participant's quiz attempt or questionnaire was not taken: each a one-line answer
    with this code, and nothing changed."""

    NO_QUIZ = "no_quiz_now"
    """There is no quiz to answer now: none in the study, passed already, or their part is over
    (409)."""
    BAD_ANSWERS = "bad_answers"
    """Not one choice (numbered from 0) per question, or a questionnaire answer that breaks its
    question's rule (400)."""
    NO_FORM = "no_questionnaire_now"
    """There is no questionnaire to answer now: none in the study, answered already, or their
    part is not over yet (409)."""


@dataclass(frozen=True, slots=True)
class StepRefused:
    """A quiz attempt or questionnaire not taken: its code and one sentence."""

    code: StepRefusal
    message: str


class Treatment(Model):
    """One treatment: the study's settings it changes (None: the study's own)."""

    name: str = Field(pattern=NAME)
    tier: Tier | None = None
    house: str | None = None
    """Solo: the house agent its participants play (and practise) against."""
    deadline: float | None = Field(default=None, gt=0, le=86_400)
    """Seconds per negotiation."""
    instructions: str | None = Field(default=None, min_length=1, max_length=20_000)
    """Instructions (Markdown) shown after the study's own, to this treatment's participants."""
    information: Information = "own_value"
    """What its participants are told of the other side's private number: ``own_value``
    (nothing), or ``value_range`` (the range it is drawn from, in their briefing)."""


class QuizQuestion(Model):
    """A multiple-choice question with one correct answer."""

    text: str = Field(min_length=1, max_length=500)
    choices: tuple[str, ...] = Field(min_length=2, max_length=8)
    answer: int = Field(ge=0)
    """The correct choice, numbered from 0."""

    @model_validator(mode="after")
    def _answer_is_a_choice(self) -> QuizQuestion:
        if self.answer >= len(self.choices):
            raise ValueError("answer: the number of one of the choices, from 0")
        if len(set(self.choices)) != len(self.choices):
            raise ValueError("choices must differ")
        return self


class QuizQuestionShown(Model):
    """A quiz question as a participant's page shows it: without its answer."""

    text: str
    choices: tuple[str, ...]


class Quiz(Model):
    """A comprehension quiz before play."""

    questions: tuple[QuizQuestion, ...] = Field(default=(), max_length=20)
    """The researcher's own questions (after those rendered from the rules)."""
    from_rules: bool = True
    """Ask about the study's actual rules too: how many negotiations pay, which of them,
    what a loss costs, how long a negotiation lasts, who the other side is."""
    max_attempts: int = Field(default=3, ge=1, le=20)
    """Attempts a participant has; failing the last ends their part with the show-up fee."""


class QuizResult(Model):
    """One attempt at the quiz, as the participant's page is told."""

    passed: bool
    wrong: tuple[int, ...]
    """The questions answered wrongly, numbered from 0."""
    attempts_left: int
    ended: bool
    """The last attempt failed: their part in the study has ended."""


class FormQuestion(Model):
    """One question of the post-play questionnaire: free text, or one of ``choices``."""

    name: str = Field(pattern=NAME)
    """Its column in the ``answers`` export."""
    text: str = Field(min_length=1, max_length=500)
    choices: tuple[str, ...] = Field(default=(), max_length=12)
    """Empty: a free-text answer of at most ``max_chars``."""
    max_chars: int = Field(default=1000, ge=1, le=5000)
    required: bool = False


class StudyDesign(Model):
    """A study's treatments, quiz, practice and questionnaire (``StudyRequest.design``; the
    file ``dealroom study create --design`` reads)."""

    treatments: tuple[Treatment, ...] = Field(default=(), max_length=20)
    """Named treatments, assigned on arrival by block randomisation; pairs are matched within
    a treatment."""
    quiz: Quiz | None = None
    """A comprehension quiz before play (after the consent)."""
    practice: int = Field(default=0, ge=0, le=10)
    """Unpaid practice negotiations against a house agent, before the paid ones."""
    practice_house: str | None = None
    """The practice negotiations' house agent (needed in a pair study; solo: the study's or
    the treatment's house agent by default)."""
    questionnaire: tuple[FormQuestion, ...] = Field(default=(), max_length=20)
    """A short form after play, answered before the completion code or link is shown."""

    @field_validator("treatments")
    @classmethod
    def _treatments(cls, value: tuple[Treatment, ...]) -> tuple[Treatment, ...]:
        if len({t.name for t in value}) != len(value):
            raise ValueError("treatment names must be unique")
        return value

    @field_validator("questionnaire")
    @classmethod
    def _form(cls, value: tuple[FormQuestion, ...]) -> tuple[FormQuestion, ...]:
        if len({q.name for q in value}) != len(value):
            raise ValueError("questionnaire question names must be unique")
        return value


def assigned(secret: Secret, treatments: Sequence[str], arrival: int) -> str:
    """The treatment of the ``arrival``-th participant to take part (from 0): block
    randomisation, each block of ``len(treatments)`` arrivals a permutation drawn from the
    secret (see the module docstring)."""
    assert treatments, "assignment needs treatments"
    size = len(treatments)
    block, place = divmod(arrival, size)
    digest = hmac.new(secret.key, f"treatment/{block}".encode(), hashlib.sha256).digest()
    order = list(treatments)
    random.Random(digest).shuffle(order)
    return order[place]


def form_answers(
    questions: Sequence[FormQuestion], answers: dict[str, str]
) -> dict[str, str] | str:
    """A questionnaire's answers, checked: the answers by question name in the form's order, or
    why they cannot be taken (one line: ``StepRefusal.BAD_ANSWERS``)."""
    known = {q.name: q for q in questions}
    unknown = [name for name in answers if name not in known]
    if unknown:
        return f"no question named {unknown[0][:40]!r}"
    kept: dict[str, str] = {}
    for question in questions:
        answer = answers.get(question.name, "").strip()
        if not answer:
            if question.required:
                return f"question {question.name!r} needs an answer"
            continue
        if question.choices and answer not in question.choices:
            return f"question {question.name!r}: answer one of its choices"
        if len(answer) > question.max_chars:
            return f"question {question.name!r}: at most {question.max_chars} characters"
        kept[question.name] = answer
    return kept

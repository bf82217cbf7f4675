"""A study's configuration in words, as its researcher reads it on the study page and in
``dealroom study show`` (pure, no I/O): one home, rendered from the ``StudyRequest`` (the page
shows these lines from its JSON view, never a copy of its own).

Everything that decides what participants do and are paid is here: who plays whom, how many
negotiations, the tier, deadline and clock, the payment rule, the waiting and dropout limits,
each treatment with its settings, the quiz, practice and questionnaire, how people join. The
study's secret and its completion code and link are not: they say only whether there is one
(the code and link are what a participant is given at the end; the secret and both are saved by
``study export --with-secret``, owner only).
"""

from __future__ import annotations

from decimal import Decimal
from typing import assert_never

from dealroom.protocol._base import Model
from dealroom.protocol.catalog import TIER_RANGES
from dealroom.protocol.generator import DEFAULT_SPEC
from dealroom.protocol.scenario import Tier
from dealroom.protocol.study import CLOSE_GRACE_S, PayoffRule, StudyRequest, duration
from dealroom.protocol.study_design import Information, Treatment
from dealroom.protocol.text import money
from dealroom.protocol.wire import ClockKind

NOT_SHOWN = "set (not shown here: study export --with-secret saves it, owner only)"


class Setting(Model):
    """One line of a study's configuration."""

    name: str
    """What it is (``payment: exchange rate``, ``treatment short``, ...)."""
    value: str
    """Its value, in words."""


def configuration(request: StudyRequest) -> tuple[Setting, ...]:
    """The study's configuration, line by line (see the module docstring)."""
    lines: list[tuple[str, str]] = [
        ("matching", _matching(request)),
        ("negotiations", f"{request.negotiations} per participant"),
        ("tier", tier_words(request.tier)),
        ("deadline", deadline_words(request.deadline)),
        ("clock", clock_words(request.clock)),
        *_payment(request.payoff, request.negotiations),
    ]
    if request.matching == "pairs":
        wait = request.max_wait_s
        ending = request.completion_code is not None or request.completion_url is not None
        then = (
            f"{duration(wait or 0)}; then they negotiate once with the house agent "
            f"{request.house or '(per treatment)'}, and queue again after it"
            if request.after_wait == "house"
            else f"{duration(wait or 0)}; then their part ends (timed_out), paid for the "
            "negotiations they finished" + (", with the completion code or link" if ending else "")
        )
        lines += [
            (
                "waiting limit",
                "none: a participant waits for a partner until they leave"
                if wait is None
                else then,
            ),
            (
                "dropout",
                f"a page silent for {duration(request.dropout_s)}, or closed for "
                f"{CLOSE_GRACE_S} seconds, has left the study (dropped)",
            ),
        ]
    treatments = request.design.treatments
    lines += [(f"treatment {t.name}", treatment_words(request, t)) for t in treatments]
    if not treatments:  # everyone under the study's own settings
        lines.append(("information", information_words("own_value")))
    lines += [
        ("quiz", _quiz(request)),
        ("practice", _practice(request)),
        ("questionnaire", _count(len(request.design.questionnaire), "question")),
        ("consent", "asked" if request.consent is not None else "none"),
        ("instructions", "given" if request.instructions is not None else "none"),
        ("completion code", NOT_SHOWN if request.completion_code is not None else "none"),
        ("completion link", NOT_SHOWN if request.completion_url is not None else "none"),
        ("joining", _joining(request)),
    ]
    return tuple(Setting(name=name, value=value) for name, value in lines)


def tier_words(tier: Tier) -> str:
    low, high = TIER_RANGES[tier]
    return f"{tier} (list prices {money(low)} to {money(high)})"


def deadline_words(deadline: float | None) -> str:
    if deadline is None:
        return f"{duration(DEFAULT_SPEC.deadline)} per negotiation (the default)"
    return f"{duration(deadline)} per negotiation"


def clock_words(clock: ClockKind) -> str:
    match clock:
        case "wall":
            return "wall: real time, running while people think"
        case "virtual":
            return "virtual: moves only as the seats act and wait"
        case _:
            assert_never(clock)


def information_words(information: Information) -> str:
    match information:
        case "own_value":
            return "own value only"
        case "value_range":
            return "own value and the range the other side's is drawn from"
        case _:
            assert_never(information)


def treatment_words(request: StudyRequest, treatment: Treatment) -> str:
    """A treatment's settings, the study's own filled in where it changes none."""
    settled = request.treatment(treatment.name)
    parts = [
        f"tier {tier_words(settled.tier or request.tier)}",
        f"deadline {deadline_words(settled.deadline)}",
    ]
    if request.matching == "solo":
        parts.append(f"house agent {settled.house}")
    parts.append(f"information: {information_words(treatment.information)}")
    parts.append(
        "instructions of its own" if treatment.instructions else "the study's instructions"
    )
    return "; ".join(parts)


def _matching(request: StudyRequest) -> str:
    if request.matching == "pairs":
        return "pairs, matched as they arrive (a new partner each negotiation, roles alternating)"
    role = "alternating buyer and seller" if request.role == "alternate" else f"as {request.role}"
    house = "their treatment's house agent" if request.house is None else request.house
    return f"solo, each participant against {house}, {role}"


def _payment(rule: PayoffRule | None, negotiations: int) -> list[tuple[str, str]]:
    if rule is None:
        return [("payment", "no payoff rule: the study pays nobody through dealroom")]
    which = {
        "all": "the one negotiation"
        if negotiations == 1
        else f"all {negotiations} (their surplus added up)",
        "one_random": f"one of the {negotiations}, drawn at random per participant",
    }[rule.pays]
    return [
        ("payment: currency", rule.currency),
        ("payment: show-up fee", f"{rule.show_up_fee:.2f} {rule.currency}"),
        (
            "payment: exchange rate",
            f"{_plain(rule.exchange_rate)} {rule.currency} per unit of surplus",
        ),
        ("payment: negotiations that pay", which),
        (
            "payment: a loss",
            "never charged: earnings are at least zero, so everyone who took part gets the "
            "show-up fee at least; no cap on earnings",
        ),
        ("payment: the rule in words", rule.text(negotiations)),
    ]


def _plain(amount: Decimal) -> str:
    return f"{amount.normalize():f}"


def _quiz(request: StudyRequest) -> str:
    quiz = request.design.quiz
    if quiz is None:
        return "none"
    asked = ["questions from the study's rules"] if quiz.from_rules else []
    if quiz.questions:
        asked.append(f"{_count(len(quiz.questions), 'question')} of the researcher's")
    attempts = _count(quiz.max_attempts, "attempt")
    return f"{' and '.join(asked) or 'no questions'}; {attempts}, failing the last ends the part"


def _practice(request: StudyRequest) -> str:
    n = request.design.practice
    if n == 0:
        return "none"
    house = request.design.practice_house or "the treatment's house agent"
    return f"{_count(n, 'unpaid negotiation')} against {house}"


def _joining(request: StudyRequest) -> str:
    invited = f"{_count(len(request.participants), 'invited participant')} (a link each)"
    join = request.join
    if join is None:
        return invited
    ids = f", recording {', '.join(join.ids)}" if join.ids else ""
    return f"{invited}; up to {join.capacity} through {join.url(request.id)}{ids}"


def _count(n: int, noun: str) -> str:
    return "none" if n == 0 else f"{n} {noun}{'s' * (n != 1)}"

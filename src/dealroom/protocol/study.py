"""A study with people: its request, what it creates, and its payoff rule (pure, no I/O).

A study is N participants, each with a label the researcher chose, who play a series of
negotiations through the web seat page, either **solo** (each against a house agent or an LLM,
in a room of their own) or in **pairs** matched as they arrive (a new partner for each
negotiation: whoever else is waiting). After their last negotiation the page shows their result,
their payment by the study's ``PayoffRule`` and the completion code or link
(``dealroom.server.study``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Literal, LiteralString
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from dealroom.protocol._base import CENT, Model, Money, Role
from dealroom.protocol.rules import Rules
from dealroom.protocol.scenario import Tier
from dealroom.protocol.secret import Secret
from dealroom.protocol.study_design import FormQuestion, StudyDesign, Treatment
from dealroom.protocol.study_join import StudyJoin, placeholders
from dealroom.protocol.wire import ClockKind, SeriesResult

LABEL = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
"""A study's id and each participant's label: letters, digits, ``_.-``, at most 64."""

Matching = Literal["solo", "pairs"]
"""``solo``: each participant in a room of their own against the house agent; ``pairs``: two
participants per negotiation, matched as they arrive."""

AfterWait = Literal["end", "house"]
"""Pairs: what a participant who waited ``max_wait_s`` for a partner gets: their part ends
(``timed_out``, paid by the study's rule with the completion code), or their next negotiation
is with the study's house agent (and they may go on from there)."""

ParticipantState = Literal[
    "invited",
    "consenting",
    "waiting",
    "playing",
    "done",
    "timed_out",
    "dropped",
    "quiz_failed",
    "closed",
]
"""Where a participant is: not yet opened their link, reading the consent, waiting for a
partner (pairs), playing (or between negotiations), done with every negotiation; or (pairs) out
early: ``timed_out``, nobody to negotiate with arrived within the study's waiting limit, or
``dropped``, they left (their page closed, or went silent) while waiting or negotiating; or
``quiz_failed``: their last attempt at the study's quiz failed (paid the show-up fee); or
``closed``: the researcher closed the study before their part was over (paid by the rule for
what they finished, if they took part)."""

Ending = Literal["done", "timed_out", "dropped", "quiz_failed", "closed"]
"""How a participant's part in a study ended: the last five states."""

StudyStatus = Literal["open", "paused", "closed"]
"""A study's status, set by its researcher (``server.study_control``): ``open``; ``paused``,
its URL admits no new label (everyone already in goes on); ``closed``, for good: nobody new,
and every part not over ends (``closed``) once its open negotiation, if any, has ended."""


class StudyStatusChange(Model):
    """``POST /admin/studies/ID/status`` or ``/web/api/study/status``: the new status."""

    status: StudyStatus


CLOSE_GRACE_S = 10
"""Seconds a pair participant's page may stay closed before they have left the study (a reload
closes the page and opens it again within them)."""

PageEvent = Literal["open", "hidden", "visible", "close"]
"""What a participant's page reports: opened (or reloaded), out of sight, in sight again, closed."""

Pays = Literal["all", "one_random"]
"""Which negotiations pay: every one (their surplus summed), or one drawn at random per
participant (drawn from the study's secret and the label: the same draw on every reading)."""


class PayoffRule(Model):
    """How a participant's negotiations turn into money: ``show_up_fee`` plus
    ``exchange_rate`` times the surplus of the negotiations that pay, never below the fee."""

    currency: str = Field(default="USD", pattern=r"^[A-Za-z]{1,8}$")
    """The payment's currency (or unit, such as ``points``)."""
    exchange_rate: Decimal = Field(ge=0, le=1000, decimal_places=4)
    """Payment per unit of surplus (the scenario's currency)."""
    show_up_fee: Decimal = Field(default=Decimal("0"), ge=0, le=10_000, decimal_places=2)
    pays: Pays = "all"

    def text(self, negotiations: int) -> str:
        """The rule in words, as the participant and the researcher read it."""
        fee = f"{self.show_up_fee:.2f} {self.currency}"
        which = {
            "all": "the surplus of your negotiation"
            if negotiations == 1
            else f"the surplus of all {negotiations} negotiations",
            "one_random": f"the surplus of one of your {negotiations} negotiations, drawn "
            "at random",
        }[self.pays]
        return (
            f"{fee} for taking part, plus {self.exchange_rate.normalize():f} {self.currency} "
            f"per unit of {which}; a loss is never charged (earnings are at least zero). If "
            "your part ends early, the negotiations you finished count."
        )


class Payoff(Model):
    """One participant's payment, by the study's rule."""

    currency: str
    show_up_fee: Decimal
    earnings: Decimal
    """``exchange_rate`` times the paying surplus, rounded to cents, at least zero."""
    total: Decimal
    paid: tuple[int, ...]
    """The participant's negotiations (numbered from 1) that pay."""
    rule: str


class StudyCompletion(Model):
    """What a participant's page shows once their part has ended: their last negotiation
    ended, or (pairs) they waited past the limit or left."""

    ended: Ending = "done"
    message: str = "You have finished all your negotiations."
    """Why their part ended, in their words."""
    negotiations: int
    total_surplus: Decimal
    currency: str
    """The scenarios' currency (of ``total_surplus``)."""
    payoff: Payoff | None
    code: str | None
    """The completion code, once the questionnaire (if any) is answered."""
    url: str | None
    questions: tuple[FormQuestion, ...] = ()
    """The study's questionnaire, while it is still to be answered (code and link wait)."""


def _field_error(field: str, message: LiteralString) -> PydanticCustomError:
    """A rule across fields, blamed on ``field`` (its ``ctx``: a model validator's error has no
    location of its own), so that the CLI names the flag and the HTTP API the field."""
    return PydanticCustomError("study_request", message, {"field": field})


class StudyRequest(Model):
    """Admin request: create a study on an HTTP server (``POST /admin/studies``)."""

    id: str = Field(pattern=LABEL)
    """The study's id: its negotiations are stored as the run of that name."""
    participants: tuple[str, ...] = Field(default=(), max_length=2000)
    """One label per invited participant (each gets one link of their own)."""
    join: StudyJoin | None = None
    """Self-enrolment through the study's one URL (``dealroom.protocol.study_join``), besides
    or instead of invited participants."""
    matching: Matching = "solo"
    house: str | None = None
    """Solo: the agent spec in the other seat (a scripted agent or ``llm:MODEL``). Pairs, with
    ``after_wait`` ``house``: the agent that plays whoever waited past ``max_wait_s``."""
    role: Role | Literal["alternate"] = "buyer"
    """Solo: the participants' seat, or ``alternate`` (buyer, seller, buyer, ... by label order).
    Pairs alternate by themselves: of the two matched, who has been the buyer less often is."""
    negotiations: int = Field(default=1, ge=1, le=100)
    """How many negotiations each participant plays."""
    tier: Tier = "mid"
    secret: str | None = Field(default=None, repr=False)
    """Hex secret the scenarios, house agents and random payments draw under (default: fresh):
    solo participants all play the same scenarios in the same order."""
    deadline: float | None = Field(default=None, gt=0, le=86_400)
    clock: ClockKind = "wall"
    rules: Rules = Rules()
    consent: str | None = Field(default=None, min_length=1, max_length=2000)
    instructions: str | None = Field(default=None, min_length=1, max_length=20_000)
    """The researcher's instructions, in Markdown (headings, paragraphs, lists)."""
    payoff: PayoffRule | None = None
    completion_code: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    completion_url: str | None = Field(default=None, max_length=2000)
    """Where the final page links to (a recruitment platform's completion link): https, or
    http on a loopback host."""
    max_wait_s: float | None = Field(default=600, ge=10, le=86_400)
    """Pairs: the longest a participant waits for a partner before their part ends
    (``timed_out``: paid by the payoff rule for what they did, the show-up fee at least, with
    the completion code); None: no limit."""
    after_wait: AfterWait = "end"
    """Pairs: what a participant who waited ``max_wait_s`` gets (``AfterWait``)."""
    dropout_s: float = Field(default=60, ge=10, le=3600)
    """Pairs: seconds a participant's page may go silent (no request, its live view included)
    before they have left the study (``dropped``); a closed page counts after
    ``CLOSE_GRACE_S``."""
    design: StudyDesign = StudyDesign()
    """Treatments, quiz, practice and questionnaire (``dealroom.protocol.study_design``)."""

    @field_validator("participants")
    @classmethod
    def _labels(cls, labels: tuple[str, ...]) -> tuple[str, ...]:
        bad = next((label for label in labels if not _is_label(label)), None)
        if bad is not None:
            raise ValueError(f"participant label {bad[:70]!r}: letters, digits, _.- (at most 64)")
        if len(set(labels)) != len(labels):
            raise ValueError("participant labels must be unique")
        return labels

    @field_validator("secret")
    @classmethod
    def _strong_secret(cls, value: str | None) -> str | None:
        if value is not None:
            Secret.chosen(value)
        return value

    @field_validator("completion_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None:
            parts = urlsplit(value)
            loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
            if not parts.hostname or not (
                parts.scheme == "https" or (parts.scheme == "http" and loopback)
            ):
                raise ValueError("an https URL is needed")
            if "{" in parts.netloc or "}" in parts.netloc:
                raise ValueError("placeholders go in the path or query, not the host")
        return value

    @model_validator(mode="after")
    def _seats(self) -> StudyRequest:
        if not self.participants and self.join is None:
            raise _field_error("participants", "a study needs participants, or a join capacity")
        if len(self.participants) + (0 if self.join is None else self.join.capacity) > 2000:
            raise _field_error("join", "a study has at most 2000 participants in all")
        names = {"label", *(() if self.join is None else self.join.ids)}
        unknown = [p for p in placeholders(self.completion_url or "") if p not in names]
        if unknown:
            raise _field_error(
                "completion_url",
                "a placeholder is the label's or a recorded id's name (label, or one of join.ids)",
            )
        housed = self.house is not None or (
            bool(self.design.treatments)
            and all(t.house is not None for t in self.design.treatments)
        )
        if self.matching == "solo" and not housed:
            raise _field_error("house", "a solo study needs a house agent (or one per treatment)")
        if self.after_wait == "house" and (
            self.matching != "pairs" or self.max_wait_s is None or not housed
        ):
            raise _field_error(
                "after_wait",
                "a house agent after the wait needs a pair study with a waiting limit and a "
                "house agent (or one per treatment)",
            )
        if (
            self.matching == "pairs"
            and self.after_wait == "end"
            and (self.house is not None or any(t.house is not None for t in self.design.treatments))
        ):
            raise _field_error(
                "house", "a pair study's house agent plays only those who waited (after_wait house)"
            )
        if self.matching == "pairs" and self.design.practice and self.design.practice_house is None:
            raise _field_error("design", "a pair study's practice needs a practice_house")
        if self.matching == "pairs" and self.role != "buyer":
            raise _field_error("role", "a pair study has no fixed role (its pairs alternate)")
        if self.matching == "pairs" and self.clock == "virtual":
            raise _field_error(
                "clock",
                "a pair study runs on the wall clock: on the virtual clock each person's move "
                "would wait for the other's next one",
            )
        return self

    def run_secret(self) -> Secret:
        """The secret asked for, or a fresh one."""
        return Secret.new() if self.secret is None else Secret.from_hex(self.secret)

    def treatment(self, name: str | None) -> Treatment:
        """The settings of a treatment by name (None or unknown: the study's own)."""
        found = next((t for t in self.design.treatments if t.name == name), None)
        own = Treatment(name=name or "study", house=self.house)
        if found is None:
            return own
        return found.model_copy(
            update={
                "tier": found.tier or self.tier,
                "house": found.house or self.house,
                "deadline": found.deadline or self.deadline,
            }
        )

    def tier_of(self, name: str | None) -> Tier:
        return self.treatment(name).tier or self.tier

    def houses(self) -> set[str]:
        """Every house agent the study may seat (checked when it is created)."""
        specs = {self.house, self.design.practice_house, *(t.house for t in self.design.treatments)}
        return {spec for spec in specs if spec is not None}


class StudyCreated(Model):
    """Admin response: the study's page token and one seat-page token per participant."""

    study: str
    token: str
    """Bearer token of the study page (``/web/study``): the researcher's, read only."""
    participants: dict[str, str]
    """Each participant's token, by label: their link is ``/web/seat#token=TOKEN``."""


def _is_label(text: str) -> bool:
    return re.fullmatch(LABEL, text) is not None


def paid_negotiations(rule: PayoffRule, secret: Secret, label: str, played: int) -> tuple[int, ...]:
    """Which of a participant's ``played`` negotiations pay (numbered from 1)."""
    if rule.pays == "all" or played == 0:
        return tuple(range(1, played + 1))
    digest = hmac.new(secret.key, f"payoff/{label}".encode(), hashlib.sha256).digest()
    return (int.from_bytes(digest[:8], "big") % played + 1,)


def payoff(
    rule: PayoffRule, results: Sequence[SeriesResult], paid: tuple[int, ...], negotiations: int
) -> Payoff:
    """A participant's payment from their results (``SeriesResult.negotiation`` numbered from 1
    in their own series) and the negotiations that pay."""
    surplus = sum((r.outcome.surplus for r in results if r.negotiation in paid), Decimal("0"))
    earnings = max((rule.exchange_rate * surplus).quantize(CENT, ROUND_HALF_UP), Decimal("0.00"))
    fee = rule.show_up_fee.quantize(CENT)
    return Payoff(
        currency=rule.currency,
        show_up_fee=fee,
        earnings=earnings,
        total=fee + earnings,
        paid=paid,
        rule=rule.text(negotiations),
    )


class PlayedNegotiation(Model):
    """One negotiation a participant played, as the study keeps (and journals) it."""

    room: str
    room_negotiation: int
    """The negotiation's number in its room (a solo room plays the whole series)."""
    key: str
    """Its key in the results store (run: the study's id)."""
    role: Role
    counterpart: str
    """The other seat: a participant's label, or the house agent's spec."""
    buyer_value: Money
    seller_cost: Money
    currency: str
    """The scenario's currency (of every amount here)."""
    result: SeriesResult
    """As the participant's seat saw it, numbered in their own series (practice negotiations
    in their own series of practice)."""
    treatment: str | None = None
    """The participant's treatment, if the study has treatments."""
    practice: bool = False
    """An unpaid practice negotiation."""
    started_at: float | None = None
    """When its clock started (Unix time): the first move, or its page showing it."""
    ended_at: float | None = None
    """When the study recorded its end (Unix time)."""


def duration(seconds: float) -> str:
    """Seconds in a person's words: ``45 seconds``, ``10 minutes``, ``1 minute 30 seconds``."""
    whole = round(seconds)
    minutes, rest = divmod(whole, 60)
    parts = [f"{minutes} minute{'s' * (minutes != 1)}"] if minutes else []
    if rest or not minutes:
        parts.append(f"{rest} second{'s' * (rest != 1)}")
    return " ".join(parts)


def presence_rule(request: StudyRequest) -> str | None:
    """A pair study's rule on leaving, as its participants read it before they play (None for
    a solo study, whose participants can leave and come back)."""
    if request.matching != "pairs":
        return None
    return (
        f"Keep this page open while you take part: if it is closed for more than "
        f"{CLOSE_GRACE_S} seconds, or stops answering for {duration(request.dropout_s)}, you "
        "have left the study; a negotiation you are in then ends without a deal."
    )


def waiting_rule(request: StudyRequest) -> str | None:
    """A pair study's waiting limit, as a waiting participant reads it (None: no limit)."""
    if request.matching != "pairs" or request.max_wait_s is None:
        return None
    if request.after_wait == "house":
        return (
            f"If nobody arrives within {duration(request.max_wait_s)}, you negotiate with a "
            "computer agent instead, under the same rules."
        )
    then: list[str] = []
    if request.payoff is not None:
        then.append(
            "you are paid the show-up fee plus your earnings from the negotiations you finished"
        )
    if request.completion_code is not None:
        then.append("you get your completion code")
    elif request.completion_url is not None:
        then.append("you get the link to finish")
    return (
        f"If nobody arrives within {duration(request.max_wait_s)}, your part ends there"
        + (": " + " and ".join(then) if then else "")
        + "."
    )


def ending_text(ended: Ending, request: StudyRequest, *, negotiating: bool) -> str:
    """Why a participant's part ended, in their words (``negotiating``: they left during a
    negotiation rather than while waiting)."""
    match ended:
        case "done":
            return "You have finished all your negotiations."
        case "timed_out":
            wait = duration(request.max_wait_s or 0)
            return (
                f"Nobody else arrived to negotiate with you within {wait}, so your part in the "
                "study ends here. Thank you for waiting."
            )
        case "dropped":
            when = " during a negotiation," if negotiating else ""
            return (
                f"Your page was closed, or stopped answering,{when} so you have left the study "
                "and your part in it has ended."
            )
        case "closed":
            return (
                "The researcher has closed the study, so your part in it ends here. Thank you "
                "for taking part."
            )
        case "quiz_failed":
            attempts = 0 if request.design.quiz is None else request.design.quiz.max_attempts
            paid = (
                " You are paid the show-up fee."
                if request.payoff is not None and request.payoff.show_up_fee > 0
                else ""
            )
            return (
                f"The questions about the study were not all answered correctly within "
                f"{attempts} attempt{'s' * (attempts != 1)}, so your part in the study ends "
                f"here.{paid}"
            )

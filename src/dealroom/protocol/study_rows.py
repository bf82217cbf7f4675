"""The rows of a study's CSV exports (``dealroom.server.study_export``): one model per file,
whose fields in order are its columns."""

from __future__ import annotations

from decimal import Decimal

from dealroom.protocol._base import Model, Money, Role
from dealroom.protocol.events import EndReason
from dealroom.protocol.outcome import Status
from dealroom.protocol.study import PageEvent, ParticipantState


class NegotiationRow(Model):
    """One row of a study's ``negotiations.csv``: one participant's one negotiation."""

    study: str
    participant: str
    negotiation: int
    """Number in the participant's own series, from 1 (practice: in their practice series)."""
    treatment: str | None
    """The participant's treatment (the study's treatments; empty without)."""
    practice: bool
    """An unpaid practice negotiation (never pays, not counted in ``negotiations``)."""
    role: Role
    counterpart: str
    room: str
    room_negotiation: int
    key: str
    scenario_id: str
    item: str
    currency: str
    list_price: Money
    buyer_value: Money
    seller_cost: Money
    status: Status
    end_reason: EndReason
    end_time_s: float
    price: Money | None
    surplus: Money
    """The participant's own surplus."""
    pays: bool | None
    """Whether it counts towards the payment (None: the study has no payoff rule)."""
    payoff: Decimal | None
    """``exchange_rate`` times the surplus if it pays (the total is floored at zero, not each
    negotiation)."""
    page_opens: int
    """Times the participant's page was opened (or reloaded) during this negotiation."""
    page_hidden: int
    """Times it went out of sight (another tab or app)."""
    page_closes: int
    left: str | None
    """The participant who left the study during this negotiation (their page closed or went
    silent: the server walked away for them), if one did."""


class PaymentRow(Model):
    """One row of a study's ``payments.csv``: one participant."""

    study: str
    participant: str
    state: ParticipantState
    treatment: str | None
    quiz_attempts: int
    """Attempts at the study's quiz (the last one passed, unless the state is ``quiz_failed``)."""
    practice: int
    """Practice negotiations played (unpaid)."""
    negotiations: int
    """Negotiations played (of the study's series length)."""
    total_surplus: Decimal
    paid: str
    """The negotiations that pay, numbered from 1 and separated by ``;``."""
    currency: str | None
    show_up_fee: Decimal | None
    earnings: Decimal | None
    total: Decimal | None
    """What to pay: the show-up fee plus the earnings of the negotiations they finished, for
    everyone who took part (consented, or opened their link where no consent is asked); final
    once their state is ``done``, ``timed_out`` or ``dropped``, what is owed so far before.
    None for who never took part, and without a payoff rule."""
    completion_code: str | None
    join_label: str | None
    """The label they joined under through the study's URL (``PROLIFIC_PID``); None for an
    invited participant."""
    join_ids: str
    """The ids their visit carried (``NAME=value``, separated by ``;``, in ``join.ids`` order)."""
    joined_at: str | None
    """When they joined (UTC, ISO 8601 with milliseconds)."""
    consented_at: str | None
    """When they agreed to the consent line (UTC, ISO 8601)."""


class PageEventRow(Model):
    """One row of a study's ``page_events.csv``: one event of a participant's page."""

    study: str
    participant: str
    at: str
    """When, UTC, ISO 8601 with milliseconds."""
    event: PageEvent
    room: str | None
    room_negotiation: int | None


class EventRow(Model):
    """One row of a study's ``events.csv``: one event of one of its negotiations (offers,
    answers, messages, the end), in the order the referee recorded them."""

    study: str
    key: str
    """The negotiation's key in the results store (``NegotiationRow.key``)."""
    seq: int
    t: float
    """Seconds on the negotiation's clock."""
    type: str
    role: Role | None
    """The seat that acted (the end: the seat that ended it, None at the deadline)."""
    by: str | None
    """Who sat there: a participant's label, or the house agent's spec."""
    offer_id: str | None
    price: Money | None
    text: str | None
    """The message sent, or the one that came with an offer, a rejection or a walk-away."""
    end_reason: EndReason | None


class QuizRow(Model):
    """One row of a study's ``quiz.csv``: one attempt at its quiz."""

    study: str
    participant: str
    treatment: str | None
    attempt: int
    """Numbered from 1."""
    at: str
    """When, UTC, ISO 8601 with milliseconds."""
    answers: str
    """The choices given, numbered from 0 and separated by ``;``, one per question."""
    wrong: str
    """The questions answered wrongly, numbered from 0 and separated by ``;``."""
    passed: bool


class AnswerRow(Model):
    """One row of a study's ``answers.csv``: one answer to its questionnaire."""

    study: str
    participant: str
    treatment: str | None
    question: str
    """The question's name."""
    answer: str
    answered_at: str
    """When the form was sent, UTC, ISO 8601 with milliseconds."""

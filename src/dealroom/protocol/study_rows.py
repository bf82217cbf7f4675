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
    """The study's id (its run in the results store)."""
    participant: str
    """The participant's name in the study: an invited participant's label, or ``J<n>`` for one
    who joined through the study's URL."""
    negotiation: int
    """Number in the participant's own series, from 1 (practice: in their practice series)."""
    treatment: str | None
    """The participant's treatment (empty: the study has none)."""
    practice: bool
    """An unpaid practice negotiation (never pays, not counted in ``negotiations``)."""
    role: Role
    """The participant's seat: ``buyer`` or ``seller``."""
    counterpart: str
    """Who sat in the other seat: a participant's name, or the house agent's spec."""
    room: str
    """The room the negotiation was played in."""
    room_negotiation: int
    """The negotiation's number in its room (a solo room plays the whole series)."""
    key: str
    """The negotiation's key in the results store (``room/number``), under the study's run."""
    scenario_id: str
    """The scenario's id (a hash of the study's secret, tier and index)."""
    item: str
    """The item traded."""
    currency: str
    """The scenario's currency (of every amount in the row)."""
    list_price: Money
    """The item's public list price."""
    buyer_value: Money
    """The buyer's private value: the most it would pay."""
    seller_cost: Money
    """The seller's private cost: the least it would take."""
    status: Status
    """``deal`` or ``no_deal``."""
    end_reason: EndReason
    """How it ended: ``accepted``, ``walk_away``, ``deadline``, ``action_limit``, ..."""
    end_time_s: float
    """When it ended, in seconds on the negotiation's clock (the wall clock: since it began)."""
    ended_at: str | None
    """When it ended (UTC, ISO 8601 with milliseconds); empty for a negotiation recorded before
    this column existed."""
    price: Money | None
    """The price agreed (empty without a deal)."""
    surplus: Money
    """The participant's own surplus."""
    pays: bool | None
    """Whether it counts towards the payment (None: the study has no payoff rule)."""
    payoff: Decimal | None
    """``exchange_rate`` times the surplus if it pays (the total is floored at zero, not each
    negotiation)."""
    page_opens: int
    """Times the participant's page was opened (or reloaded) during this negotiation (after it
    began and before it ended: ``page_events.csv``'s events with its room and number)."""
    page_hidden: int
    """Times it went out of sight (another tab or app)."""
    page_closes: int
    """Times it was closed."""
    left: str | None
    """The participant who left the study during this negotiation (their page closed or went
    silent: the server walked away for them), if one did."""


class PaymentRow(Model):
    """One row of a study's ``payments.csv``: one participant."""

    study: str
    """The study's id (its run in the results store)."""
    participant: str
    """The participant's name in the study: an invited participant's label, or ``J<n>`` for one
    who joined through the study's URL."""
    state: ParticipantState
    """``invited``, ``consenting``, ``waiting``, ``playing``, ``done``, ``timed_out``,
    ``dropped``, ``quiz_failed`` or ``closed`` (design.md, section 11)."""
    treatment: str | None
    """Their treatment (empty: the study has none, or they never took part)."""
    quiz_attempts: int
    """Attempts at the study's quiz (the last one passed, unless the state is ``quiz_failed``)."""
    practice: int
    """Practice negotiations played (unpaid)."""
    negotiations: int
    """Negotiations played (of the study's series length)."""
    total_surplus: Decimal
    """Their surplus summed over the negotiations they played (practice excluded)."""
    paid: str
    """The negotiations that pay, numbered from 1 and separated by ``;``."""
    currency: str | None
    """The payment's currency (the payoff rule's)."""
    show_up_fee: Decimal | None
    """The payoff rule's show-up fee."""
    earnings: Decimal | None
    """``exchange_rate`` times the surplus of the paying negotiations, rounded half up to the
    cent, at least zero."""
    total: Decimal | None
    """What to pay: the show-up fee plus the earnings of the negotiations they finished, for
    everyone who took part (consented, or opened their link where no consent is asked); final
    once their state is ``done``, ``timed_out`` or ``dropped``, what is owed so far before.
    None for who never took part, and without a payoff rule."""
    completion_code: str | None
    """The completion code they were given (once their part is over)."""
    join_label: str | None
    """The label they joined under through the study's URL (``PROLIFIC_PID``); None for an
    invited participant."""
    join_ids: str
    """The ids their visit carried (``NAME=value``, separated by ``;``, in ``join.ids`` order)."""
    joined_at: str | None
    """When they joined (UTC, ISO 8601 with milliseconds)."""
    consented_at: str | None
    """When they agreed to the consent line (UTC, ISO 8601)."""
    part_ended_at: str | None
    """When their part in the study ended (UTC, ISO 8601 with milliseconds): the end of their
    last negotiation (``done``), or when they timed out, dropped or failed the quiz; empty while
    it goes on (and for a ``done`` participant whose last negotiation was recorded before
    negotiations had an ``ended_at``)."""


class PageEventRow(Model):
    """One row of a study's ``page_events.csv``: one event of a participant's page."""

    study: str
    """The study's id (its run in the results store)."""
    participant: str
    """The participant's name in the study: an invited participant's label, or ``J<n>`` for one
    who joined through the study's URL."""
    at: str
    """When, UTC, ISO 8601 with milliseconds."""
    event: PageEvent
    """``open`` (or a reload), ``hidden``, ``visible`` or ``close``."""
    room: str | None
    """The room the participant sat in then (empty before their first)."""
    room_negotiation: int | None
    """That room's negotiation, if one was running then (begun and not yet ended); empty
    between negotiations (before one began, after it ended)."""


class EventRow(Model):
    """One row of a study's ``events.csv``: one event of one of its negotiations (offers,
    answers, messages, the end), in the order the referee recorded them."""

    study: str
    """The study's id (its run in the results store)."""
    key: str
    """The negotiation's key in the results store (``NegotiationRow.key``)."""
    seq: int
    """The event's number in its negotiation, from 0."""
    t: float
    """Seconds on the negotiation's clock."""
    type: str
    """``offer_made``, ``offer_withdrawn``, ``offer_accepted``, ``offer_rejected``,
    ``message_sent``, ``walked_away`` or ``negotiation_ended``."""
    role: Role | None
    """The seat that acted (the end: the seat that ended it, None at the deadline)."""
    by: str | None
    """Who sat there: a participant's label, or the house agent's spec."""
    offer_id: str | None
    """The offer it made, withdrew, accepted or rejected."""
    price: Money | None
    """The offer's price, or the deal's at the end."""
    text: str | None
    """The message sent, or the one that came with an offer, a rejection or a walk-away."""
    end_reason: EndReason | None
    """The end's reason (the last event only)."""


class QuizRow(Model):
    """One row of a study's ``quiz.csv``: one attempt at its quiz."""

    study: str
    """The study's id (its run in the results store)."""
    participant: str
    """The participant's name in the study: an invited participant's label, or ``J<n>`` for one
    who joined through the study's URL."""
    treatment: str | None
    """The participant's treatment (empty: the study has none)."""
    attempt: int
    """Numbered from 1."""
    at: str
    """When, UTC, ISO 8601 with milliseconds."""
    answers: str
    """The choices given, numbered from 0 and separated by ``;``, one per question."""
    wrong: str
    """The questions answered wrongly, numbered from 0 and separated by ``;``."""
    passed: bool
    """Every answer was right."""


class AnswerRow(Model):
    """One row of a study's ``answers.csv``: one answer to its questionnaire."""

    study: str
    """The study's id (its run in the results store)."""
    participant: str
    """The participant's name in the study: an invited participant's label, or ``J<n>`` for one
    who joined through the study's URL."""
    treatment: str | None
    """The participant's treatment (empty: the study has none)."""
    question: str
    """The question's name."""
    answer: str
    """Their answer: the text, or the choice as written."""
    answered_at: str
    """When the form was sent, UTC, ISO 8601 with milliseconds."""


class CodebookRow(Model):
    """One row of a study's ``codebook.csv``: one column of one of its exports."""

    file: str
    """The export (``<study>-<file>.csv``)."""
    column: str
    """The column's name in the file's header."""
    type: str
    """Its values: ``text``, ``integer``, ``number``, ``amount`` (a decimal), ``true/false``,
    ``UTC time`` or one of the values listed; empty cells are None."""
    description: str
    """What the column holds (its row model's field docstring)."""

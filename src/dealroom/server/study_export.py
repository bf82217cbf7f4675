"""A study's data as its researcher exports it (pure, no I/O): one row per negotiation of each
participant, one per participant (their payment, how they joined), one per page event and one
per event of its negotiations, a platform's bonus file, and the CSV text of any of them, whose
columns are the row model's fields in order (``dealroom.protocol.study``).

The rows are built from what the study recorded as each negotiation ended (``Study.recorded``,
journaled), the same facts its participants' pages and payments read; the results store holds
the full records under the same keys (``NegotiationRow.key``, run: the study's id), and the
events are read from there.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Literal, assert_never, get_args

from dealroom.protocol._base import CENT, Model
from dealroom.protocol.events import (
    EndReason,
    Event,
    MessageSent,
    NegotiationEnded,
    OfferAccepted,
    OfferMade,
    OfferRejected,
    OfferWithdrawn,
    WalkedAway,
)
from dealroom.protocol.study import paid_negotiations
from dealroom.protocol.study_quiz import quiz_questions, wrong_answers
from dealroom.protocol.study_rows import (
    AnswerRow,
    EventRow,
    NegotiationRow,
    PageEventRow,
    PaymentRow,
    QuizRow,
)
from dealroom.protocol.text import shown
from dealroom.server.study import Study
from dealroom.server.study_codebook import WIDE, CodebookRow, codebook_rows
from dealroom.server.study_people import Participant
from dealroom.store.results import StoredNegotiation


def negotiation_rows(study: Study) -> list[NegotiationRow]:
    """Every finished negotiation of every participant, by participant then series."""
    return [row for who in study.participants.values() for row in _negotiations(study, who)]


def payment_rows(study: Study) -> list[PaymentRow]:
    """Every participant's payment line: for all who took part, what they are owed by the
    study's rule for the negotiations they finished (final once their part is over)."""
    rows: list[PaymentRow] = []
    for who in study.participants.values():
        completion = study.completion(who)
        payoff = study.payment(who)
        rows.append(
            PaymentRow(
                study=study.id,
                participant=who.label,
                state=study.state(who),
                treatment=who.treatment,
                quiz_attempts=len(who.quiz),
                practice=len(who.practice),
                negotiations=study.played(who),
                total_surplus=who.total_surplus,
                paid="" if payoff is None else ";".join(str(n) for n in payoff.paid),
                currency=None if payoff is None else payoff.currency,
                show_up_fee=None if payoff is None else payoff.show_up_fee,
                earnings=None if payoff is None else payoff.earnings,
                total=None if payoff is None else payoff.total,
                completion_code=None if completion is None else completion.code,
                join_label=None if who.joined is None else who.joined.label,
                join_ids=""
                if who.joined is None
                else ";".join(f"{name}={value}" for name, value in who.joined.ids.items()),
                joined_at=None if who.joined is None else _utc(who.joined.at),
                consented_at=who.agreed,
                part_ended_at=_utc_or_none(part_ended(study, who)),
            )
        )
    return rows


def bonus_text(study: Study) -> str:
    """The ``bonus`` export, as Prolific's bulk bonus payment takes it: one ``LABEL,AMOUNT``
    line (no header) per participant who joined through the study's URL, whose part is over
    and whose earnings are above zero; AMOUNT is the earnings in the payoff rule's currency, to
    the cent (the show-up fee is the platform's reward for the submission, so not a bonus)."""
    lines: list[str] = []
    for who in study.participants.values():
        payoff = study.payment(who)
        if who.joined is None or payoff is None or not study.over(who):
            continue
        if payoff.earnings > 0:
            lines.append(f"{who.joined.label},{payoff.earnings.quantize(CENT):f}\n")
    return "".join(lines)


def part_ended(study: Study, who: Participant) -> float | None:
    """When their part ended (Unix time): when it ended early (timed out, dropped, failed the
    quiz), else when their last negotiation ended once they played them all; None while it
    goes on."""
    if who.ended is not None:
        return who.ended.at
    if study.done(who):
        return who.results[-1].ended_at
    return None


def _utc(when: float) -> str:
    """Unix time as UTC, ISO 8601, rounded to the millisecond as the journal keeps it (the same
    cell before and after a restart)."""
    return datetime.fromtimestamp(round(when, 3), UTC).isoformat(timespec="milliseconds")


def _utc_or_none(when: float | None) -> str | None:
    return None if when is None else _utc(when)


def page_event_rows(study: Study) -> list[PageEventRow]:
    """Every page event of every participant, in the order each page sent them."""
    rows: list[PageEventRow] = []
    for who in study.participants.values():
        during = page_negotiations(study, who)
        rows += [
            PageEventRow(
                study=study.id,
                participant=who.label,
                at=_utc(when),
                event=event,
                room=room,
                room_negotiation=number,
            )
            for (when, event, room, _), number in zip(who.page, during, strict=True)
        ]
    return rows


def page_negotiations(study: Study, who: Participant) -> list[int | None]:
    """For each of a participant's page events, the negotiation it counts against (its number
    in the event's room): the room's negotiation then (as the study noted it), if it was
    running at that moment, begun (``started_at``) and not yet ended (``ended_at``); None
    between negotiations. An event noted before its negotiation began, or after it ended (a
    ``close`` once the outcome is in), counts against none. Both ``page_events.csv`` and the
    per-negotiation counts of ``negotiations.csv`` read this, so they agree."""
    spans: dict[tuple[str, int], tuple[float | None, float | None]] = {
        (p.room, p.room_negotiation): (p.started_at, p.ended_at)
        for p in (*who.practice, *who.results)
    }
    current = study.current(who)
    if current is not None and current[0].current.is_open:  # running, or yet to begin
        live = current[0].current
        began = float("inf") if live.started_at is None else live.started_at
        spans[current[0].id, live.number] = (began, None)
    during: list[int | None] = []
    for when, _, room, number in who.page:
        if room is None or number is None:
            during.append(None)
            continue
        began, ended = spans.get((room, number), (None, None))
        running = (began is None or began <= when) and (ended is None or when <= ended)
        during.append(number if running else None)
    return during


def event_rows(study: Study, stored: Iterable[StoredNegotiation]) -> list[EventRow]:
    """Every event of the study's stored negotiations (of ``stored``, the results store's rows
    of its run), negotiation by negotiation, each with who sat in the seat that acted."""
    rows: list[EventRow] = []
    for row in stored:
        seated = _seated(study, row.key)
        for event in row.record.events:
            offer_id, price, text, reason = _cells(event)
            rows.append(
                EventRow(
                    study=study.id,
                    key=row.key,
                    seq=event.seq,
                    t=round(event.t, 3),
                    type=event.type,
                    role=event.by,
                    by=None if event.by is None else seated.get(event.by),
                    offer_id=offer_id,
                    price=price,
                    text=text,
                    end_reason=reason,
                )
            )
    return rows


def quiz_rows(study: Study) -> list[QuizRow]:
    """Every attempt at the study's quiz, participant by participant."""
    rows: list[QuizRow] = []
    for who in study.participants.values():
        questions = quiz_questions(study.request, who.treatment)
        for n, attempt in enumerate(who.quiz, 1):
            wrong = wrong_answers(questions, attempt.answers)
            rows.append(
                QuizRow(
                    study=study.id,
                    participant=who.label,
                    treatment=who.treatment,
                    attempt=n,
                    at=_utc(attempt.at),
                    answers=";".join(map(str, attempt.answers)),
                    wrong=";".join(map(str, wrong)),
                    passed=attempt.passed,
                )
            )
    return rows


def answer_rows(study: Study) -> list[AnswerRow]:
    """Every answer to the study's questionnaire, participant by participant."""
    return [
        AnswerRow(
            study=study.id,
            participant=who.label,
            treatment=who.treatment,
            question=question,
            answer=answer,
            answered_at=_utc(who.answered_at or 0.0),
        )
        for who in study.participants.values()
        for question, answer in (who.answers or {}).items()
    ]


def participants_text(study: Study) -> str:
    """The wide file, one row per participant: their ``payments.csv`` row, then for each
    negotiation i of the series its ``WIDE`` columns (``n<i>_role``, ...; empty where they did
    not play it), whether they passed the quiz, and one ``q_<name>`` column per question of
    the questionnaire."""
    negotiations = {
        (row.participant, row.negotiation): row
        for row in negotiation_rows(study)
        if not row.practice
    }
    series = range(1, study.request.negotiations + 1)
    form = [q.name for q in study.request.design.questionnaire]
    head = [
        *PaymentRow.model_fields,
        *(f"n{i}_{column}" for i in series for column in WIDE),
        "quiz_passed",
        *(f"q_{name}" for name in form),
    ]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(head)
    for payment in payment_rows(study):
        who = study.participants[payment.participant]
        cells = [getattr(payment, name) for name in PaymentRow.model_fields]
        for i in series:
            row = negotiations.get((payment.participant, i))
            cells += [None if row is None else getattr(row, column) for column in WIDE]
        cells.append(None if study.request.design.quiz is None else who.passed_quiz)
        cells += [(who.answers or {}).get(name) for name in form]
        writer.writerow([_cell(value) for value in cells])
    return out.getvalue()


Export = Literal[
    "negotiations",
    "payments",
    "participants",
    "page_events",
    "events",
    "bonus",
    "quiz",
    "answers",
    "codebook",
]
EXPORTS: tuple[Export, ...] = get_args(Export)
"""The exports by name (``<name>.csv``)."""


def export_named(name: str) -> Export | None:
    """The export of that name, if there is one."""
    named: dict[str, Export] = {export: export for export in EXPORTS}
    return named.get(name)


def export_csv(study: Study, name: Export, stored: Iterable[StoredNegotiation] = ()) -> str:
    """One export's CSV text; ``events`` reads ``stored`` (the results store's rows of the
    study's run), the others the study alone."""
    match name:
        case "negotiations":
            return csv_text(NegotiationRow, negotiation_rows(study))
        case "payments":
            return csv_text(PaymentRow, payment_rows(study))
        case "page_events":
            return csv_text(PageEventRow, page_event_rows(study))
        case "events":
            return csv_text(EventRow, event_rows(study, stored))
        case "bonus":
            return bonus_text(study)
        case "participants":
            return participants_text(study)
        case "codebook":
            return csv_text(CodebookRow, codebook_rows())
        case "quiz":
            return csv_text(QuizRow, quiz_rows(study))
        case "answers":
            return csv_text(AnswerRow, answer_rows(study))
        case _:
            assert_never(name)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""A text cell starting with one of these is a formula to a spreadsheet (OWASP's CSV injection
rule): it is written after a ``'``, which a spreadsheet shows as text."""


def csv_text(model: type[Model], rows: Sequence[Model]) -> str:
    """RFC 4180 CSV (CRLF line ends) with a header of ``model``'s fields: amounts as written
    (``12.50``, ``-3.00``: numbers stay numbers), booleans ``true``/``false``, nothing for None,
    text ``shown`` (bidirectional and zero-width characters as their escapes), and text that a
    spreadsheet would run as a formula (``FORMULA_STARTS``: a participant's message, say) after
    a ``'``."""
    out = io.StringIO()
    writer = csv.writer(out)
    fields = list(model.model_fields)
    writer.writerow(fields)
    for row in rows:
        writer.writerow([_cell(getattr(row, name)) for name in fields])
    return out.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return f"{value:f}"
    if isinstance(value, str):
        text = shown(value)  # a bidirectional or zero-width character as its escape
        return "'" + text if text.startswith(FORMULA_STARTS) else text
    return str(value)


def _negotiations(study: Study, who: Participant) -> list[NegotiationRow]:
    rule = study.request.payoff
    during = page_negotiations(study, who)
    rows: list[NegotiationRow] = []
    for played in (*who.practice, *who.results):
        result, outcome = played.result, played.result.outcome
        pays = _pays(study, who, result.negotiation)
        if played.practice:  # never pays
            pays = None if rule is None else False
        at = (played.room, played.room_negotiation)
        events = [
            event
            for (_, event, room, _), number in zip(who.page, during, strict=True)
            if (room, number) == at
        ]
        rows.append(
            NegotiationRow(
                study=study.id,
                participant=who.label,
                negotiation=result.negotiation,
                treatment=played.treatment,
                practice=played.practice,
                role=played.role,
                counterpart=played.counterpart,
                room=played.room,
                room_negotiation=played.room_negotiation,
                key=played.key,
                scenario_id=result.scenario_id,
                item=result.item,
                currency=played.currency,
                list_price=result.list_price,
                buyer_value=played.buyer_value,
                seller_cost=played.seller_cost,
                status=outcome.status,
                end_reason=outcome.end_reason,
                end_time_s=round(outcome.time, 3),
                ended_at=None if played.ended_at is None else _utc(played.ended_at),
                price=outcome.price,
                surplus=outcome.surplus,
                pays=pays,
                payoff=None
                if rule is None or pays is not True
                else (rule.exchange_rate * outcome.surplus).quantize(CENT, ROUND_HALF_UP),
                page_opens=events.count("open"),
                page_hidden=events.count("hidden"),
                page_closes=events.count("close"),
                left=study.left_in(played.room, played.room_negotiation),
            )
        )
    return rows


def _pays(study: Study, who: Participant, negotiation: int) -> bool | None:
    """Whether one of a participant's negotiations pays: None without a payoff rule, and under
    ``one_random`` until their part is over (the draw is over the negotiations they played)."""
    rule = study.request.payoff
    if rule is None:
        return None
    if study.over(who):
        return negotiation in paid_negotiations(rule, study.secret, who.label, study.played(who))
    return True if rule.pays == "all" else None


def _seated(study: Study, key: str) -> dict[str, str]:
    """Who sat in each seat of a stored negotiation of the study, by role: a participant's
    label, or (opposite a participant) the house agent's spec."""
    for who in study.participants.values():
        for played in (*who.practice, *who.results):
            if played.key == key:
                other = "seller" if played.role == "buyer" else "buyer"
                return {played.role: who.label, other: played.counterpart}
    return {}


def _cells(event: Event) -> tuple[str | None, Decimal | None, str | None, EndReason | None]:
    """An event's offer id, price, text and end reason, where it has them."""
    match event:
        case OfferMade():
            return event.offer_id, event.price, event.message, None
        case OfferWithdrawn():
            return event.offer_id, None, None, None
        case OfferAccepted():
            return event.offer_id, event.price, None, None
        case OfferRejected():
            return event.offer_id, None, event.message, None
        case MessageSent():
            return None, None, event.text, None
        case WalkedAway():
            return None, None, event.message, None
        case NegotiationEnded():
            return None, event.price, None, event.reason
        case _:
            assert_never(event)

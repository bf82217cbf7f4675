"""What the web pages show: pure functions from a room's state to JSON view models.

Nothing here does I/O or waits: the routes (``dealroom.server.web.routes``) read a room, call
these, and send the model's JSON. Keeping the views pure lets the tests check what each page can
ever receive without a browser.

- ``spectator_view``: the room page. Before the end it carries the public scenario, the seats'
  names, the events and the live offers, never a private value; its events stop at what every
  client seat may already see (on the virtual clock a seat sees the other side's later moves
  only once its own clock gets there), so a spectator link never shows a seat its future. After
  the end, ``result`` adds both values, the gains and the surplus split.
- ``seat_page_view``: the seat page. Built from the seat's own ``Observation`` (what its MCP tools
  return) and a person's briefing and hint (``people_text``, in the page's buttons and fields):
  its own value, never the other side's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict

from dealroom.engine.schedule import live_offers
from dealroom.protocol import (
    Event,
    LiveOffer,
    Observation,
    Outcome,
    PublicScenario,
    Role,
    Scenario,
    SeriesResult,
    Status,
    people_log,
    people_text,
)
from dealroom.protocol.events import EndReason
from dealroom.protocol.study import (
    PlayedNegotiation,
    StudyCompletion,
    StudyRequest,
    presence_rule,
    waiting_rule,
)
from dealroom.protocol.study_design import QuizQuestionShown
from dealroom.protocol.study_quiz import shown_questions
from dealroom.protocol.text import shown_event
from dealroom.protocol.wire import ClockKind
from dealroom.server import texts
from dealroom.server.instructions import Block
from dealroom.server.room import Room
from dealroom.server.studies import Ticket
from dealroom.server.study import Study
from dealroom.server.study_people import Participant


class View(BaseModel):
    """A page's JSON: frozen, no extra fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class SpectatorResult(View):
    """The end of a negotiation as the room page shows it: both values and the surplus split."""

    status: Status
    end_reason: EndReason
    ended_by: Role | None
    price: Decimal | None
    buyer_value: Decimal
    seller_cost: Decimal
    gains: Decimal
    buyer_surplus: Decimal
    seller_surplus: Decimal
    buyer_share: float | None
    seller_share: float | None


class SpectatorView(View):
    """The room page: one negotiation of the room, as a spectator may see it now."""

    room: str
    negotiation: int
    """Number of the negotiation in the room's series, from 1."""
    finished: int
    """How many negotiations of the room have finished."""
    clock: ClockKind
    open: bool
    seats: dict[Role, str]
    """Who sits where: a house agent's spec, or a client's name (``person``, ``mcp``)."""
    scenario: PublicScenario
    now: float
    time_left: float
    events: tuple[Event, ...]
    live_offers: tuple[LiveOffer, ...]
    result: SpectatorResult | None
    """Only once the negotiation has ended."""


class SeatPageView(View):
    """The seat page: the seat's briefing, its view of the negotiation, its controls."""

    kind: Literal["seat"] = "seat"
    room: str
    role: Role
    negotiation: int
    """Number of this negotiation in the person's series, from 1 (a study participant's own
    series, across the rooms they sat in)."""
    negotiations: int | None
    """How many negotiations the person's series has, where it is known (a study's)."""
    clock: ClockKind
    observation: Observation
    """What the seat's MCP tools would show now (its own value; never the other side's)."""
    briefing: str
    hint: str
    log: tuple[str, ...]
    """What happened, a line per event in a person's words (``people_log.person_lines``: clock
    minutes and seconds, no offer ids); it only grows during a negotiation."""
    can_start_next: bool
    """The page may offer *Next negotiation* now."""
    series_over: bool
    """The last negotiation of the series (a participant's in a study) has ended."""
    finished: int
    results: tuple[SeriesResult, ...]
    """The person's finished negotiations (a study participant's: all of theirs, numbered in
    their own series), the last 20 at most."""
    total_surplus: Decimal
    consent: str | None
    """The experiment's consent line, if the room has one."""
    needs_consent: bool
    """True until the person has agreed to ``consent``: until then the page acts on nothing."""
    participant: str | None
    instructions: tuple[Block, ...]
    """A study's instructions (its researcher's Markdown, in blocks); none outside a study."""
    completion: StudyCompletion | None
    """A study participant's result, payment and completion code, once their part is over."""
    practice: bool = False
    """An unpaid practice negotiation (numbered in the participant's practice series)."""
    partner_left: str | None = None
    """A pair study: why this negotiation ended when the other participant left the study (the
    page shows it in place of the outcome, followed by the surplus)."""


class LobbyView(View):
    """A participant's page before they have a seat: the consent, then (pairs) waiting for a
    partner."""

    kind: Literal["lobby"] = "lobby"
    study: str
    participant: str
    consent: str | None
    needs_consent: bool
    waiting: bool
    """True while they wait in the queue for a partner (a pair study)."""
    instructions: tuple[Block, ...]
    message: str
    waited_s: int | None = None
    """Seconds they have waited for a partner, while they wait."""
    results: tuple[SeriesResult, ...] = ()
    """Their finished negotiations (numbered in their own series), the last 20 at most."""
    completion: StudyCompletion | None = None
    """Their result, payment and completion code, once their part is over (a pair study's
    participant may time out or leave while waiting)."""
    quiz: tuple[QuizQuestionShown, ...] = ()
    """The study's quiz, while they are to answer it (``POST /web/api/seat/quiz``)."""
    quiz_attempts_left: int | None = None


def spectator_view(room: Room) -> SpectatorView:
    """The room page's view of the room's current negotiation (see the module docstring)."""
    negotiation = room.current
    referee = negotiation.referee
    scenario = negotiation.scenario
    outcome = referee.outcome
    if outcome is not None:
        upto, now = referee.event_count, outcome.time
        offers: tuple[LiveOffer, ...] = ()
    else:
        sights = [negotiation.sight(role) for role in negotiation.remote_roles]
        upto = min(s.upto for s in sights)
        now = min(s.now for s in sights)
        offers = tuple(live_offers(referee.events_since(0)[:upto]))
    return SpectatorView(
        room=room.id,
        negotiation=negotiation.number,
        finished=room.series.finished,
        clock=room.settings.clock,
        open=outcome is None,
        seats=room.seats.names(),
        scenario=scenario.public(),
        now=now,
        time_left=round(max(scenario.deadline - now, 0.0), 3),
        events=tuple(map(shown_event, referee.events_since(0)[:upto])),
        live_offers=offers,
        result=None if outcome is None else spectator_result(scenario, outcome),
    )


def spectator_result(scenario: Scenario, outcome: Outcome) -> SpectatorResult:
    """Both sides' values and surplus: only ever built for a negotiation that has ended."""
    return SpectatorResult(
        status=outcome.status,
        end_reason=outcome.end_reason,
        ended_by=outcome.ended_by,
        price=outcome.price,
        buyer_value=scenario.buyer_value,
        seller_cost=scenario.seller_cost,
        gains=outcome.gains,
        buyer_surplus=outcome.buyer_surplus,
        seller_surplus=outcome.seller_surplus,
        buyer_share=outcome.buyer_share,
        seller_share=outcome.seller_share,
    )


def _payment(request: StudyRequest, *, practice: bool) -> str | None:
    """How the study pays, in the participant's briefing (its payoff rule in words); a
    practice negotiation says that it is not paid."""
    if request.payoff is None:
        return None
    if practice:
        return (
            "this is an unpaid practice negotiation: it does not count towards your payment. "
            + request.payoff.text(request.negotiations)
        )
    return request.payoff.text(request.negotiations)


def seat_page_view(
    room: Room, role: Role, observation: Observation, ticket: Ticket | None = None
) -> SeatPageView:
    """The seat page's view, from the seat's own observation of the current negotiation; a
    study participant's (``ticket``) with the study's instructions, *Next* and completion."""
    negotiation = room.current
    study, who = (None, None) if ticket is None else (ticket.study, ticket.who)
    number, length = negotiation.number, None
    slot = room.seats[role]
    results, finished, total = slot.results(), room.series.finished, slot.total_surplus
    if study is None or who is None:
        can_next = room.series.can_start_next()
        over = not negotiation.is_open and not can_next
        completion = None
    else:
        over = study.over(who)
        can_next = not negotiation.is_open and not over
        completion = study.completion(who)
        practice = room.id in study.phases.practice_rooms
        series = who.practice if practice else who.results
        mine = [played.result for played in series]  # their own side only
        number = _number_in_series(series, room)
        length = study.request.design.practice if practice else study.request.negotiations
        results, finished = tuple(mine[-20:]), len(mine)
        total = sum((r.outcome.surplus for r in mine), Decimal("0.00"))
    return SeatPageView(
        room=room.id,
        role=role,
        negotiation=number,
        negotiations=length,
        clock=room.settings.clock,
        observation=observation.model_copy(
            update={"events": tuple(map(shown_event, observation.events))}
        ),
        briefing=texts.people_briefing(
            observation,
            room.settings.rules,
            clock=room.settings.clock,
            surface="web",
            payment=None
            if study is None
            else _payment(study.request, practice=room.id in study.phases.practice_rooms),
            information="own_value"
            if study is None or who is None
            else study.request.treatment(who.treatment).information,
        ),
        hint=people_text.observation_hint(
            observation, clock=room.settings.clock, surface="web", can_start_next=can_next
        ),
        log=tuple(
            people_log.person_lines(
                observation.events, observation.scenario.currency, observation.role
            )
        ),
        can_start_next=can_next,
        series_over=over,
        finished=finished,
        results=results,
        total_surplus=total,
        consent=room.consent.text,
        needs_consent=room.consent.needed(role),
        participant=None if who is None else who.label,
        instructions=() if study is None else study.phases.instructions(who),
        completion=completion,
        practice=study is not None and room.id in study.phases.practice_rooms,
        partner_left=None if study is None else _partner_left(study, room, role),
    )


def _partner_left(study: Study, room: Room, role: Role) -> str | None:
    negotiation = room.current
    left = study.left_in(room.id, negotiation.number)
    if negotiation.is_open or left is None or study.sitting(room.id).get(role) == left:
        return None
    return (
        "The other participant left the study (their page was closed or stopped answering), "
        "so this negotiation ended without a deal"
    )


def _number_in_series(series: Sequence[PlayedNegotiation], room: Room) -> int:
    """The room's current negotiation's number in the participant's own series (``series``:
    their finished negotiations, paid or practice)."""
    here = (room.id, room.current.number)
    done = [(played.room, played.room_negotiation) for played in series]
    return done.index(here) + 1 if here in done else len(done) + 1


def lobby_view(study: Study, who: Participant) -> LobbyView:
    """A participant's page while they have no seat (see ``LobbyView``)."""
    needs = study.needs_consent(who)
    completion = study.completion(who)
    leaving = presence_rule(study.request)
    quiz = study.phases.needs_quiz(who) and not needs
    if needs:
        message = "Read the instructions and agree to take part to begin."
        message += "" if leaving is None else " " + leaving
    elif quiz:
        left = study.phases.attempts_left(who)
        message = (
            "Before you begin, answer these questions about the study (the instructions above "
            f"hold every answer). You have {left} attempt{'s' * (left != 1)} left."
        )
    elif completion is not None:
        message = completion.message + " Thank you for taking part."
    elif study.phases.practising(who):
        message = (
            "Your practice negotiation (unpaid) is being set up; it appears here by itself as "
            "soon as it is ready. Keep this page open."
        )
    elif study.request.matching == "solo":
        message = (
            "Your negotiation is being set up; it appears here by itself as soon as it is "
            "ready. Keep this page open."
        )
    else:
        limit = waiting_rule(study.request)
        message = " ".join(
            text
            for text in (
                "Waiting for another participant to join; your negotiation starts as soon as "
                "one does.",
                leaving,
                limit,
            )
            if text is not None
        )
    since = who.waiting_since
    return LobbyView(
        study=study.id,
        participant=who.label,
        consent=study.request.consent,
        needs_consent=needs,
        waiting=study.state(who) == "waiting",
        instructions=study.phases.instructions(who),
        message=message,
        waited_s=None if since is None else max(0, int(time.time() - since)),
        results=tuple(played.result for played in who.results[-20:]),
        completion=completion,
        quiz=shown_questions(study.phases.questions(who)) if quiz else (),
        quiz_attempts_left=study.phases.attempts_left(who) if quiz else None,
    )

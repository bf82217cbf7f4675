"""Studies over HTTP: the admin API that creates them, and the researcher's study page.

    POST /admin/studies                      StudyRequest -> StudyCreated (201)   admin token
    GET  /admin/studies/{study}              the study's view (as the page's; 410 admin token
                                             and why for a journal not restored)
    GET  /admin/studies/{study}/{name}.csv   an export (``study_export``)         admin token
    GET  /admin/studies/{study}/config.json  the study's request, its secret     admin token
                                             included (the scenarios, house agents and
                                             draws can be made again from it)
    POST /admin/studies/{study}/status       {"status": "open"|"paused"|"closed"} admin token
    GET  /web/study/{study}/join?label=...   the study's one URL (open studies): admits a
                                             participant by label, once per label, and
                                             sends them to /web/seat#token=... (303)
    GET  /web/study#token=STUDY              the study page
    GET  /web/api/study[/events]             the study's view (JSON, or live)     study token
    GET  /web/api/study/{name}.csv           an export                            study token
    POST /web/api/study/status               pause, resume or close (as the admin) study token

The study's token (``StudyCreated.token``) opens its page and its exports, and pauses, resumes
or closes its study (``study_control``): nothing else, and nothing a participant's token opens.
The exports hold both sides' values of every finished negotiation, as the results store does;
a participant's page never shows them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Literal, get_args

import anyio
import structlog
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from dealroom.protocol import Role, SessionErrorCode
from dealroom.protocol.study import (
    PageEvent,
    ParticipantState,
    StudyRequest,
    StudyStatus,
    StudyStatusChange,
)
from dealroom.protocol.study_config import Setting, configuration
from dealroom.protocol.study_join import JoinRefusal, JoinRefused, join_values
from dealroom.protocol.wire import ClockKind
from dealroom.server.room_error import RoomError
from dealroom.server.rooms import RoomRegistry
from dealroom.server.study import Study
from dealroom.server.study_export import EXPORTS, export_csv, export_named
from dealroom.server.study_people import Participant
from dealroom.server.web.routes import NO_STORE, WebApi, bearer, error, first_error
from dealroom.server.web.views import View
from dealroom.store.results import ResultsStore, StoreError

log = structlog.stdlib.get_logger(__name__)

MAX_STUDY_REQUEST_BYTES = 200_000
"""Largest study request accepted (2,000 labels and 20,000 characters of instructions fit)."""

STATES: tuple[ParticipantState, ...] = get_args(ParticipantState)


class ParticipantLine(View):
    """One participant on the study page."""

    label: str
    """Their name in the study: an invited participant's label, or ``J<n>`` for one who joined
    through the study's URL."""
    join_label: str | None
    """The label they joined under (the researcher's page only: labels are private)."""
    state: ParticipantState
    treatment: str | None
    quiz_attempts: int
    practice: int
    """Practice negotiations played (unpaid)."""
    played: int
    room: str | None
    """The room they play in now (or last played in)."""
    watch: str | None
    """That room's page for spectators (``/web/room#token=...``): its offers and messages live,
    both values once a negotiation has ended."""
    role: Role | None
    waiting_s: int | None
    """Seconds they have waited for a partner (pairs), while they wait."""
    total_surplus: Decimal
    currency: str
    payment: Decimal | None
    """What to pay them by the study's payoff rule (fee and earnings of the negotiations they
    finished), once they took part: final once their part is over (done, timed out, dropped)."""
    payment_currency: str | None
    last_event: PageEvent | None
    last_event_s: int | None
    """Seconds since their page's last event."""


class StudyView(View):
    """The study page: every participant's state, live."""

    kind: Literal["study"] = "study"
    study: str
    matching: str
    house: str | None
    negotiations: int
    clock: ClockKind
    created: str
    """When the study was created (UTC, ISO 8601)."""
    configuration: tuple[Setting, ...]
    """The study's configuration in words (``study_config``: payment rule, tier, deadline,
    clock, limits, treatments, ...; whether it has a completion code, never the code or its
    secret)."""
    states: dict[ParticipantState, int]
    treatments: dict[str, int]
    """How many participants each treatment has been assigned (block randomisation)."""
    quiz: bool
    practice: int
    participants: tuple[ParticipantLine, ...]
    exports: tuple[str, ...]
    """The CSV exports, by name (``/web/api/study/<name>.csv``)."""
    join: str | None
    """The study's one URL (path and query), if it is open for joining."""
    join_places: int
    """Places left to join through it."""
    status: StudyStatus
    """Open, paused or closed, by its researcher (``study_control``)."""
    status_since: str | None
    """Since when (UTC, ISO 8601); None: open since its creation."""


def study_view(study: Study, now: float) -> StudyView:
    """The study page's view at ``now`` (Unix time)."""
    lines = tuple(_line(study, who, now) for who in study.participants.values())
    return StudyView(
        study=study.id,
        matching=study.request.matching,
        house=study.request.house,
        negotiations=study.request.negotiations,
        clock=study.request.clock,
        created=_utc(study.created),
        configuration=configuration(study.request),
        states={state: sum(line.state == state for line in lines) for state in STATES},
        treatments={
            t.name: sum(line.treatment == t.name for line in lines)
            for t in study.request.design.treatments
        },
        quiz=study.request.design.quiz is not None,
        practice=study.request.design.practice,
        participants=lines,
        exports=tuple(EXPORTS),
        join=None if study.request.join is None else study.request.join.url(study.id),
        join_places=0
        if study.request.join is None
        else study.request.join.capacity - len(study.joined),
        status=study.control.status,
        status_since=None if (since := study.control.since) is None else _utc(since),
    )


def _utc(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).isoformat(timespec="seconds")


def _line(study: Study, who: Participant, now: float) -> ParticipantLine:
    room, role = who.seats[-1] if who.seats else (None, None)
    payoff = study.payment(who)
    last = who.page[-1] if who.page else None
    spectator = None if room is None else study.spectators.get(room)
    return ParticipantLine(
        label=who.label,
        join_label=None if who.joined is None else who.joined.label,
        state=study.state(who),
        treatment=who.treatment,
        quiz_attempts=len(who.quiz),
        practice=len(who.practice),
        played=study.played(who),
        room=room,
        watch=None if spectator is None else f"/web/room#token={spectator}",
        role=role,
        waiting_s=None if who.waiting_since is None else int(now - who.waiting_since),
        total_surplus=who.total_surplus,
        currency=who.currency,
        payment=None if payoff is None else payoff.total,
        payment_currency=None if payoff is None else payoff.currency,
        last_event=None if last is None else last[1],
        last_event_s=None if last is None else int(now - last[0]),
    )


class StudyApi:
    """The study routes (see the module docstring), on one registry."""

    def __init__(
        self, registry: RoomRegistry, admin: Callable[[Request], Response | None], web: WebApi
    ) -> None:
        self.registry = registry
        self.admin = admin
        self.web = web
        self._exporting = anyio.CapacityLimiter(1)
        self._events: dict[str, tuple[tuple[int, int], str]] = {}
        """Each study's last ``events`` export, by what it was built from (``_events_csv``)."""

    # -- admin -----------------------------------------------------------------------------------

    async def create(self, request: Request) -> Response:
        """POST /admin/studies: open a study; its page token and participants' tokens, once."""
        if (refused := self.admin(request)) is not None:
            return refused
        body = await request.body()
        if len(body) > MAX_STUDY_REQUEST_BYTES:
            return error(413, f"a study request is at most {MAX_STUDY_REQUEST_BYTES} bytes")
        try:
            study_request = StudyRequest.model_validate_json(body or b"{}")
            created = self.registry.studies.create(study_request)
        except ValidationError as exc:
            return error(400, first_error(exc))
        except ValueError as exc:  # a house agent no one can play
            return error(400, str(exc))
        except RoomError as exc:
            status = 409 if exc.code == SessionErrorCode.STUDY_EXISTS else 503
            return error(status, str(exc))
        return JSONResponse(created.model_dump(mode="json"), status_code=201, headers=NO_STORE)

    def _admin_study(self, request: Request) -> Study | Response:
        if (refused := self.admin(request)) is not None:
            return refused
        name = str(request.path_params["study"])
        study = self.registry.studies.studies.get(name)
        if study is None and (why := self.registry.studies.unrestored.get(name)) is not None:
            return error(410, f"study not restored at start: {why}")  # its journal is there
        return error(404, "no such study") if study is None else study

    async def show(self, request: Request) -> Response:
        """GET /admin/studies/{study}."""
        study = self._admin_study(request)
        if isinstance(study, Response):
            return study
        return _view(study)

    async def config(self, request: Request) -> Response:
        """GET /admin/studies/{study}/config.json: the study as created, secret included (the
        admin token's only: never the study page's)."""
        study = self._admin_study(request)
        if isinstance(study, Response):
            return study
        body = study.request.model_dump_json(indent=2)
        log.info("study configuration read", study=study.id)
        return Response(body, media_type="application/json", headers=NO_STORE)

    async def admin_status(self, request: Request) -> Response:
        """POST /admin/studies/{study}/status."""
        study = self._admin_study(request)
        if isinstance(study, Response):
            return study
        return await _set_status(study, request)

    async def admin_export(self, request: Request) -> Response:
        """GET /admin/studies/{study}/{name}.csv."""
        study = self._admin_study(request)
        if isinstance(study, Response):
            return study
        return await self._csv(study, str(request.path_params["name"]))

    async def _csv(self, study: Study, name: str) -> Response:
        """One export (``study_export``), built in a worker thread, one export at a time: 32
        requests of ``events.csv`` at once, each reading the whole store, slowed another room's
        calls from 13 ms to 720 ms (median), the threads' parsing holding the interpreter.
        ``events`` is built once per version of what it reads (``_events_csv``)."""
        found = export_named(name)
        if found is None:
            return error(404, f"no export {name[:40]!r}; exports: {', '.join(EXPORTS)}")
        export = found
        writer = self.registry.writer
        if export == "events" and writer is None:
            return error(404, "this server keeps no results store: its events are nowhere")

        def work() -> str:
            if export != "events" or writer is None:
                return export_csv(study, export)
            return self._events_csv(study, writer.store.path)

        try:
            text = await anyio.to_thread.run_sync(work, limiter=self._exporting)
        except StoreError as exc:
            return error(503, str(exc))
        disposition = f'attachment; filename="{study.id}-{name}.csv"'
        headers = {**NO_STORE, "Content-Disposition": disposition}
        log.info("study exported", study=study.id, export=name)
        return Response(text, media_type="text/csv; charset=utf-8", headers=headers)

    def _events_csv(self, study: Study, store: Path) -> str:
        """The ``events`` export (in the export thread): built again only when the store holds
        more of the study's negotiations, or the study has seated more (a stored row never
        changes its events, and who sat in it is known before it is stored)."""
        with ResultsStore(store, create=False) as results:
            version = (
                len(results.keys(study.id)),
                sum(len(w.seats) for w in study.participants.values()),
            )
            cached = self._events.get(study.id)
            if cached is not None and cached[0] == version:
                return cached[1]
            text = export_csv(study, "events", results.iter(study.id))
        self._events[study.id] = (version, text)
        return text

    # -- the study's one URL --------------------------------------------------------------------

    async def join(self, request: Request) -> Response:
        """GET /web/study/{study}/join: admit the visit's label (``protocol.study_join``); a
        refusal is one line with its code, and admits nobody."""
        name = str(request.path_params["study"])
        studies = self.registry.studies
        study = studies.studies.get(name)
        if study is None:
            if name in studies.unrestored:
                return _refused(410, JoinRefusal.NOT_RESTORED, "this study cannot be joined now")
            return _refused(404, JoinRefusal.NO_STUDY, "there is no such study on this server")
        join = study.request.join
        if join is None:
            return _refused(
                403, JoinRefusal.NOT_OPEN, "this study admits invited participants only"
            )
        query: dict[str, list[str]] = {}
        for key, value in request.query_params.multi_items():
            query.setdefault(key, []).append(value)
        visit = join_values(join, query)
        if isinstance(visit, JoinRefused):
            return _refused(400, visit.code, visit.message)
        if visit.label not in study.joined and study.control.status == "paused":
            return _refused(503, JoinRefusal.PAUSED, "this study is paused: please try again later")
        if visit.label not in study.joined and study.control.status == "closed":
            return _refused(
                410,
                JoinRefusal.CLOSED,
                "this study is closed, and you have not been enrolled; "
                "please return to where you came from",
            )
        token = studies.admit(study, visit.label, visit.ids)
        if token is None:
            return _refused(
                410,
                JoinRefusal.FULL,
                "this study is full: every place is taken, and you have not been enrolled; "
                "please return to where you came from",
            )
        headers = {
            **NO_STORE,
            "Location": f"/web/seat#token={token}",
            "Referrer-Policy": "no-referrer",
        }
        return Response(status_code=303, headers=headers)

    # -- the study page (its own token) ---------------------------------------------------------

    def _study(self, request: Request) -> Study | Response:
        token = bearer(request)
        ticket = None if token is None else self.registry.studies.lookup(token)
        if ticket is None or ticket.who is not None:
            return error(401, "missing or wrong study token")
        return ticket.study

    async def view(self, request: Request) -> Response:
        """GET /web/api/study."""
        study = self._study(request)
        if isinstance(study, Response):
            return study
        return _view(study)

    async def events(self, request: Request) -> Response:
        """GET /web/api/study/events: the view, live (looked at again every second)."""
        study = self._study(request)
        if isinstance(study, Response):
            return study

        async def read() -> str:
            return study_view(study, round(time.time())).model_dump_json()

        return self.web.streaming(read, anyio.sleep, (f"study:{study.id}", "researcher"))

    async def status(self, request: Request) -> Response:
        """POST /web/api/study/status: the researcher pauses, resumes or closes the study."""
        study = self._study(request)
        if isinstance(study, Response):
            return study
        return await _set_status(study, request)

    async def export(self, request: Request) -> Response:
        """GET /web/api/study/{name}.csv."""
        study = self._study(request)
        if isinstance(study, Response):
            return study
        return await self._csv(study, str(request.path_params["name"]))


def _refused(status: int, code: JoinRefusal, message: str) -> Response:
    """A visit to a study's URL that admits nobody: one line, its code first (a person reads
    it in their browser)."""
    return PlainTextResponse(f"{code}: {message}\n", status_code=status, headers=NO_STORE)


async def _set_status(study: Study, request: Request) -> Response:
    """A status change (``study_control``): the study's view after it, or a one-line 400
    (a bad body, or a closed study reopened) that changes nothing."""
    body = await request.body()
    if len(body) > 256:
        return error(413, "a status change is at most 256 bytes")
    try:
        change = StudyStatusChange.model_validate_json(body or b"{}")
    except ValidationError as exc:
        return error(400, first_error(exc))
    if (refused := study.control.set(change.status)) is not None:
        return error(400, f"status: {refused}")
    log.info("study status", study=study.id, status=change.status)
    return _view(study)


def _view(study: Study) -> Response:
    body = study_view(study, time.time()).model_dump_json()
    return Response(body, media_type="application/json", headers=NO_STORE)

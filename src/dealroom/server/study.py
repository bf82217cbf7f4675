"""One study with people: its participants, where each sits, their results and payments.

A participant's link carries their own token (not a room's seat token): the study maps it to
the seat they play now. A study open for joining also admits participants by label through its
one URL (``admit``; ``dealroom.protocol.study_join``).

A **solo** participant gets a room of their own (a series of ``negotiations`` against the house
agent) when they arrive, that is once they open their page and, if the study asks for consent,
agree to it. In a **pair** study each negotiation is a room with two people: an arriving
participant waits in the study's queue and is matched with whoever waited longest and is present
(``study_people``); after each negotiation *Next* puts them back in the queue (a new partner
each time, the buyer being whoever of the two has been the buyer less often). The reaper's
``tick`` lets go of a pair participant who has gone (``dropped``: an open negotiation of theirs
ends, the server walking away for them) or waited past the study's limit (``timed_out``); either
way their part is over and they are paid for what they finished.
A room that cannot be opened (its journal: a full disk) is tried again, never an error.

Every input is journaled (``study-<id>.jsonl`` beside the rooms' journals: joins, consent,
matches, results, page events, endings), so that a restarted server restores the study; each room
restores itself from its own journal. Results come from each room's ``StudyHook``
(``recorded``), keyed by room and negotiation, so a room replayed after a restart adds nothing
twice. A failed journal write loses nothing: the journal is written whole again from
``study_journal.journal_entries`` (``WholeJournal``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any, get_args

import structlog

from dealroom.protocol import (
    ROLES,
    Role,
    RoomCreated,
    RoomRequest,
    SeriesResult,
    seat_outcome,
)
from dealroom.protocol.secret import Secret
from dealroom.protocol.study import (
    PageEvent,
    ParticipantState,
    Payoff,
    PlayedNegotiation,
    StudyCompletion,
    StudyRequest,
    ending_text,
    paid_negotiations,
    payoff,
)
from dealroom.server.journal import Op, RoomJournal
from dealroom.server.negotiation import Negotiation
from dealroom.server.room import Room
from dealroom.server.room_error import RoomError
from dealroom.server.study_control import StudyControl
from dealroom.server.study_people import (
    Ended,
    Joined,
    Participant,
    check_presence,
    close_out,
    first_pair,
)
from dealroom.server.study_phases import Phases, room_request, solo_role

log = structlog.stdlib.get_logger(__name__)

PAGE_EVENTS: tuple[PageEvent, ...] = get_args(PageEvent)
MAX_PAGE_EVENTS = 1000
"""Page events kept (and journaled) per participant: a page cannot make the server write more."""


CreateRoom = Callable[[RoomRequest], RoomCreated]
LookupRoom = Callable[[str], Room | None]


class Study:
    """A study's state and rules (see the module docstring); no I/O but its journal."""

    def __init__(
        self,
        request: StudyRequest,
        *,
        create_room: CreateRoom,
        room: LookupRoom,
        journal: RoomJournal | None = None,
        created: float | None = None,
    ) -> None:
        assert request.secret is not None, "a study's secret is drawn before it is built"
        self.request = request
        self.id = request.id
        self.secret = Secret.from_hex(request.secret)
        self.created = time.time() if created is None else created
        self.participants = {
            label: Participant(label, i) for i, label in enumerate(request.participants)
        }
        self.journal = journal
        self._create_room = create_room
        self._room = room
        self._matches = 0
        self.rooms: dict[str, dict[Role, str]] = {}
        """Each room of the study: who sits where (in the order they were seated)."""
        self._stalled = False
        """True while a room of the study could not be opened (logged once per spell)."""
        self.joined: dict[str, str] = {}
        """Who joined through the study's URL: their name, by the label they came with."""
        self.spectators: dict[str, str] = {}
        """Each room's spectator token, for the study page's watch links (kept in clear in the
        study's private journal, as its secret is)."""
        self.phases = Phases(
            request, self.secret, create_room=create_room, room=room, log=self._log, end=self.end
        )
        """Treatments, quiz, practice and questionnaire (``study_phases``)."""
        self.control = StudyControl(self._log)
        """Open, paused or closed, by its researcher (``study_control``)."""

    # -- what a participant does ---------------------------------------------------------------

    def admit(self, label: str, ids: dict[str, str], token: str) -> Participant | None:
        """A visit to the study's URL with ``label``: the participant who came with it before,
        else a new one holding ``token`` (journaled); None when every place is taken. Their
        name in the study is ``J<n>``, never the label (private: names reach logs, rooms and
        other participants' records)."""
        join = self.request.join
        assert join is not None, "only a study open for joining admits by label"
        if (name := self.joined.get(label)) is not None:
            return self.participants[name]
        if len(self.joined) >= join.capacity or not self.control.admits:
            return None
        n = len(self.joined) + 1
        while (name := f"J{n:04d}") in self.participants:  # an invited label of that form
            n += 1
        joined = Joined(label, dict(ids), round(time.time(), 3), token)
        self.join(name, joined)
        self._log(["joined", name, label, joined.ids, joined.at, token])
        log.info("participant joined", study=self.id, participant=name)
        return self.participants[name]

    def join(self, name: str, joined: Joined) -> None:
        """Add a participant who joined through the study's URL (new, or replayed)."""
        self.participants[name] = Participant(name, len(self.participants), joined=joined)
        self.joined[joined.label] = name

    def needs_consent(self, who: Participant) -> bool:
        return self.request.consent is not None and who.agreed is None

    def agree(self, who: Participant) -> None:
        """They agreed to the consent line (the first time counts); then they arrive."""
        if who.agreed is None:
            who.agreed = datetime.now(UTC).isoformat(timespec="seconds")
            self._log(["consent", who.label, who.agreed])
        self.arrive(who)

    def arrive(self, who: Participant) -> None:
        """They opened their page (past the consent, if any): a solo participant gets their
        room, a pair participant with negotiations to play joins the queue. Every request of
        their page but its page events comes through here: they are heard, their page open."""
        who.heard = time.time()
        who.closed_at = None
        if not who.opened:
            who.opened = True
            self._log(["opened", who.label])
        if self.needs_consent(who) or self.over(who):
            return
        self.phases.assign(who)
        if self.phases.needs_quiz(who):
            return
        if self.phases.practising(who):
            if who.practice_seat is None:
                self._opened(partial(self._practice_room, who))
            return
        if self.request.matching == "solo":
            if not who.seats:
                self._opened(partial(self._solo_room, who))
        elif self.current(who) is None and who.waiting_since is None:
            self._enqueue(who)  # once: every page view comes through here
        else:
            self._match()

    def next(self, who: Participant) -> bool:
        """*Next negotiation* in a pair study: back in the queue. False when they cannot
        (their negotiation is still open, or they are done). After their last practice
        negotiation: on to the study."""
        if self.phases.practising(who):
            if not self.phases.finish_practice(who):
                return False
            self.arrive(who)
            return True
        current = self.current(who)
        if current is not None and current[0].current.is_open:
            return False
        if self.over(who) or who.waiting_since is not None:
            return False
        self._enqueue(who)
        return True

    def page(self, who: Participant, event: PageEvent) -> None:
        """One event of their page (opened, hidden, shown again, closed), journaled; a close
        makes them absent until their page opens again (``study_people``)."""
        when = round(time.time(), 3)
        match event:
            case "close":
                who.closed_at = when
            case "hidden":  # a closing tab says so too, its beacons in any order
                who.heard = when
            case "open" | "visible":
                who.heard, who.closed_at = when, None
        if len(who.page) >= MAX_PAGE_EVENTS:
            return
        where = who.seats[-1][0] if who.seats else None
        room = None if where is None else self._room(where)
        number = None if room is None else room.current.number
        who.page.append((when, event, where, number))
        self._log(["page", who.label, event, when, where, number])

    # -- what a participant sees ---------------------------------------------------------------

    def current(self, who: Participant) -> tuple[Room, Role] | None:
        """The room and seat they play now: solo, their room; pairs, an open negotiation's
        room (or the one that just ended, until they press *Next*); practising, their practice
        room."""
        if (practice := self.phases.practice_current(who)) is not None:
            return practice
        if not who.seats:
            return None
        room_id, role = who.seats[-1]
        room = self._room(room_id)
        if room is None:
            return None
        if self.request.matching == "pairs" and who.waiting_since is not None:
            return None
        return room, role

    def played(self, who: Participant) -> int:
        return len(who.results)

    def done(self, who: Participant) -> bool:
        return self.played(who) >= self.request.negotiations

    def over(self, who: Participant) -> bool:
        """Their part has ended: every negotiation played, or (pairs) timed out or left."""
        return who.ended is not None or self.done(who)

    def took_part(self, who: Participant) -> bool:
        """They consented (or opened their link, where the study asks for no consent)."""
        return who.opened and not self.needs_consent(who)

    def state(self, who: Participant) -> ParticipantState:
        if who.ended is not None:
            return who.ended.state
        if self.done(who):
            return "done"
        if who.waiting_since is not None:
            return "waiting"
        if who.seats or who.practice_seat is not None:
            return "playing"
        return "consenting" if who.opened else "invited"

    def payment(self, who: Participant) -> Payoff | None:
        """What they are paid by the study's rule for the negotiations they finished (final
        once their part is ``over``); None without a rule, or if they never took part."""
        rule = self.request.payoff
        if rule is None or not self.took_part(who):
            return None
        results = [played.result for played in who.results]
        paid = paid_negotiations(rule, self.secret, who.label, len(results))
        return payoff(rule, results, paid, self.request.negotiations)

    def completion(self, who: Participant) -> StudyCompletion | None:
        """Their final result and payment, once their part is over."""
        if not self.over(who):
            return None
        ended = who.ended
        pending = self.phases.questionnaire_pending(who)
        return StudyCompletion(
            ended="done" if ended is None else ended.state,
            message=ending_text(
                "done" if ended is None else ended.state,
                self.request,
                negotiating=ended is not None and ended.room is not None,
            ),
            negotiations=len(who.results),
            total_surplus=who.total_surplus,
            currency=who.currency,
            payoff=self.payment(who),
            code=None if pending else self.request.completion_code,
            url=None if pending else who.completion_url(self.request.completion_url),
            questions=self.request.design.questionnaire if pending else (),
        )

    def left_in(self, room_id: str, number: int) -> str | None:
        """Who of the study left during a negotiation of one of its rooms, if one did."""
        for label in self.rooms.get(room_id, {}).values():
            ended = self.participants[label].ended
            if ended is not None and (ended.room, ended.number) == (room_id, number):
                return label
        return None

    def sitting(self, room_id: str) -> dict[Role, str]:
        """Who of the study sits where in one of its rooms."""
        return dict(self.rooms.get(room_id, {}))

    # -- the rooms' side -------------------------------------------------------------------------

    def recorded(self, room: Room, negotiation: Negotiation) -> None:
        """A negotiation of one of the study's rooms ended: each participant's result (once)."""
        outcome = negotiation.referee.outcome
        assert outcome is not None
        scenario = negotiation.scenario
        practice = self.phases.practice_rooms.get(room.id)
        sitting = self.sitting(room.id)
        if practice is not None:
            seat = self.participants[practice].practice_seat
            sitting: dict[Role, str] = {} if seat is None else {seat[1]: practice}
        for role, label in sitting.items():
            who = self.participants[label]
            series = who.practice if practice is not None else who.results
            if any(p.room == room.id and p.room_negotiation == negotiation.number for p in series):
                continue
            other = ROLES[1 - ROLES.index(role)]
            played = PlayedNegotiation(
                room=room.id,
                room_negotiation=negotiation.number,
                key=room.records.key(negotiation),
                role=role,
                counterpart=sitting.get(other) or room.seats.name(other),
                buyer_value=scenario.buyer_value,
                seller_cost=scenario.seller_cost,
                currency=scenario.currency,
                result=SeriesResult.of(
                    len(series) + 1, scenario, role, seat_outcome(outcome, role)
                ),
                treatment=who.treatment,
                practice=practice is not None,
                started_at=negotiation.started_at,
                ended_at=round(time.time(), 3),
            )
            if practice is not None:
                self.phases.record_practice(who, played)
                continue
            who.results.append(played)
            self._log(["result", label, played.model_dump(mode="json")])

    # -- internals ------------------------------------------------------------------------------

    def _practice_room(self, who: Participant) -> None:
        self.phases.open_practice(who, solo_role(self.request, who))

    def _solo_room(self, who: Participant) -> None:
        self._house_room(who, solo_role(self.request, who), self.request.negotiations, index=0)

    def play_house(self, who: Participant) -> None:
        """Pairs, ``after_wait`` ``house``: who waited past the limit plays the house agent
        next, in the seat they have had less often (match k plays scenario k, as pairs do)."""
        role: Role = "buyer" if 2 * who.buyer_times <= len(who.seats) else "seller"
        self._opened(partial(self._house_room, who, role, 1, index=self._matches))

    def _house_room(self, who: Participant, role: Role, negotiations: int, *, index: int) -> None:
        seats: dict[Role, str] = {role: who.label}
        treatment = self.request.treatment(who.treatment)
        house = treatment.house
        assert house is not None, "a study that seats a house agent has one (checked)"
        request = room_request(
            self.request, index=index, negotiations=negotiations, seats=seats,
            treatment=treatment, house=house,
        )  # fmt: skip
        self._seated(self._create_room(request), seats)

    async def tick(self) -> None:
        """The reaper's pass (every second). Pairs: who has gone leaves the study (a
        negotiation they are in ends: the server walks away for them), who waited past the
        limit times out, and whoever waits and is present is matched. Solo: the rooms that
        could not be opened before."""
        pairs = self.request.matching == "pairs"
        if self.control.status == "closed":
            close_out(self, time.time())
        if pairs:
            now = time.time()
            for who in self.participants.values():
                if self.took_part(who) and not self.over(who):
                    await check_presence(self, who, now)
        for who in self.participants.values():
            if not self.took_part(who) or self.over(who) or self.phases.needs_quiz(who):
                continue
            if self.phases.practising(who):
                room = None if who.practice_seat is not None else partial(self._practice_room, who)
            else:
                room = None if pairs or who.seats else partial(self._solo_room, who)
            if room is not None and not self._opened(room):
                return
        if pairs:
            self._match()

    def _opened(self, open_room: Callable[[], None]) -> bool:
        """Open a room for participants; False, logged in one line, when the server cannot
        (its journal cannot be created: a full disk). Nothing changed then: their next page
        view (solo) or the reaper's next tick (pairs) tries again."""
        try:
            open_room()
        except RoomError as exc:
            if not self._stalled:  # once per spell, not once a second
                log.warning(
                    "a study's room cannot be opened now; tried again every second",
                    study=self.id,
                    code=str(exc.code),
                )
            self._stalled = True
            return False
        if self._stalled:
            log.info("a study's rooms open again", study=self.id)
        self._stalled = False
        return True

    def end(self, who: Participant, ended: Ended) -> None:
        """Their part ends early (journaled); they wait no more."""
        who.ended, who.waiting_since = ended, None
        self._log(["ended", who.label, ended.state, round(ended.at, 3), ended.room, ended.number])
        log.info("participant out", study=self.id, participant=who.label, state=ended.state)

    def _enqueue(self, who: Participant) -> None:
        who.waiting_since = round(time.time(), 3)
        self._log(["queue", who.label, who.waiting_since])
        self._match()

    def _match(self) -> None:
        """Match the two who have waited longest, while two wait and their room opens."""
        while True:
            now = time.time()
            waiting = sorted(
                (
                    p
                    for p in self.participants.values()
                    if p.waiting_since is not None and p.present(now)
                ),
                key=lambda p: (p.waiting_since or 0.0, p.index),
            )
            pair = first_pair(waiting)  # within a treatment
            if pair is None:
                return
            if not self._opened(partial(self._pair, *pair)):
                return

    def _pair(self, first: Participant, second: Participant) -> None:
        buyer, seller = (
            (second, first) if second.buyer_times < first.buyer_times else (first, second)
        )
        seats: dict[Role, str] = {"buyer": buyer.label, "seller": seller.label}
        created = self._create_room(
            room_request(
                self.request,
                index=self._matches,
                negotiations=1,
                seats=seats,
                treatment=self.request.treatment(first.treatment),
            )
        )
        self._seated(created, seats)
        log.info("participants matched", study=self.id, room=created.room, **seats)

    def _seated(self, created: RoomCreated, seats: dict[Role, str]) -> None:
        """Seat participants in a new room, journaled; their consent carries over to it."""
        room_id = created.room
        self.seat_in(room_id, seats)
        if created.spectator is not None:
            self.spectators[room_id] = created.spectator
        self._log(["seat", room_id, seats, created.spectator])
        room = self._room(room_id)
        for role, label in seats.items():
            agreed = self.participants[label].agreed
            if room is not None and agreed is not None:
                room.consent.agree(role, when=agreed)

    def seat_in(self, room_id: str, seats: dict[Role, str]) -> None:
        """Seat participants in a room (new, or replayed from the journal)."""
        self.rooms[room_id] = seats
        self._matches += 1
        for role, label in seats.items():
            who = self.participants[label]
            who.seats.append((room_id, role))
            who.waiting_since = None

    def _log(self, op: Op) -> None:
        if self.journal is not None:
            self.journal.append(0, op)

    def header(self) -> dict[str, Any]:
        """The study's journal header (its request, secret included: the journal is private)."""
        return {"study": self.id, "request": self.request.model_dump(mode="json")}

"""A study's participants (``dealroom.server.study``): what the study knows of each, their
presence included.

A pair participant is *present* while their page is open and heard from. Every request their
token makes counts as heard (page views, calls, page events, and each connection of the page's
live view, which the page holds open and reconnects every 10 seconds: its heartbeat). A page
can close without saying so (a ``close`` beacon is not always delivered): the server also sees
its live view's connection go. Either ends presence until the page opens again; a live view
that ran its time out and reconnects keeps it. Only present participants are matched. One whose
page stays closed for ``CLOSE_GRACE_S`` (a reload reopens it within that) or goes silent for the
study's ``dropout_s`` has *gone*: they have left the study (``Study.tick``). Presence is not
journaled: a restored server hears everyone afresh from its start.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Literal

import anyio
import structlog

from dealroom.protocol import Role, WalkAway
from dealroom.protocol.study import CLOSE_GRACE_S, PageEvent, PlayedNegotiation
from dealroom.protocol.study_join import completion_link

if TYPE_CHECKING:
    from dealroom.server.study import Study

log = structlog.stdlib.get_logger(__name__)

PRESENT_S = 15.0
"""Seconds since a participant's page was last heard from within which they can be matched
(their live view reconnects every 10 seconds)."""
REOPENED_S = 3.0
"""Seconds after a ``close`` past which a live view still reading means the page is open again
(a reload whose old page's ``close`` arrived after the new page's first requests)."""


@dataclass(frozen=True, slots=True)
class Ended:
    """How a participant's part ended early (pairs)."""

    state: Literal["timed_out", "dropped", "quiz_failed", "closed"]
    at: float
    """When (Unix time)."""
    room: str | None = None
    number: int | None = None
    """The room and negotiation they left while it was open (``dropped`` mid-way), if any."""


@dataclass(frozen=True, slots=True)
class Joined:
    """How a participant came in through the study's URL (``protocol.study_join``)."""

    label: str
    """The label their visit carried: private (journal and exports only, never logged)."""
    ids: dict[str, str]
    """The recorded ids their visit carried, by parameter name."""
    at: float
    """When (Unix time)."""
    token: str
    """Their seat-page token, kept (in the study's private journal too) so that a visit with
    the same label again goes back to the same participant."""


@dataclass(frozen=True, slots=True)
class QuizAttempt:
    """One attempt at a study's quiz."""

    at: float
    """When (Unix time)."""
    answers: tuple[int, ...]
    passed: bool


@dataclass(slots=True)
class Participant:
    """One participant of a study."""

    label: str
    index: int
    """Their place in the study's list of labels, from 0."""
    opened: bool = False
    agreed: str | None = None
    """When (UTC, ISO 8601) they agreed to the study's consent line."""
    seats: list[tuple[str, Role]] = field(default_factory=list[tuple[str, Role]])
    """The rooms they sat in, in order, and their seat: the last is where they play now."""
    results: list[PlayedNegotiation] = field(default_factory=list[PlayedNegotiation])
    """Their finished negotiations, in order."""
    waiting_since: float | None = None
    """Since when (Unix time) they wait for a partner; None when not waiting."""
    page: list[tuple[float, PageEvent, str | None, int | None]] = field(
        default_factory=list[tuple[float, PageEvent, str | None, int | None]]
    )
    """Their page's events: (Unix time, event, room, negotiation number)."""
    ended: Ended | None = None
    """How their part ended early, if it did (pairs: waited past the limit, or left)."""
    heard: float = field(default_factory=time.time)
    """When (Unix time) their page was last heard from (not journaled: a restored study hears
    everyone afresh)."""
    closed_at: float | None = None
    """When their page reported ``close``, while it has not opened again."""
    joined: Joined | None = None
    """How they joined through the study's URL; None for an invited participant."""
    treatment: str | None = None
    """Their treatment, assigned when they took part (a study with treatments)."""
    quiz: list[QuizAttempt] = field(default_factory=list["QuizAttempt"])
    """Their attempts at the study's quiz, in order."""
    practice_seat: tuple[str, Role] | None = None
    """Their practice room and seat, once it is opened."""
    practice: list[PlayedNegotiation] = field(default_factory=list[PlayedNegotiation])
    """Their finished practice negotiations (unpaid), in order."""
    practice_done: bool = False
    """They moved on from practice to the negotiations that pay."""
    answers: dict[str, str] | None = None
    """Their answers to the study's questionnaire, once sent."""
    answered_at: float | None = None
    streams: int = 0
    """Their page's live views open now (not journaled)."""

    def stream_opened(self) -> None:
        self.streams += 1

    def stream_ended(self, ran_out: bool) -> None:
        """One of their live views ended: at its time (the page reconnects), or because its
        connection went (``ran_out`` False): with no other open, their page closed, as a
        ``close`` would say."""
        self.streams -= 1
        if not ran_out and not self.streams and self.closed_at is None:
            self.closed_at = time.time()

    def streaming(self) -> None:
        """A live view of theirs reads (every second while open): seconds after a ``close``,
        the page is open again."""
        if self.closed_at is not None and time.time() - self.closed_at > REOPENED_S:
            self.closed_at = None

    def present(self, now: float) -> bool:
        """Their page is open and was heard from lately: they can be matched."""
        return self.closed_at is None and now - self.heard < PRESENT_S

    def gone(self, now: float, silent_s: float) -> bool:
        """Their page has been closed past the grace, or silent for ``silent_s``."""
        closed = self.closed_at is not None and now - self.closed_at >= CLOSE_GRACE_S
        return closed or now - self.heard >= silent_s

    def completion_url(self, url: str | None) -> str | None:
        """A study's completion URL, its placeholders filled with their label and ids."""
        if url is None:
            return None
        joined = self.joined
        if joined is None:
            return completion_link(url, self.label, {})
        return completion_link(url, joined.label, joined.ids)

    @property
    def passed_quiz(self) -> bool:
        return any(attempt.passed for attempt in self.quiz)

    @property
    def currency(self) -> str:
        """The currency of their last scenario (their surplus's)."""
        return self.results[-1].currency if self.results else "USD"

    @property
    def total_surplus(self) -> Decimal:
        """Their surplus over every negotiation they played."""
        return sum((p.result.outcome.surplus for p in self.results), Decimal("0.00"))

    @property
    def buyer_times(self) -> int:
        return sum(role == "buyer" for _, role in self.seats)


def first_pair(waiting: list[Participant]) -> tuple[Participant, Participant] | None:
    """The first two of one treatment in ``waiting`` (those who waited longest first): a pair
    study matches within a treatment."""
    first: dict[str | None, Participant] = {}
    for who in waiting:
        if (other := first.get(who.treatment)) is not None:
            return other, who
        first[who.treatment] = who
    return None


async def check_presence(study: Study, who: Participant, now: float) -> None:
    """The reaper's look at a pair participant who has not finished: gone (they leave the study;
    an open negotiation of theirs ends, the server walking away for them), or waiting past the
    study's limit (timed out)?"""
    limit = study.request.max_wait_s
    if who.gone(now, study.request.dropout_s):
        current = None if who.waiting_since is not None else study.current(who)
        if current is not None and current[0].current.is_open:
            room, role = current
            study.end(who, Ended("dropped", now, room.id, room.current.number))
            with anyio.move_on_after(5):  # the negotiation ends for their partner
                try:
                    await room.current.act(role, WalkAway())
                except Exception as exc:  # it ended meanwhile, or cannot end now
                    log.info("left seat not walked away", study=study.id, error=str(exc))
        else:
            study.end(who, Ended("dropped", now))
    elif who.waiting_since is not None and now - who.waiting_since >= (limit or float("inf")):
        match study.request.after_wait:
            case "end":
                study.end(who, Ended("timed_out", now))
            case "house":
                study.play_house(who)


def close_out(study: Study, now: float) -> None:
    """A closed study's pass: every part not over ends (``closed``) once it has no open
    negotiation (``study_control``)."""
    for who in study.participants.values():
        if study.over(who):
            continue
        current = study.current(who)
        if current is None or not current[0].current.is_open:
            study.end(who, Ended("closed", now))

"""The studies of an HTTP server, by id, with their tokens: created, restored at start.

A study's page token and each invited participant's token are kept as digests only and looked
up by digest (as seat tokens are, ``dealroom.server.tokens``). A participant admitted through the
study's URL (``admit``) is looked up the same way; their token is also kept in clear in the
study's journal, so that their label leads back to it after a restart. A study's journal,
``<rooms journal directory>/studies/<id>.jsonl``, is private (owner only), as the rooms' are:
its header holds the study's secret.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from dealroom.protocol import RoomCreated, RoomRequest, SessionErrorCode
from dealroom.protocol.study import StudyCreated, StudyRequest
from dealroom.server.journal import STOPPED_SUFFIX, Journals, Op, WholeJournal, reason_of
from dealroom.server.negotiation import Negotiation
from dealroom.server.room import Room
from dealroom.server.room_error import RoomError
from dealroom.server.study import Study
from dealroom.server.study_journal import journal_entries, replay_entry
from dealroom.server.study_people import Participant
from dealroom.server.tokens import digest, new_token

log = structlog.stdlib.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Ticket:
    """What a study token opens: the study's page (``who`` None) or one participant's seat."""

    study: Study
    who: Participant | None


class Studies:
    """Every study of one server."""

    def __init__(
        self,
        *,
        create_room: Callable[[RoomRequest], RoomCreated],
        room: Callable[[str], Room | None],
        journals: Journals | None,
        check_house: Callable[[str], None] = lambda spec: None,
        token_prefix: str = "",
    ) -> None:
        self._create_room = create_room
        self._check_house = check_house
        self._room = room
        self.journals = None if journals is None else Journals(journals.directory / "studies")
        self.token_prefix = token_prefix
        self.studies: dict[str, Study] = {}
        self.unrestored: dict[str, str] = {}
        self._tokens: dict[bytes, tuple[str, str | None]] = {}

    def create(self, request: StudyRequest) -> StudyCreated:
        """Open a study. RoomError ``study_exists`` for an id in use, ``journal_unavailable``
        when its journal cannot be written; ValueError for a house agent no one can play (its
        rooms open as participants arrive: checked now). Nothing is opened on an error."""
        for spec in sorted(request.houses()):
            self._check_house(spec)
        if request.id in self.studies or request.id in self.unrestored:
            raise study_exists(request.id)
        if request.secret is None:  # drawn once, here: a restored study draws the same
            request = request.model_copy(update={"secret": request.run_secret().hex()})
        token = new_token(self.token_prefix)
        tokens = {label: new_token(self.token_prefix) for label in request.participants}
        study = self._build(request, None)
        if self.journals is not None:
            header = {
                **study.header(),
                "created": study.created,
                "token": digest(token).hex(),
                "participants": {label: digest(t).hex() for label, t in tokens.items()},
            }
            journal = self.journals.create(f"study-{request.id}", header)
            if journal is None:
                raise RoomError(
                    SessionErrorCode.JOURNAL_UNAVAILABLE,
                    "The server cannot journal a new study now (its disk or file descriptors "
                    "ran out); no study was opened. Try again later.",
                )
            study.journal = _whole(journal.path, study, header)
        self._grant(study, digest(token), {label: digest(t) for label, t in tokens.items()})
        log.info("study created", study=request.id, participants=len(tokens))
        return StudyCreated(study=request.id, token=token, participants=tokens)

    def restore(self) -> None:
        """At start, before the rooms: rebuild every journaled study with its tokens. A journal
        that cannot be read or replayed is logged, left in place, and named in ``unrestored``."""
        if self.journals is None:
            return
        for aside in self.journals.set_aside():  # set aside by an older server: restore them
            back = aside.with_name(aside.name.removesuffix(STOPPED_SUFFIX))
            if not back.exists():
                os.replace(aside, back)
                log.warning("study journal set aside by an older server restored", path=str(back))
        for path, journal in self.journals.load():
            name = path.name.removesuffix(".jsonl").removeprefix("study-")
            try:
                if isinstance(journal, str):
                    raise ValueError(journal)
                request = StudyRequest.model_validate(journal.header["request"])
                study = self._build(request, float(journal.header["created"]))
                for _, op in journal.entries:
                    replay_entry(study, op)
                participants = {
                    label: bytes.fromhex(hexdigest)
                    for label, hexdigest in dict(journal.header["participants"]).items()
                }
            except Exception as exc:  # one bad journal must not stop the server
                self.unrestored[name] = reason_of(exc)
                log.error("study journal cannot be restored", path=str(path), error=reason_of(exc))
                continue
            for who in study.participants.values():  # joined through the study's URL
                if who.joined is not None:
                    participants[who.label] = digest(who.joined.token)
            study.journal = _whole(path, study, journal.header)
            if not _ends_whole(path):  # a torn last line (killed mid-write): write it whole
                study.journal.behind = True
                study.journal.catch_up()
            self._grant(study, bytes.fromhex(journal.header["token"]), participants)
        if self.studies or self.unrestored:
            log.info("studies restored", studies=len(self.studies), failed=len(self.unrestored))

    def admit(self, study: Study, label: str, ids: dict[str, str]) -> str | None:
        """A visit to an open study's URL (``Study.admit``): the token of the participant who
        came with ``label`` before, or of a new one; None when the study is full."""
        who = study.admit(label, ids, new_token(self.token_prefix))
        if who is None or who.joined is None:
            return None
        self._tokens[digest(who.joined.token)] = (study.id, who.label)
        return who.joined.token

    def lookup(self, token: str) -> Ticket | None:
        """What a token opens, if it is a study's or a participant's."""
        found = self._tokens.get(digest(token))
        if found is None:
            return None
        study = self.studies[found[0]]
        return Ticket(study, None if found[1] is None else study.participants[found[1]])

    def recorded(self, room: Room, negotiation: Negotiation) -> None:
        """A study room's ``StudyHook``: a negotiation of a study's room ended."""
        seats = room.settings.experiment.study
        if seats is not None and (study := self.studies.get(seats.id)) is not None:
            study.recorded(room, negotiation)

    async def tick(self) -> None:
        """The reaper's pass: each study's (``Study.tick``), then its journal if a failed write
        left it behind (``WholeJournal.catch_up_soon``)."""
        for study in list(self.studies.values()):
            try:
                await study.tick()
                if isinstance(study.journal, WholeJournal):
                    await study.journal.catch_up_soon()
            except Exception:  # one bad study must not stop the reaper for the others
                log.exception("study tick failed", study=study.id)

    def catch_up(self) -> None:
        """Write again, whole and now, every study journal a failed write left behind."""
        for study in self.studies.values():
            if isinstance(study.journal, WholeJournal):
                study.journal.catch_up()

    def close(self) -> None:
        """Stop writing the journals, each whole if the disk allows (the server stops; they
        stay for the next start)."""
        for study in self.studies.values():
            if study.journal is not None:
                study.journal.close()

    def _build(self, request: StudyRequest, created: float | None) -> Study:
        return Study(request, create_room=self._create_room, room=self._room, created=created)

    def _grant(self, study: Study, token: bytes, participants: dict[str, bytes]) -> None:
        self.studies[study.id] = study
        self._tokens[token] = (study.id, None)
        for label, token_digest in participants.items():
            self._tokens[token_digest] = (study.id, label)


def study_exists(study: str) -> RoomError:
    """The refusal of a study id in use (by a worker, or by a cluster's front for any worker)."""
    return RoomError(
        SessionErrorCode.STUDY_EXISTS,
        f"There is already a study {study!r} on this server; choose another id.",
    )


def _whole(path: Path, study: Study, header: Mapping[str, Any]) -> WholeJournal:
    """A study's journal: behind after a failed write, written whole from its state again."""
    kept = dict(header)

    def whole() -> tuple[Mapping[str, Any], list[Op]]:
        return kept, journal_entries(study)

    return WholeJournal(path, whole)


def _ends_whole(path: Path) -> bool:
    """Whether a journal's last line is whole (an append after a torn one would tear the
    middle of the file, which is never read back)."""
    with contextlib.suppress(OSError), path.open("rb") as file:
        file.seek(-1, os.SEEK_END)
        return file.read(1) == b"\n"
    return True

"""A study participant's steps around the negotiations that pay (``dealroom.server.study``
holds one ``Phases``): their treatment, the comprehension quiz, the unpaid practice
negotiations and the questionnaire after play (``dealroom.protocol.study_design``).

In order: consent (``Study.agree``), then the treatment is assigned (block randomisation over
the order in which participants took part), the quiz is answered (a failed last attempt ends
their part: ``quiz_failed``, paid the show-up fee), the practice negotiations are played in a
room of their own against the house agent (recorded as practice: never paid, never counted as
played), and *Next* after the last of them leads to the study proper. Once their part is over,
the questionnaire is answered before the completion code or link is shown. Every step is
journaled through the study's journal (``study_journal``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from dealroom.protocol import ROLES, Role, RoomCreated, RoomRequest
from dealroom.protocol.secret import Secret
from dealroom.protocol.study import PlayedNegotiation, StudyRequest
from dealroom.protocol.study_design import (
    QuizQuestion,
    QuizResult,
    StepRefusal,
    StepRefused,
    Treatment,
    assigned,
    form_answers,
)
from dealroom.protocol.study_quiz import quiz_questions, wrong_answers
from dealroom.protocol.wire import StudySeats
from dealroom.server.instructions import Block, blocks
from dealroom.server.journal import Op
from dealroom.server.room import Room
from dealroom.server.study_people import Ended, Participant, QuizAttempt

PRACTICE_INDEX = 1_000_000
"""The scenario index practice rooms start from: the same practice scenarios for everyone, none
of them a scenario that pays."""


class Phases:
    """Treatments, quiz, practice and questionnaire of one study (see the module docstring)."""

    def __init__(
        self,
        request: StudyRequest,
        secret: Secret,
        *,
        create_room: Callable[[RoomRequest], RoomCreated],
        room: Callable[[str], Room | None],
        log: Callable[[Op], None],
        end: Callable[[Participant, Ended], None],
    ) -> None:
        self.request = request
        self.secret = secret
        self._create_room = create_room
        self._room = room
        self._log = log
        self._end = end
        self.assigned = 0
        """How many participants have been assigned a treatment."""
        self.practice_rooms: dict[str, str] = {}
        """Each practice room's participant, by room id."""
        self._instructions: dict[str | None, tuple[Block, ...]] = {}

    # -- treatments ------------------------------------------------------------------------------

    def assign(self, who: Participant) -> None:
        """Assign their treatment (once, journaled), if the study has treatments."""
        names = [t.name for t in self.request.design.treatments]
        if not names or who.treatment is not None:
            return
        self.set_treatment(who, assigned(self.secret, names, self.assigned))
        self._log(["treatment", who.label, who.treatment])

    def set_treatment(self, who: Participant, name: str) -> None:
        """Their treatment (new, or replayed)."""
        who.treatment = name
        self.assigned += 1

    def instructions(self, who: Participant | None) -> tuple[Block, ...]:
        """The instructions they read: the study's, then their treatment's."""
        name = None if who is None else who.treatment
        if name not in self._instructions:
            own = self.request.treatment(name).instructions if name is not None else None
            text = "\n\n".join(t for t in (self.request.instructions, own) if t)
            self._instructions[name] = blocks(text)
        return self._instructions[name]

    # -- the quiz --------------------------------------------------------------------------------

    def needs_quiz(self, who: Participant) -> bool:
        return self.request.design.quiz is not None and not who.passed_quiz and who.ended is None

    def questions(self, who: Participant) -> tuple[QuizQuestion, ...]:
        return quiz_questions(self.request, who.treatment)

    def attempts_left(self, who: Participant) -> int:
        quiz = self.request.design.quiz
        return 0 if quiz is None else max(quiz.max_attempts - len(who.quiz), 0)

    def attempt(self, who: Participant, answers: Sequence[int]) -> QuizResult | StepRefused:
        """One attempt at the quiz (journaled), or why it cannot be taken."""
        if not self.needs_quiz(who):
            return StepRefused(StepRefusal.NO_QUIZ, "there is no quiz to answer now")
        questions = self.questions(who)
        if len(answers) != len(questions) or any(
            not 0 <= a < len(q.choices) for a, q in zip(answers, questions, strict=False)
        ):
            return StepRefused(
                StepRefusal.BAD_ANSWERS,
                f"answers: one choice (numbered from 0) for each of the {len(questions)} questions",
            )
        wrong = wrong_answers(questions, answers)
        attempt = QuizAttempt(round(time.time(), 3), tuple(answers), not wrong)
        who.quiz.append(attempt)
        self._log(["quiz", who.label, list(attempt.answers), attempt.passed, attempt.at])
        left = self.attempts_left(who)
        ended = bool(wrong) and left == 0
        if ended:
            self._end(who, Ended("quiz_failed", attempt.at))
        return QuizResult(passed=not wrong, wrong=wrong, attempts_left=left, ended=ended)

    # -- practice --------------------------------------------------------------------------------

    def practising(self, who: Participant) -> bool:
        """They have practice negotiations ahead of (or before moving on to) the paid ones."""
        return self.request.design.practice > 0 and not who.practice_done and who.ended is None

    def practice_over(self, who: Participant) -> bool:
        """They have played every practice negotiation (and may move on)."""
        return len(who.practice) >= self.request.design.practice

    def open_practice(self, who: Participant, role: Role) -> None:
        """Open their practice room (RoomError when it cannot be opened: nothing changed)."""
        request = self.request
        treatment = request.treatment(who.treatment)
        house = request.design.practice_house or treatment.house
        assert house is not None, "a practice room has a house agent (checked on creation)"
        created = self._create_room(
            room_request(
                request,
                index=PRACTICE_INDEX,
                negotiations=request.design.practice,
                seats={role: who.label},
                treatment=treatment,
                house=house,
            )
        )
        self.seat_practice(who, created.room, role)
        self._log(["practice_seat", who.label, created.room, role])
        room = self._room(created.room)
        if room is not None and who.agreed is not None:
            room.consent.agree(role, when=who.agreed)

    def seat_practice(self, who: Participant, room_id: str, role: Role) -> None:
        """Seat them in their practice room (new, or replayed)."""
        who.practice_seat = (room_id, role)
        self.practice_rooms[room_id] = who.label

    def practice_current(self, who: Participant) -> tuple[Room, Role] | None:
        """Their practice room and seat, while they practise."""
        if not self.practising(who) or who.practice_seat is None:
            return None
        room = self._room(who.practice_seat[0])
        return None if room is None else (room, who.practice_seat[1])

    def finish_practice(self, who: Participant) -> bool:
        """*Next* after their last practice negotiation: on to the study (journaled)."""
        current = self.practice_current(who)
        if current is None or current[0].current.is_open or not self.practice_over(who):
            return False
        who.practice_done = True
        self._log(["practice_done", who.label])
        return True

    def record_practice(self, who: Participant, played: PlayedNegotiation) -> None:
        """A practice negotiation of theirs ended (journaled as a result marked practice)."""
        who.practice.append(played)
        self._log(["result", who.label, played.model_dump(mode="json")])

    # -- the questionnaire -----------------------------------------------------------------------

    def questionnaire_pending(self, who: Participant) -> bool:
        return bool(self.request.design.questionnaire) and who.answers is None

    def answer(
        self, who: Participant, answers: dict[str, str], *, over: bool
    ) -> StepRefused | None:
        """Their questionnaire (once their part is ``over``; journaled), or why it cannot be
        taken."""
        if not self.questionnaire_pending(who) or not over:
            return StepRefused(StepRefusal.NO_FORM, "there is no questionnaire to answer now")
        kept = form_answers(self.request.design.questionnaire, answers)
        if isinstance(kept, str):
            return StepRefused(StepRefusal.BAD_ANSWERS, kept)
        who.answers, who.answered_at = kept, round(time.time(), 3)
        self._log(["answers", who.label, kept, who.answered_at])
        return None


def solo_role(request: StudyRequest, who: Participant) -> Role:
    """A participant's seat opposite a house agent: the study's role, or alternating by their
    place (a pair study's practice: alternating)."""
    if request.matching == "pairs" or request.role == "alternate":
        return ROLES[who.index % 2]
    return request.role


def room_request(
    request: StudyRequest,
    *,
    index: int,
    negotiations: int,
    seats: dict[Role, str],
    treatment: Treatment,
    house: str | None = None,
) -> RoomRequest:
    """A room of the study for ``seats`` under a treatment's settings (``house``: the house
    agent in the other seat, for one participant)."""
    room = RoomRequest(
        tier=treatment.tier or request.tier,
        secret=request.secret,
        index=index,
        deadline=treatment.deadline,
        clock=request.clock,
        rules=request.rules,
        consent=request.consent,
        negotiations=negotiations,
        study=StudySeats(id=request.id, participants=seats),
    )
    if house is None:
        return room
    (role, label), *_ = seats.items()
    other = "house_seller" if role == "buyer" else "house_buyer"
    return room.model_copy(update={"participant": label, other: house})

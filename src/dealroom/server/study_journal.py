"""A study as journal entries (``study-<id>.jsonl``): each input as it happens
(``Study._log``), replayed at start, and the whole state written again as entries after a failed
write (``WholeJournal``)."""

from __future__ import annotations

import time

from dealroom.protocol.study import PlayedNegotiation
from dealroom.server.journal import Op
from dealroom.server.study import Study
from dealroom.server.study_people import Ended, Joined, QuizAttempt


def replay_entry(study: Study, op: Op) -> None:
    """One journaled input, at start (rooms are restored after their study)."""
    match op:
        case ["joined", name, label, ids, when, token]:
            study.join(
                str(name),
                Joined(
                    str(label),
                    {str(k): str(v) for k, v in dict(ids).items()},
                    float(when),
                    str(token),
                ),
            )
        case ["opened", label]:
            study.participants[label].opened = True
        case ["consent", label, when]:
            study.participants[label].agreed = str(when)
        case ["seat", room_id, seats, spectator]:
            study.seat_in(room_id, {role: str(label) for role, label in dict(seats).items()})
            study.spectators[room_id] = str(spectator)
        case ["queue", label, since]:
            study.participants[label].waiting_since = float(since)
        case ["result", label, data]:
            played = PlayedNegotiation.model_validate(data)
            who = study.participants[label]
            (who.practice if played.practice else who.results).append(played)
        case ["treatment", label, name]:
            study.phases.set_treatment(study.participants[label], str(name))
        case ["quiz", label, answers, passed, when]:
            attempt = QuizAttempt(float(when), tuple(int(a) for a in answers), bool(passed))
            study.participants[label].quiz.append(attempt)
        case ["practice_seat", label, room_id, role]:
            study.phases.seat_practice(study.participants[label], str(room_id), role)
        case ["practice_done", label]:
            study.participants[label].practice_done = True
        case ["answers", label, answers, when]:
            who = study.participants[label]
            who.answers = {str(k): str(v) for k, v in dict(answers).items()}
            who.answered_at = float(when)
        case ["page", label, event, when, room_id, number]:
            who = study.participants[label]
            who.page.append((float(when), event, room_id, None if number is None else int(number)))
            who.closed_at = time.time() if event == "close" else None  # grace from now
        case ["ended", label, state, when, room_id, number]:
            who = study.participants[label]
            who.waiting_since = None
            who.ended = Ended(state, float(when), room_id, None if number is None else int(number))
        case ["status", "open" | "paused" | "closed" as status, when]:
            study.control.replay(status, float(when))
        case _:
            raise ValueError(f"study journal: unknown entry {str(op)[:80]}")


def journal_entries(study: Study) -> list[Op]:
    """The study's whole state as journal entries, in an order ``replay`` rebuilds it from
    (a journal written whole again after a failed write: ``WholeJournal``)."""
    ops: list[Op] = []
    people = list(study.participants.values())
    for who in people:  # joins first: the names they bring are known to what follows
        if (j := who.joined) is not None:
            ops.append(["joined", who.label, j.label, dict(j.ids), j.at, j.token])
    for who in people:
        if who.opened:
            ops.append(["opened", who.label])
        if who.agreed is not None:
            ops.append(["consent", who.label, who.agreed])
        if who.treatment is not None:
            ops.append(["treatment", who.label, who.treatment])
        ops += [["quiz", who.label, list(q.answers), q.passed, q.at] for q in who.quiz]
        if who.practice_seat is not None:
            ops.append(["practice_seat", who.label, *who.practice_seat])
    for room_id, seats in study.rooms.items():  # in the order they were seated
        ops.append(["seat", room_id, dict(seats), study.spectators.get(room_id)])
    for who in people:
        played = [*who.practice, *who.results]
        ops += [["result", who.label, p.model_dump(mode="json")] for p in played]
        if who.practice_done:
            ops.append(["practice_done", who.label])
        if who.answers is not None:
            ops.append(["answers", who.label, dict(who.answers), who.answered_at])
        ops += [["page", who.label, e, when, at, n] for when, e, at, n in who.page]
        if who.waiting_since is not None:  # after their seats, which end a wait
            ops.append(["queue", who.label, who.waiting_since])
        if (end := who.ended) is not None:
            ops.append(["ended", who.label, end.state, round(end.at, 3), end.room, end.number])
    if study.control.since is not None:
        ops.append(["status", study.control.status, study.control.since])
    return ops

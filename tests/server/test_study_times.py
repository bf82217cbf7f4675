"""When things happened, as a study's exports say: the time each participant's part ended in
``payments.csv`` (however it ended), and page events counted against a negotiation only while it
ran (begun and not yet ended), the same in ``page_events.csv`` and ``negotiations.csv``."""

from __future__ import annotations

import csv
import io
import time
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest
from test_study import registry, solo
from test_study_dropouts import closed_for, pairs, study_of

from dealroom.protocol import Accept, MakeOffer, WalkAway
from dealroom.protocol.study_quiz import quiz_questions
from dealroom.server.seat import RoomSeat
from dealroom.server.study_export import export_csv

pytestmark = pytest.mark.anyio


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def by_label(text: str) -> dict[str, dict[str, str]]:
    return {row["participant"]: row for row in rows(text)}


def unix(cell: str) -> float:
    return datetime.fromisoformat(cell).timestamp()


async def test_payments_say_when_each_part_ended_however_it_ended(tmp_path: Path) -> None:
    """done: the end of their last negotiation; dropped and timed out: when the reaper let them
    go; still playing or never started: empty. The wide file carries the same column."""
    study, people = study_of(registry(tmp_path), pairs(participants=["a", "b", "c", "d"]))
    a, b, c = people["a"], people["b"], people["c"]
    study.agree(a)
    study.agree(b)
    study.agree(c)  # c waits
    before = time.time()
    closed_for(a, 10)
    await study.tick()  # a leaves mid-way; the negotiation ends for b
    c.waiting_since = (c.waiting_since or 0) - 301
    await study.tick()  # c times out
    after = time.time()
    payments = by_label(export_csv(study, "payments"))
    assert payments["a"]["state"] == "dropped" and payments["c"]["state"] == "timed_out"
    for label in "ac":
        ended = people[label].ended
        assert ended is not None
        assert before - 0.001 <= unix(payments[label]["part_ended_at"]) <= after + 0.001
        assert payments[label]["part_ended_at"].endswith("+00:00")  # UTC, ISO 8601
        assert abs(unix(payments[label]["part_ended_at"]) - ended.at) < 0.001
    assert payments["b"]["state"] == "playing" and payments["b"]["part_ended_at"] == ""
    assert payments["d"]["state"] == "invited" and payments["d"]["part_ended_at"] == ""
    wide = by_label(export_csv(study, "participants"))
    assert {label: wide[label]["part_ended_at"] for label in "abcd"} == {
        label: payments[label]["part_ended_at"] for label in "abcd"
    }
    codebook = {(r["file"], r["column"]): r for r in rows(export_csv(study, "codebook"))}
    assert codebook["payments", "part_ended_at"]["type"] == "UTC time"
    assert "part in the study ended" in codebook["payments", "part_ended_at"]["description"]
    assert ("participants", "part_ended_at") in codebook


async def test_a_done_participants_part_ended_with_their_last_negotiation(tmp_path: Path) -> None:
    rooms = registry(tmp_path)
    created = rooms.studies.create(solo())
    study = rooms.studies.studies["s1"]
    who = study.participants["p01"]
    study.agree(who)
    current = study.current(who)
    assert current is not None and created.participants
    seat = RoomSeat(*current)
    await seat.act(WalkAway())
    assert by_label(export_csv(study, "payments"))["p01"]["part_ended_at"] == ""
    await seat.new_negotiation()
    await seat.act(WalkAway())
    last = who.results[-1].ended_at
    assert study.state(who) == "done" and last is not None
    payments = by_label(export_csv(study, "payments"))
    assert unix(payments["p01"]["part_ended_at"]) == pytest.approx(last, abs=0.001)
    negotiations = [r for r in rows(export_csv(study, "negotiations")) if r["participant"] == "p01"]
    assert payments["p01"]["part_ended_at"] == negotiations[-1]["ended_at"]


async def test_a_failed_quiz_ends_the_part_at_the_last_attempt(tmp_path: Path) -> None:
    rooms = registry(tmp_path)
    rooms.studies.create(solo(design={"quiz": {"max_attempts": 1}}))
    study = rooms.studies.studies["s1"]
    who = study.participants["p02"]
    study.agree(who)
    questions = quiz_questions(study.request, who.treatment)
    study.phases.attempt(who, [(q.answer + 1) % len(q.choices) for q in questions])
    assert study.state(who) == "quiz_failed"
    payments = by_label(export_csv(study, "payments"))
    assert unix(payments["p02"]["part_ended_at"]) == pytest.approx(who.quiz[-1].at, abs=0.001)


async def test_page_events_count_against_a_negotiation_only_while_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page event before the negotiation began, or after it ended (a ``close`` once the deal
    is in), counts against none: empty in ``page_events.csv``, not in ``negotiations.csv``'s
    counts; those while it ran count in both. A restored study exports the same. (The wall
    clock ticks 10 ms a reading, so that no two moments share the millisecond they are kept
    to.)"""
    now = [time.time()]

    def ticking() -> float:
        now[0] += 0.01
        return now[0]

    monkeypatch.setattr(time, "time", ticking)
    rooms = registry(tmp_path)
    study, people = study_of(rooms, pairs(participants=["a", "b"]))
    a, b = people["a"], people["b"]
    study.agree(a)
    study.agree(b)
    seated = study.current(a)
    assert seated is not None
    room, _ = seated
    study.page(a, "hidden")  # seated, but the negotiation has not begun
    made = await RoomSeat(room, "buyer").act(MakeOffer(price=Decimal(1)))
    study.page(a, "visible")  # during the negotiation
    study.page(a, "hidden")
    offer = made.live_offers[0].offer_id
    await RoomSeat(room, "seller").act(Accept(offer_id=offer))
    assert not room.current.is_open
    study.page(a, "visible")  # after the outcome: between negotiations
    study.page(a, "close")
    assert [number for *_, number in a.page] == [1, 1, 1, 1, 1]  # as the study noted them

    def check(text_of: dict[str, str]) -> None:
        events = [r for r in rows(text_of["page_events"]) if r["participant"] == "a"]
        assert [(r["event"], r["room"], r["room_negotiation"]) for r in events] == [
            ("hidden", room.id, ""),
            ("visible", room.id, "1"),
            ("hidden", room.id, "1"),
            ("visible", room.id, ""),
            ("close", room.id, ""),
        ]
        (mine,) = [r for r in rows(text_of["negotiations"]) if r["participant"] == "a"]
        assert (mine["page_hidden"], mine["page_closes"], mine["page_opens"]) == ("1", "0", "0")

    check({name: export_csv(study, name) for name in ("page_events", "negotiations")})
    again = registry(tmp_path)
    again.restore()
    back = again.studies.studies[study.id]
    check({name: export_csv(back, name) for name in ("page_events", "negotiations")})

"""A study's treatments, quiz, practice and questionnaire through the routes a participant's page
uses: assignment on arrival, a failed and a passed quiz, an unpaid practice negotiation, the
questionnaire before the code, the exports and a restart; a quiz failed to the cap ends with the
show-up fee; pairs are matched within a treatment."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp_support import ADMIN, http_server, tls
from test_study import SECRET, registry

from dealroom.cli import UsageError, build_parser
from dealroom.cli._study_flags import study_request
from dealroom.protocol import WalkAway
from dealroom.protocol.study import StudyRequest
from dealroom.protocol.study_design import QuizResult
from dealroom.protocol.study_quiz import quiz_questions
from dealroom.server.seat import RoomSeat
from dealroom.server.study_codebook import WIDE
from dealroom.server.study_export import EXPORTS, Export, export_csv

pytestmark = pytest.mark.anyio

DESIGN: dict[str, Any] = {
    "treatments": [
        {"name": "short", "deadline": 90, "instructions": "You have little time."},
        {"name": "long", "deadline": 300},
    ],
    "quiz": {"max_attempts": 2},
    "practice": 1,
    "questionnaire": [
        {"name": "fair", "text": "Was it fair?", "choices": ["yes", "no"], "required": True},
        {"name": "why", "text": "Why?"},
    ],
}


def request(**update: object) -> StudyRequest:
    fields: dict[str, object] = {
        "id": "d1",
        "participants": ["p1", "p2", "p3"],
        "house": "accept-any",
        "negotiations": 1,
        "secret": SECRET,
        "clock": "virtual",
        "consent": "I agree.",
        "payoff": {"exchange_rate": "0.5", "show_up_fee": "3", "currency": "EUR"},
        "completion_code": "DONE42",
        "design": DESIGN,
    }
    return StudyRequest.model_validate(fields | update)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


async def test_a_participant_is_assigned_quizzed_practises_plays_and_answers_the_form(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        url = server.url
        body = request().model_dump(mode="json")
        created = (await http.post(f"{url}/admin/studies", json=body, headers=auth(ADMIN))).json()
        token, study_token = created["participants"]["p1"], created["token"]

        async def get() -> dict[str, Any]:
            return (await http.get(f"{url}/web/api/seat", headers=auth(token))).json()

        async def call(tool: str, **arguments: Any) -> dict[str, Any]:
            body = {"tool": tool, "arguments": arguments}
            return (
                await http.post(f"{url}/web/api/seat/call", json=body, headers=auth(token))
            ).json()

        await get()
        await http.post(f"{url}/web/api/seat/consent", headers=auth(token))
        lobby = await get()
        study = server.registry.studies.studies["d1"]
        who = study.participants["p1"]
        assert who.treatment in {"short", "long"} and lobby["quiz_attempts_left"] == 2
        questions = quiz_questions(study.request, who.treatment)
        assert [q["text"] for q in lobby["quiz"]] == [q.text for q in questions]
        assert "answer" not in lobby["quiz"][0]  # the page is not told the answers
        answers = [q.answer for q in questions]
        bad = await http.post(
            f"{url}/web/api/seat/quiz", json={"answers": [0]}, headers=auth(token)
        )
        assert bad.status_code == 400 and bad.json()["code"] == "bad_answers"
        assert "one choice" in bad.json()["error"] and not who.quiz  # nothing recorded
        wrong = [(a + 1) % len(q.choices) for a, q in zip(answers, questions, strict=True)]
        failed = await http.post(
            f"{url}/web/api/seat/quiz", json={"answers": wrong}, headers=auth(token)
        )
        assert failed.json() == {
            "passed": False,
            "wrong": list(range(len(questions))),
            "attempts_left": 1,
            "ended": False,
        }
        passed = await http.post(
            f"{url}/web/api/seat/quiz", json={"answers": answers}, headers=auth(token)
        )
        assert passed.json()["passed"]
        again = await http.post(
            f"{url}/web/api/seat/quiz", json={"answers": answers}, headers=auth(token)
        )
        assert again.status_code == 409 and again.json()["code"] == "no_quiz_now"
        assert len(who.quiz) == 2  # nothing changed

        practice = await get()
        assert practice["kind"] == "seat" and practice["practice"]
        assert (practice["negotiation"], practice["negotiations"]) == (1, 1)
        assert "Payment: this is an unpaid practice negotiation" in practice["briefing"]
        assert await call("make_offer", price=5.0)
        assert (await call("wait_for_opponent", timeout_s=30))["result"]["outcome"]
        moved = await call("new_negotiation")
        assert moved["text"] == "On to the negotiations that count."
        paid = await get()
        assert not paid["practice"] and paid["room"] != practice["room"]
        assert paid["negotiation"] == 1 and paid["completion"] is None
        assert "practice" not in paid["briefing"]
        await call("make_offer", price=6.0)
        await call("wait_for_opponent", timeout_s=30)
        final = await get()
        completion = final["completion"]
        assert completion["code"] is None and [q["name"] for q in completion["questions"]] == [
            "fair",
            "why",
        ]
        refused = await http.post(
            f"{url}/web/api/seat/form", json={"answers": {"why": "x"}}, headers=auth(token)
        )
        assert refused.status_code == 400 and "'fair' needs an answer" in refused.json()["error"]
        assert refused.json()["code"] == "bad_answers" and who.answers is None
        sent = await http.post(
            f"{url}/web/api/seat/form",
            json={"answers": {"fair": "yes", "why": "=1+1"}},
            headers=auth(token),
        )
        assert sent.status_code == 204
        assert (await get())["completion"]["code"] == "DONE42"

        view = (await http.get(f"{url}/web/api/study", headers=auth(study_token))).json()
        assert view["treatments"] == {"short": int(who.treatment == "short"), "long": int(
            who.treatment == "long"
        )}  # fmt: skip
        line = next(p for p in view["participants"] if p["label"] == "p1")
        assert (line["quiz_attempts"], line["practice"], line["played"]) == (2, 1, 1)

        def export(name: Export) -> list[dict[str, str]]:
            return rows(export_csv(study, name))

        negotiations = export("negotiations")
        assert [(r["practice"], r["pays"], r["treatment"]) for r in negotiations] == [
            ("true", "false", who.treatment),
            ("false", "true", who.treatment),
        ]
        assert negotiations[0]["payoff"] == ""  # practice is never paid
        payment = next(r for r in export("payments") if r["participant"] == "p1")
        assert (payment["quiz_attempts"], payment["practice"], payment["negotiations"]) == (
            "2",
            "1",
            "1",
        )
        quiz = export("quiz")
        assert [(r["attempt"], r["passed"]) for r in quiz] == [("1", "false"), ("2", "true")]
        assert [(r["question"], r["answer"]) for r in export("answers")] == [
            ("fair", "yes"),
            ("why", "'=1+1"),  # a formula is written as text
        ]
        served = await http.get(f"{url}/web/api/study/quiz.csv", headers=auth(study_token))
        assert served.status_code == 200 and rows(served.text) == quiz


async def test_a_restart_restores_treatments_quiz_practice_and_answers(tmp_path: Path) -> None:
    rooms = registry(tmp_path)
    created = rooms.studies.create(request(house="boulware"))
    study = rooms.studies.studies["d1"]
    for label in ("p1", "p2", "p3"):
        who = study.participants[label]
        study.agree(who)
        questions = study.phases.questions(who)
        study.phases.attempt(who, [q.answer for q in questions])
        study.arrive(who)
    p1 = study.participants["p1"]
    current = study.current(p1)
    assert current is not None and current[0].id in study.phases.practice_rooms
    await RoomSeat(*current).act(WalkAway())
    assert study.next(p1)
    paid = study.current(p1)
    assert paid is not None and paid[0].id not in study.phases.practice_rooms
    early = study.phases.answer(p1, {"fair": "no"}, over=study.over(p1))
    assert early is not None and early.code == "no_questionnaire_now"  # not over yet
    await RoomSeat(*paid).act(WalkAway())
    assert study.phases.answer(p1, {"fair": "no"}, over=study.over(p1)) is None
    names = [study.participants[label].treatment for label in ("p1", "p2", "p3")]
    assert {names[0], names[1]} == {"long", "short"}  # the first block holds both
    names_: tuple[Export, ...] = ("negotiations", "payments", "quiz", "answers", "participants")
    exports = {name: export_csv(study, name) for name in names_}

    again = registry(tmp_path)
    again.restore()
    back = again.studies.studies["d1"]
    assert {name: export_csv(back, name) for name in names_} == exports
    assert [back.participants[label].treatment for label in ("p1", "p2", "p3")] == names
    assert back.phases.assigned == 3 and back.state(back.participants["p1"]) == "done"
    wide = {row["participant"]: row for row in rows(exports["participants"])}
    assert list(wide["p1"])[-11:] == [
        *(f"n1_{c}" for c in WIDE), "quiz_passed", "q_fair", "q_why"
    ]  # fmt: skip
    assert (wide["p1"]["n1_status"], wide["p1"]["q_fair"], wide["p1"]["quiz_passed"]) == (
        "no_deal",
        "no",
        "true",
    )
    assert wide["p2"]["n1_status"] == "" and wide["p2"]["state"] == "playing"
    ended = rows(exports["negotiations"])[1]["ended_at"]
    assert ended.endswith("+00:00") and "T" in ended  # an absolute time, UTC
    assert created.participants


async def test_a_quiz_failed_to_the_cap_ends_the_part_with_the_show_up_fee(
    tmp_path: Path,
) -> None:
    rooms = registry(tmp_path)
    rooms.studies.create(request(house="boulware", design={**DESIGN, "quiz": {"max_attempts": 1}}))
    study = rooms.studies.studies["d1"]
    who = study.participants["p2"]
    study.agree(who)
    questions = study.phases.questions(who)
    result = study.phases.attempt(who, [(q.answer + 1) % len(q.choices) for q in questions])
    assert isinstance(result, QuizResult) and result.ended and result.attempts_left == 0
    assert study.state(who) == "quiz_failed" and study.current(who) is None
    completion = study.completion(who)
    assert completion is not None and completion.ended == "quiz_failed"
    assert "within 1 attempt," in completion.message and "show-up fee" in completion.message
    assert completion.payoff is not None and str(completion.payoff.total) == "3.00"
    study.arrive(who)
    assert study.current(who) is None  # no practice room, no study room for them


async def test_pairs_are_matched_within_a_treatment(tmp_path: Path) -> None:
    rooms = registry(tmp_path)
    pairs = request(
        matching="pairs",
        house=None,
        clock="wall",
        participants=["a", "b", "c", "d"],
        design={"treatments": [{"name": "T1"}, {"name": "T2", "tier": "high"}]},
    )
    rooms.studies.create(pairs)
    study = rooms.studies.studies["d1"]
    for label in "abcd":
        study.agree(study.participants[label])
    seated = {
        tuple(sorted(seats.values())): {study.participants[x].treatment for x in seats.values()}
        for seats in study.rooms.values()
    }
    assert len(seated) == 2 and all(len(names) == 1 for names in seated.values())
    for room_id, seats in study.rooms.items():
        scenario = rooms.rooms[room_id].current.scenario
        treatment = study.participants[next(iter(seats.values()))].treatment
        assert scenario.id.startswith("high-" if treatment == "T2" else "mid-")  # its tier


def test_study_create_reads_a_design_file_and_its_flags_override_it(tmp_path: Path) -> None:
    design = tmp_path / "design.toml"
    design.write_text('practice = 2\n[[treatments]]\nname = "A"\n[[treatments]]\nname = "B"\n')
    argv = ["study", "create", "--server", "http://127.0.0.1:1", "--id", "s", "--count", "2"]
    argv += ["--house", "boulware", "--design", str(design), "--quiz-attempts", "4"]
    made = study_request(build_parser().parse_args([*argv, "--practice", "1"]))
    assert made.design.practice == 1 and [t.name for t in made.design.treatments] == ["A", "B"]
    assert made.design.quiz is not None and made.design.quiz.max_attempts == 4
    design.write_text('[[treatments]]\nname = "A"\n[[treatments]]\nname = "A"\n')
    with pytest.raises(UsageError, match="--design: treatments: treatment names must be unique"):
        study_request(build_parser().parse_args(argv))
    design.write_text("practice = [")
    with pytest.raises(UsageError, match=r"^--design: .*design.toml: "):
        study_request(build_parser().parse_args(argv))


def test_the_codebook_describes_every_column_of_every_export(tmp_path: Path) -> None:
    rooms = registry(tmp_path)
    rooms.studies.create(request(house="boulware"))
    study = rooms.studies.studies["d1"]
    book = rows(export_csv(study, "codebook"))
    described = {(row["file"], row["column"]) for row in book}
    for name in EXPORTS:
        if name in ("bonus", "codebook", "participants"):
            continue
        header = next(csv.reader(io.StringIO(export_csv(study, name))))
        assert {(name, column) for column in header} <= described, name
    header = next(csv.reader(io.StringIO(export_csv(study, "participants"))))
    generic = {column if not column.startswith(("n1_", "q_")) else "" for column in header}
    assert {("participants", c) for c in generic - {""}} <= described
    assert all(row["description"] for row in book), "every column is described"
    status = next(r for r in book if (r["file"], r["column"]) == ("negotiations", "status"))
    assert status["type"] == "deal | no_deal"

"""Consent in a room, and what an experiment records with each negotiation."""

from __future__ import annotations

from dealroom.protocol import Role
from dealroom.protocol.wire import StudySeats
from dealroom.server.room_experiment import Consent, experiment_extra
from dealroom.server.room_settings import Experiment


def consent(text: str | None) -> tuple[Consent, list[tuple[Role, str]]]:
    journaled: list[tuple[Role, str]] = []
    return Consent(text, on_agree=lambda role, when: journaled.append((role, when))), journaled


def test_a_room_without_a_consent_line_asks_no_one() -> None:
    asked, _ = consent(None)
    assert not asked.needed("buyer") and not asked.needed("seller")


def test_the_first_agreement_counts_and_is_journaled_once() -> None:
    asked, journaled = consent("I agree.")
    assert asked.needed("buyer")
    asked.agree("buyer", when="2026-01-01T00:00:00+00:00")
    asked.agree("buyer", when="2027-01-01T00:00:00+00:00")
    assert not asked.needed("buyer") and asked.needed("seller")
    assert journaled == [("buyer", "2026-01-01T00:00:00+00:00")]


def test_an_agreement_read_back_is_not_journaled_again() -> None:
    asked, journaled = consent("I agree.")
    asked.restore("seller", "2026-01-01T00:00:00+00:00")
    asked.restore("seller", "2027-01-01T00:00:00+00:00")
    assert asked.agreed == {"seller": "2026-01-01T00:00:00+00:00"} and not journaled


def test_an_experiment_records_only_what_it_has_and_the_run_follows_it() -> None:
    asked, _ = consent("I agree.")
    asked.agree("seller", when="t1")
    asked.agree("buyer", when="t2")
    study = StudySeats(id="s1", participants={"buyer": "p1"})
    full = Experiment(participant="p01", consent="I agree.", study=study)
    assert experiment_extra(full, asked) == {
        "participant": "p01",
        "consent": {"text": "I agree.", "agreed": {"seller": "t1", "buyer": "t2"}},
        "study": {"id": "s1", "participants": {"buyer": "p1"}},
    }
    assert list(experiment_extra(full, asked)["consent"]["agreed"]) == ["seller", "buyer"]
    assert experiment_extra(Experiment(), consent(None)[0]) == {}
    assert (full.run("room-1"), Experiment(participant="p01").run("room-1")) == ("s1", "p01")
    assert Experiment().run("room-1") == "room-1"

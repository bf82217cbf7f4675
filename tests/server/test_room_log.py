"""A room's journal: inputs go to the file as they are made, and come back to their owners."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from dealroom.protocol import Role, Scenario
from dealroom.protocol.generator import scenario_at
from dealroom.server.journal import Op
from dealroom.server.pacing import Pace
from dealroom.server.room_experiment import Consent
from dealroom.server.room_log import RoomLog
from dealroom.server.series import Series


@dataclass
class Replayed:
    number: int
    scenario: Scenario
    ops: list[Op] = field(default_factory=list[Op])

    @property
    def is_open(self) -> bool:
        return not self.ops or self.ops[-1] != ["end"]

    def replay(self, op: Op) -> None:
        self.ops.append(op)


class ListFile:
    def __init__(self) -> None:
        self.lines: list[tuple[int, Op]] = []

    def append(self, number: int, op: Op) -> None:
        self.lines.append((number, op))


def series() -> Series[Replayed, Scenario]:
    return Series(
        lambda i: scenario_at(0, i, "mid") if i < 5 else None,
        available=True,
        start=Replayed,
        pace=Pace(None),
        timer=lambda: 0.0,
    )


def test_inputs_go_to_the_file_once_one_is_attached() -> None:
    log, file = RoomLog(), ListFile()
    log.append(1, ["cancel", "buyer"])  # no file yet: nowhere
    log.file = file  # type: ignore[assignment]
    log.append(1, ["advance", 2.0])
    assert file.lines == [(1, ["advance", 2.0])]


def test_replay_starts_each_negotiation_in_turn_and_gives_each_input_to_its_owner() -> None:
    journaled: list[tuple[Role, str]] = []
    consent = Consent("I agree.", on_agree=lambda role, when: journaled.append((role, when)))
    played, log = series(), RoomLog()
    first = played.current
    entries: list[tuple[int, Op]] = [
        (1, ["consent", "buyer", "2026-01-01T00:00:00+00:00"]),
        (1, ["cancel", "buyer"]),
        (1, ["end"]),
        (2, ["cancel", "buyer"]),
    ]
    log.replay(entries, series=played, consent=consent)
    assert first.ops == [["cancel", "buyer"], ["end"]]
    assert played.current.number == 2 and played.current.ops == [["cancel", "buyer"]]
    assert consent.agreed == {"buyer": "2026-01-01T00:00:00+00:00"} and not journaled
    assert log.replayed == 2


def test_a_journal_that_goes_back_to_an_earlier_negotiation_is_refused() -> None:
    played, log = series(), RoomLog()
    entries: list[tuple[int, Op]] = [(1, ["end"]), (2, ["end"]), (1, ["cancel", "buyer"])]
    consent = Consent(None, on_agree=lambda role, when: None)
    with pytest.raises(ValueError, match="negotiation 1 after 2"):
        log.replay(entries, series=played, consent=consent)

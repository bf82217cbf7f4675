"""The series of a room: numbering, refusals and pacing, apart from any negotiation."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from dealroom.protocol import Scenario
from dealroom.protocol.generator import scenario_at
from dealroom.server.pacing import Pace
from dealroom.server.room_error import RoomError
from dealroom.server.series import Series


@dataclass
class Played:
    number: int
    scenario: Scenario
    is_open: bool = True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def series(
    count: int = 3,
    *,
    available: bool = True,
    per_minute: int | None = None,
    clock: Clock | None = None,
) -> Series[Played, Scenario]:
    return Series(
        lambda i: scenario_at(0, i, "mid") if i < count else None,
        available=available,
        start=Played,
        pace=Pace(per_minute),
        timer=clock or Clock(),
    )


def ended(played: Series[Played, Scenario]) -> Series[Played, Scenario]:
    played.current.is_open = False
    return played


def test_the_first_negotiation_starts_with_the_series_on_the_first_scenario() -> None:
    first = series().current
    assert (first.number, first.scenario) == (1, scenario_at(0, 0, "mid"))


def test_the_next_negotiation_takes_the_next_number_and_scenario() -> None:
    played = ended(series())
    assert played.can_start_next()
    second = played.start_next()
    assert (second.number, second.scenario) == (2, scenario_at(0, 1, "mid"))
    assert played.current is second


def test_a_refused_start_says_why_and_changes_nothing() -> None:
    running = series()
    unavailable = ended(series(available=False))
    over = ended(series(count=1))
    for played, code in (
        (running, "negotiation_running"),
        (unavailable, "series_unavailable"),
        (over, "series_over"),
    ):
        first = played.current
        assert not played.can_start_next()
        with pytest.raises(RoomError) as refused:
            played.start_next()
        assert refused.value.code == code and "\n" not in str(refused.value)
        assert played.current is first


def test_a_paced_start_past_the_limit_is_refused_until_the_minute_has_passed() -> None:
    clock = Clock()
    played = ended(series(count=10, per_minute=1, clock=clock))
    ended_next = played.start_next(paced=True)
    ended_next.is_open = False
    clock.now = 59.0
    with pytest.raises(RoomError) as refused:
        played.start_next(paced=True)
    assert refused.value.code == "too_many_negotiations" and played.current is ended_next
    assert played.can_start_next()  # pacing aside
    clock.now = 60.0
    assert played.start_next(paced=True).number == 3


def test_an_unpaced_start_is_never_refused_for_pace_but_counts_towards_it() -> None:
    clock = Clock()
    played = ended(series(count=10, per_minute=1, clock=clock))
    ended(played).start_next()  # a replay: not refused
    ended(played).start_next()
    with pytest.raises(RoomError) as refused:
        ended(played).start_next(paced=True)
    assert refused.value.code == "too_many_negotiations"


def test_a_negotiation_finishes_once_however_often_it_is_handed_over() -> None:
    played = series()
    assert played.finish(1) and played.finished == 1
    assert not played.finish(1) and played.finished == 1

"""Share of the oracle and the oracle gap, over hand-made seats."""

from __future__ import annotations

from decimal import Decimal

import pytest

from dealroom.analysis.metrics import SeatStats
from dealroom.analysis.oracle import (
    OracleResult,
    OracleSeat,
    oracle_gap,
    oracle_key,
    oracle_lines,
    oracle_seats,
    oracle_share,
)
from dealroom.protocol import Role, Tier


def _seat(
    scenario_id: str, *, surplus: float, gains: float, role: Role = "buyer", tier: Tier = "mid"
) -> SeatStats:
    return SeatStats(
        agent="a",
        opponent="boulware",
        role=role,
        tier=tier,
        scenario_id=scenario_id,
        gains=gains,
        deal=surplus != 0,
        surplus=surplus,
        share=surplus / gains if gains > 0 else None,
        ir_violation=False,
        list_price=1000.0,
        value=900.0,
        offers=(),
        time_fraction=1.0,
        messages=0,
        actions=0,
        invalid=0,
        leaked=False,
    )


def _oracle(surplus: str, *, exact: bool = True, simulations: int = 4) -> OracleResult:
    return OracleResult(Decimal(surplus), exact, simulations, Decimal(surplus), "anchor")


def test_share_is_the_seats_surplus_over_the_oracles_and_gap_the_rest_over_the_gains() -> None:
    row = OracleSeat(_seat("s1", surplus=30.0, gains=100.0), _oracle("60"))
    assert row.share == pytest.approx(0.5)
    assert row.gap == pytest.approx(0.3)


def test_nothing_reachable_has_no_share_and_no_gains_no_gap() -> None:
    assert OracleSeat(_seat("s1", surplus=0.0, gains=100.0), _oracle("0")).share is None
    assert OracleSeat(_seat("s1", surplus=0.0, gains=100.0), _oracle("0")).gap == 0.0
    assert OracleSeat(_seat("s1", surplus=0.0, gains=-5.0), _oracle("0")).gap is None


def test_seats_meet_their_oracle_by_scenario_role_and_counterpart() -> None:
    mine = _seat("s1", surplus=10.0, gains=100.0)
    other_seat = _seat("s1", surplus=10.0, gains=100.0, role="seller")
    oracles = {oracle_key(mine): _oracle("20")}
    assert oracle_key(mine) == ("s1", "buyer", "boulware")
    assert [r.seat for r in oracle_seats([mine, other_seat], oracles)] == [mine]


def test_means_and_intervals_over_seats() -> None:
    rows = [
        OracleSeat(_seat("s1", surplus=30.0, gains=100.0), _oracle("60")),  # share 0.5, gap 0.3
        OracleSeat(_seat("s2", surplus=40.0, gains=50.0), _oracle("40")),  # share 1.0, gap 0
        OracleSeat(_seat("s3", surplus=0.0, gains=80.0), _oracle("0")),  # no share, gap 0
    ]
    share = oracle_share(rows)
    assert share.value == pytest.approx(0.75) and share.n == 2
    assert share.low is not None and share.high is not None
    assert 0.5 <= share.low <= share.high <= 1.0
    gap = oracle_gap(rows)
    assert gap.value == pytest.approx(0.1) and gap.n == 3
    assert oracle_share(rows) == oracle_share(list(reversed(rows)))


def test_lines_per_agent_and_role_with_the_gap_by_tier() -> None:
    seats = [
        _seat("s1", surplus=30.0, gains=100.0, tier="low"),
        _seat("s2", surplus=40.0, gains=50.0, tier="high"),
        _seat("s3", surplus=20.0, gains=50.0, role="seller", tier="high"),
    ]
    oracles = {
        oracle_key(seats[0]): _oracle("60"),
        oracle_key(seats[1]): _oracle("40", exact=False, simulations=200),
        oracle_key(seats[2]): _oracle("25"),
    }
    lines = oracle_lines(seats, oracles)
    assert [(line.agent, line.role, line.n) for line in lines] == [
        ("a", "both", 3),
        ("a", "buyer", 2),
        ("a", "seller", 1),
    ]
    both = lines[0]
    assert both.exact == 2 and both.simulations == 208
    assert both.share.value == pytest.approx((0.5 + 1.0 + 0.8) / 3)
    assert set(both.gap_by_tier) == {"low", "high"}
    assert both.gap_by_tier["low"].value == pytest.approx(0.3)
    assert both.gap_by_tier["high"].value == pytest.approx((0.0 + 0.1) / 2)
    assert both.as_dict()["gap_by_tier"]["high"]["n"] == 2  # type: ignore[index]

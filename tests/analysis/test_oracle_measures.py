"""Share of the oracle and the oracle gap (``analysis.diagnostics``), over hand-made seats."""

from __future__ import annotations

from decimal import Decimal

import pytest
from test_metrics import R1

from dealroom.analysis import diagnostics as d
from dealroom.analysis.honesty import SeatHonesty
from dealroom.analysis.oracle import OracleResult, oracle_key
from dealroom.protocol import Role, Tier


def _oracle(surplus: str, *, exact: bool = True, simulations: int = 4) -> OracleResult:
    return OracleResult(Decimal(surplus), exact, simulations, Decimal(surplus), "anchor")


def _seat(
    *,
    surplus: float,
    gains: float,
    oracle: OracleResult | None,
    role: Role = "buyer",
    tier: Tier = "mid",
) -> d.SeatDiagnosis:
    return d.SeatDiagnosis(
        agent="a",
        role=role,
        tier=tier,
        cues=d.SeatCues((), (), ()),
        honesty=SeatHonesty(0, 0, (), 0, 0),
        belief=None,
        surplus=surplus,
        gains=gains,
        oracle=oracle,
    )


def test_share_is_the_seats_surplus_over_the_oracles_and_gap_the_rest_over_the_gains() -> None:
    row = _seat(surplus=30.0, gains=100.0, oracle=_oracle("60"))
    assert d.DIAGNOSTICS["oracle_share"](row) == pytest.approx((0.5, 1.0))
    assert d.DIAGNOSTICS["oracle_gap"](row) == pytest.approx((0.3, 1.0))


def test_nothing_reachable_has_no_share_and_no_gains_no_gap() -> None:
    nothing = _seat(surplus=0.0, gains=100.0, oracle=_oracle("0"))
    assert d.DIAGNOSTICS["oracle_share"](nothing) is None
    assert d.DIAGNOSTICS["oracle_gap"](nothing) == (0.0, 1.0)
    no_gains = _seat(surplus=0.0, gains=-5.0, oracle=_oracle("0"))
    assert d.DIAGNOSTICS["oracle_gap"](no_gains) is None
    assert d.DIAGNOSTICS["oracle_gap"](_seat(surplus=0.0, gains=5.0, oracle=None)) is None


def test_seats_meet_their_oracle_by_scenario_role_and_counterpart() -> None:
    # R1: A buys from B.
    assert oracle_key(R1, "buyer") == (R1.scenario.id, "buyer", "B")
    assert oracle_key(R1, "seller") == (R1.scenario.id, "seller", "A")
    buyer, seller = d.diagnose(R1, None, {oracle_key(R1, "buyer"): _oracle("30")})
    assert buyer.oracle == _oracle("30") and seller.oracle is None


def test_means_and_intervals_over_seats() -> None:
    rows = [
        _seat(surplus=30.0, gains=100.0, oracle=_oracle("60")),  # share 0.5, gap 0.3
        _seat(surplus=40.0, gains=50.0, oracle=_oracle("40")),  # share 1.0, gap 0
        _seat(surplus=0.0, gains=80.0, oracle=_oracle("0")),  # no share, gap 0
    ]
    share = d.diagnostic("oracle_share", rows)
    assert share.value == pytest.approx(0.75) and share.n == 2
    assert share.low is not None and share.high is not None
    assert 0.5 <= share.low <= share.high <= 1.0
    gap = d.diagnostic("oracle_gap", rows)
    assert gap.value == pytest.approx(0.1) and gap.n == 3
    assert d.diagnostic("oracle_share", rows) == d.diagnostic("oracle_share", rows[::-1])


def test_rows_per_agent_and_role_with_the_gap_by_tier() -> None:
    seats = [
        _seat(surplus=30.0, gains=100.0, tier="low", oracle=_oracle("60")),
        _seat(surplus=40.0, gains=50.0, tier="high", oracle=_oracle("40", exact=False)),
        _seat(surplus=20.0, gains=50.0, role="seller", tier="high", oracle=_oracle("25")),
    ]
    rows = d.diagnostic_rows(seats, ["a"], ["low", "mid", "high"])
    assert [(r.agent, r.role, r.oracle_gap.n, r.oracle_exact) for r in rows] == [
        ("a", "buyer", 2, 1),
        ("a", "seller", 1, 1),
    ]
    buyer = rows[0]
    assert buyer.oracle_share.value == pytest.approx((0.5 + 1.0) / 2)
    assert buyer.oracle_gap_by_tier["low"].value == pytest.approx(0.3)
    assert buyer.oracle_gap_by_tier["high"].value == pytest.approx(0.0)
    assert buyer.oracle_gap_by_tier["mid"].n == 0

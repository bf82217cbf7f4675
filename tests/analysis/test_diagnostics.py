"""Diagnostics: cue use on hand-built negotiations, beliefs, the oracle share, the report."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from test_metrics import R1, negotiate, scenario

from dealroom.analysis import diagnostics as d
from dealroom.analysis.oracle import OracleResult, oracle_key
from dealroom.analysis.report import build_report, format_report
from dealroom.analysis.report_html import render_html
from dealroom.analysis.report_models import DiagnosticRow
from dealroom.protocol import MakeOffer, Role, SendMessage
from dealroom.protocol.record import NegotiationRecord


def offer(price: int) -> MakeOffer:
    return MakeOffer(price=Decimal(price))


def test_cue_use_in_r1() -> None:
    # R1 (see test_metrics): seller 90 @5, buyer 50 @6, seller 80 @11, buyer 60 @12, seller 75
    # @17, buyer accepts @20; list 100.
    buyer = d.cues_of(R1, "buyer")
    # The buyer's 60 answers the seller's move 90 -> 80 (a concession): a step of +10 / 100.
    assert buyer.after_concession == pytest.approx((0.10,))
    assert buyer.after_firm == ()
    # Each buyer action answers the newest seller offer: 6-5, 12-11, 20-17.
    assert buyer.response_times == pytest.approx((1.0, 1.0, 3.0))
    seller = d.cues_of(R1, "seller")
    # The seller's 80 answers the buyer's first offer (no earlier one: no cue); its 75 answers
    # the buyer's 50 -> 60, a concession: a step of 5 / 100.
    assert seller.after_concession == pytest.approx((0.05,))
    assert seller.response_times == pytest.approx((5.0, 5.0))


def test_a_firm_offer_and_a_simultaneous_one() -> None:
    record = negotiate(
        scenario("100", "60"),
        [
            ("seller", offer(90), 5),
            ("buyer", offer(50), 5),  # at the same time: not an answer to the seller's 90
            ("seller", offer(90), 10),  # firm
            ("buyer", offer(55), 12),  # answers the firm 90 with a step of 5
            ("buyer", SendMessage(text="hello"), 13),  # nothing new to answer
        ],
        "A",
        "B",
    )
    buyer = d.cues_of(record, "buyer")
    assert buyer.after_firm == pytest.approx((0.05,))
    assert buyer.after_concession == ()
    assert buyer.response_times == pytest.approx((2.0,))  # 12 - 10; the 50 at 5 answered none


def with_belief(record: NegotiationRecord, role: Role, belief: object) -> dict[str, Any]:
    return {"players": {role: {"model_calls": 1, "belief": belief}}}


def test_a_stored_belief_is_scored_against_the_other_sides_value() -> None:
    # R1: v = 100, c = 60, L = 100. The buyer guesses the seller's cost at 70 in [50, 80].
    buyer, seller = d.diagnose(
        R1, with_belief(R1, "buyer", {"estimate": 70, "low": 50, "high": 80})
    )
    assert buyer.belief is not None and seller.belief is None
    assert buyer.belief.error == pytest.approx(0.10)
    assert buyer.belief.bias == pytest.approx(0.10)
    assert buyer.belief.covered
    swapped = {"estimate": 70, "low": 80, "high": 50}  # only low <= estimate <= high counts
    nan = {"estimate": float("nan"), "low": 1, "high": 2}
    for junk in (swapped, {"estimate": "70"}, nan, [70], None):
        assert d.diagnose(R1, with_belief(R1, "buyer", junk))[0].belief is None


def test_the_report_row_fields_are_the_diagnostics() -> None:
    extra = {"agent", "role", "oracle_gap_by_tier", "oracle_exact"}
    fields = set(DiagnosticRow.model_fields) - extra
    assert fields == set(d.DIAGNOSTICS)


def test_the_report_shows_each_section_that_has_figures() -> None:
    best = OracleResult(Decimal(40), False, 9, Decimal(40), "anchor")
    report = build_report([R1], resamples=50, oracles={oracle_key(R1, "buyer"): best})
    rows = {(r.agent, r.role): r for r in report.diagnostics}
    assert rows["A", "buyer"].oracle_share.value == pytest.approx(25 / 40)
    # R1: gains 40, the buyer got 25 of the 40 reachable: a gap of 15 / 40.
    assert rows["A", "buyer"].oracle_gap_by_tier["mid"].value == pytest.approx(15 / 40)
    assert rows["A", "buyer"].oracle_exact == 0
    assert rows["B", "seller"].oracle_gap.n == 0
    text = format_report(report)
    assert "Cue use" in text and "Oracle gap" in text and "Honesty" in text
    assert "Beliefs" not in text  # no seat stated one
    assert "Oracle gap" not in format_report(build_report([R1], resamples=50))


def test_the_html_page_has_a_table_per_section_with_figures() -> None:
    best = OracleResult(Decimal(40), True, 3, Decimal(40), "anchor")
    page = render_html(build_report([R1], resamples=50, oracles={oracle_key(R1, "buyer"): best}))
    diagnostics = page.split("<h2>Diagnostics</h2>")[1].split("<h2>")[0]
    assert diagnostics.count("<table>") == 3  # honesty, cue use, oracle gap; no beliefs
    assert "<h3>Oracle gap</h3>" in diagnostics and "gap mid" in diagnostics
    assert "<td>1 of 1</td>" in diagnostics  # the buyer's one exact oracle
    assert "Beliefs" not in diagnostics

"""The report: its JSON agrees with the metrics, its text has every section, its HTML draws."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from dealroom.analysis import metrics as m
from dealroom.analysis.report import FEATURE_LABELS, build_report, format_report
from dealroom.analysis.report_html import render_html
from dealroom.analysis.report_models import FeatureRow, Report
from dealroom.play.tournament import Tournament, TournamentConfig
from dealroom.protocol.record import NegotiationRecord
from dealroom.store.results import ResultsStore

CONFIG = TournamentConfig(agents=("boulware", "conceder", "linear"), per_pair=4, seed=5)
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> list[NegotiationRecord]:
    path = tmp_path_factory.mktemp("report") / "t.db"
    with ResultsStore(path) as store:
        Tournament(CONFIG, store).run()
        return [row.record for row in store.iter()]


@pytest.fixture(scope="module")
def typed(played: list[NegotiationRecord]) -> Report:
    return build_report(played, run="tournament", config=CONFIG.as_dict(), resamples=200)


@pytest.fixture(scope="module")
def report(typed: Report) -> dict[str, Any]:
    """The report's JSON form (what ``dealroom report --json`` prints)."""
    return typed.model_dump(mode="json")


def test_the_report_is_one_strict_json_object(report: dict[str, Any]) -> None:
    assert json.loads(json.dumps(report, allow_nan=False)) == report
    assert set(report) == {
        "run",
        "config",
        "negotiations",
        "agents",
        "tiers",
        "bootstrap",
        "overall",
        "leaderboard",
        "head_to_head",
        "per_tier",
        "features",
        "diagnostics",
        "samples",
        "usage",
    }
    assert report["usage"] is None  # no LLM seat
    assert report["negotiations"] == len(CONFIG.jobs()) == 72
    assert report["tiers"] == ["low", "mid", "high"]


def test_the_leaderboard_matches_the_metrics_and_is_ranked_by_surplus_share(
    report: dict[str, Any], played: list[NegotiationRecord]
) -> None:
    seats = m.seats(played)
    board = report["leaderboard"]
    assert [(r["agent"], r["role"]) for r in board[:3]] == [
        (report["agents"][0], role) for role in ("both", "buyer", "seller")
    ]
    assert len(board) == 3 * 3
    both = [r["surplus_share"]["value"] for r in board if r["role"] == "both"]
    assert both == sorted(both, reverse=True)
    for row in board:
        mine = [s for s in seats if s.agent == row["agent"]]
        if row["role"] != "both":
            mine = [s for s in mine if s.role == row["role"]]
        assert row["surplus_share"]["value"] == pytest.approx(m.surplus_share(mine))
        assert row["deal_rate"]["value"] == pytest.approx(m.deal_rate(mine))
        share = row["surplus_share"]
        assert share["low"] <= share["value"] <= share["high"]
        assert row["negotiations"] == len(mine)


def test_the_overall_figures_count_each_negotiation_once(
    report: dict[str, Any], played: list[NegotiationRecord]
) -> None:
    overall = report["overall"]
    with_gains = [r for r in played if r.scenario.gains > 0]
    assert overall["with_gains"] == len(with_gains)
    assert overall["deal_rate"]["n"] == len(with_gains)
    assert overall["deal_rate"]["value"] == pytest.approx(
        sum(r.outcome.status == "deal" for r in with_gains) / len(with_gains)
    )
    assert overall["ir_violations"] == 0


def test_head_to_head_and_tiers_cover_every_pairing_and_tier(report: dict[str, Any]) -> None:
    cells = {(c["agent"], c["opponent"]) for c in report["head_to_head"]}
    assert cells == {(a, b) for a in CONFIG.agents for b in CONFIG.agents if a != b}
    assert all(c["negotiations"] == 2 * 3 * 4 for c in report["head_to_head"])
    for row in report["per_tier"]:
        values = [row["tiers"][t]["surplus_share"]["value"] for t in report["tiers"]]
        assert row["share_spread"] == pytest.approx(max(values) - min(values))


def test_features_are_given_per_agent_and_seat(report: dict[str, Any]) -> None:
    rows = report["features"]
    assert {(r["agent"], r["role"]) for r in rows} == {
        (a, role) for a in CONFIG.agents for role in ("buyer", "seller")
    }
    for row in rows:
        assert set(FEATURE_LABELS) <= set(row)
        # time-dependent agents open at 0.5 (buyer) and 1.3 (seller) of the list price
        assert row["anchor_list"] == pytest.approx(0.5 if row["role"] == "buyer" else 1.3)


def test_samples_show_different_pairings_on_one_scenario(report: dict[str, Any]) -> None:
    samples = report["samples"]
    assert len(samples) == 6
    assert len({s["scenario_id"] for s in samples}) == 1
    assert len({(s["buyer"], s["seller"]) for s in samples}) == 6
    assert all(s["offers"] for s in samples)


def test_the_same_records_and_seed_give_the_same_intervals(
    typed: Report, played: list[NegotiationRecord]
) -> None:
    again = build_report(reversed(played), run="tournament", config=CONFIG.as_dict(), resamples=200)
    assert again.leaderboard == typed.leaderboard


def test_the_report_is_frozen_and_its_feature_rows_are_the_metrics_features(
    typed: Report,
) -> None:
    with pytest.raises(ValidationError):
        typed.negotiations = 0  # type: ignore[misc]
    assert list(FeatureRow.model_fields) == ["agent", "role", *m.FEATURES, "surplus_share"]
    assert list(FEATURE_LABELS) == list(m.FEATURES)
    row = typed.features[0]
    assert [row.feature(name) for name in m.FEATURES] == [getattr(row, n) for n in m.FEATURES]
    with pytest.raises(KeyError):
        row.feature("agent")


def test_the_terminal_report_has_every_section(typed: Report) -> None:
    text = format_report(typed)
    for heading in ("Leaderboard", "Head to head", "Per tier", "Strategy features"):
        assert heading in text
    assert "72 negotiations, 3 agents" in text
    assert re.search(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", text)  # a figure with its interval


def test_the_overall_deal_rate_says_of_how_many_negotiations_it_is(typed: Report) -> None:
    (overall,) = [line for line in format_report(typed).splitlines() if line.startswith("Overall")]
    with_gains = typed.overall.with_gains
    assert 0 < with_gains < 72
    assert f"] over the {with_gains} of 72 negotiations with gains, efficiency " in overall


def test_an_empty_report_still_renders() -> None:
    empty = build_report([], resamples=10)
    assert empty.negotiations == 0
    assert "0 negotiations" in format_report(empty)
    assert "<svg" not in render_html(empty).split("Offer trajectories")[1].split("Strategy")[0]


def test_the_page_is_self_contained(typed: Report) -> None:
    page = render_html(typed)
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script|<link|<img|\bsrc=|url\(|@import", page)
    assert page.count('data-plot="surplus-by-tier"') == 2
    assert page.count('data-plot="trajectory"') == 6
    assert page.count('data-plot="feature"') == len(FEATURE_LABELS)


# Counts what the browser actually drew: each plot's size and its marks.
PROBE = """<script>
const plots = [...document.querySelectorAll("svg.plot")].map(svg => {
  const box = svg.getBoundingClientRect();
  return {kind: svg.dataset.plot, width: box.width, height: box.height,
          marks: svg.querySelectorAll("polyline, circle, rect").length};
});
const out = document.createElement("pre");
out.id = "probe";
out.textContent = JSON.stringify(plots);
document.body.appendChild(out);
</script></body>"""


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (Debian chromium)")
def test_headless_chromium_draws_every_plot(typed: Report, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_html(typed).replace("</body>", PROBE), encoding="utf-8")
    dom = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    ).stdout
    probe = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.DOTALL)
    assert probe is not None, dom[-2000:]
    plots = json.loads(probe.group(1).replace("&quot;", '"'))
    kinds = [p["kind"] for p in plots]
    assert kinds.count("surplus-by-tier") == 2
    assert kinds.count("trajectory") == 6
    assert kinds.count("feature") == len(FEATURE_LABELS)
    for plot in plots:
        assert plot["width"] > 100 and plot["height"] > 100, plot
        assert plot["marks"] >= 3, plot
    shutil.rmtree(tmp_path / "profile", ignore_errors=True)

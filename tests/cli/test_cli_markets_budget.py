"""``dealroom markets`` under a model budget and with its progress line, as ``dealroom
tournament``: ``--max-calls`` / ``--max-cost`` stop a run cleanly (exit 3, nothing started past
the limit, the markets played stored) and ``--resume`` goes on; ``--max-cost`` refuses a model
seller without prices in one line; the progress line is drawn on a terminal only. On the
loopback endpoint of ``tests/fake_openai.py`` (nothing leaves the machine)."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest
from test_cli_markets_models import CALLS_PER_MARKET, markets, roster
from test_cli_tournament import FakeTerminal

from dealroom.cli import main
from fake_openai import market_seller, serve

COST_PER_MARKET = (11 * 7 * 1.0 + 49 * 2.0) / 1e6
"""What one of ``market_seller()``'s markets costs at the roster's prices (1 and 2 USD per
million input and output tokens)."""


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def stored_keys(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {key for (key,) in db.execute("SELECT key FROM markets")}


@pytest.mark.parametrize(
    ("limit", "played", "reason"),
    [
        (["--max-calls", str(CALLS_PER_MARKET)], 1, "the limit of 7 model calls was reached"),
        (["--max-cost", f"{1.5 * COST_PER_MARKET:.6f}"], 2, "the cost limit of $0.00026"),
    ],
)
def test_a_budget_stops_a_market_run_cleanly_and_resume_goes_on(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    limit: list[str],
    played: int,
    reason: str,
) -> None:
    out = tmp_path / "m.db"
    with serve(market_seller()) as fake:
        models = roster(tmp_path / "r.toml", fake)
        argv = [
            *markets(out, "--sellers", "auctioneer", "--models", str(models), per_pool=3),
            *("--llm-concurrency", "1"),
        ]
        assert main([*argv, *limit]) == 3
        text, err = capsys.readouterr()
        assert f"stopped: {reason}" in err and f"{3 - played} markets left" in err, err
        assert "\r" not in err  # no terminal: no redrawn progress line
        keys = stored_keys(out)
        assert sum("/trained/" in key for key in keys) == played  # none started past the limit
        assert sum("/auctioneer/" in key for key in keys) == 3
        assert len(fake.requests) == played * CALLS_PER_MARKET
        assert text.startswith(f"Market run 'markets': {3 + played} markets")
        # a resumed run is a new session with its own budget: without one it finishes
        assert main([*argv, "--resume"]) == 0
        assert f"{3 - played} markets played ({3 + played} already stored)" in (
            capsys.readouterr().err
        )
        assert len(fake.requests) == 3 * CALLS_PER_MARKET
    assert len(stored_keys(out)) == 6


@pytest.mark.parametrize("seller", ["llm:fake", "unpriced"])
def test_max_cost_refuses_a_model_seller_without_prices_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], seller: str
) -> None:
    out = tmp_path / "m.db"
    with serve(market_seller()) as fake:
        models = roster(tmp_path / "r.toml", fake)
        unpriced = tmp_path / "u.toml"
        unpriced.write_text(
            f'[models.unpriced]\nmodel = "fake"\nendpoint = "{fake.base_url}"\nkey_env = ""\n',
            encoding="utf-8",
        )
        argv = markets(out, "--sellers", f"auctioneer,{seller}", "--base-url", fake.base_url)
        roster_of = {"llm:fake": models, "unpriced": unpriced}[seller]
        assert main([*argv, "--models", str(roster_of), "--max-cost", "1"]) == 2
        assert not fake.requests
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"--max-cost needs a price for every LLM entry; {seller!r} has none" in err
    assert not out.exists()


def test_the_progress_line_of_a_market_run_is_drawn_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with serve(market_seller()) as fake:
        models = roster(tmp_path / "r.toml", fake)
        argv = markets(tmp_path / "m.db", "--sellers", "auctioneer", "--models", str(models))
        assert main(argv) == 0
    written = terminal.getvalue()
    last = written.split("\r")[-1].split("\x1b[K")[0]  # the line as last drawn
    assert written.startswith("\r[") and "4/4" in last and "100%" in last, written
    assert f"calls {2 * CALLS_PER_MARKET}" in last and f"${2 * COST_PER_MARKET:.4f}" in last
    assert "deals 4 (100%)" in last

"""``dealroom markets`` and ``dealroom report`` on a market run; resume after kill -9."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dealroom.cli import main
from dealroom.store.results import ResultsStore

S = "b1d3eb8f32936fa9cf89d2240bd10734"
ARGS = ["--sellers", "auctioneer,sequential,linear", "--pools", "linear,boulware+linear+conceder"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_market_tournament_stores_every_market_and_reports_per_seller_and_pool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m.db"
    code, text, err = run(
        capsys, "markets", *ARGS, "--tiers", "mid", "--per-pool", "4", "--secret", S,
        "--out", str(out),
    )  # fmt: skip
    assert code == 0 and "24 markets played (0 already stored)" in err
    assert text.startswith("Market run 'markets': 24 markets of 3 buyers")
    sellers = [line.split()[0] for line in text.splitlines()[4:7]]
    assert sorted(sellers) == ["auctioneer", "linear", "sequential"]
    assert "  boulware+linear+conceder" in text
    with ResultsStore(out, create=False) as store:
        keys = store.market_keys("markets")
        assert len(keys) == 24 and "markets/auctioneer/linear/mid/3" in keys
    code, again, _ = run(capsys, "report", str(out))
    assert (code, again) == (0, text)
    code, data, _ = run(capsys, "report", str(out), "--json")
    report = json.loads(data)
    assert {row["seller"] for row in report["sellers"]} == set(sellers)
    assert all(row["sale_rate"]["n"] == 8 for row in report["sellers"])
    code, _, err = run(
        capsys, "markets", *ARGS, "--tiers", "mid", "--per-pool", "4", "--secret", S,
        "--out", str(out),
    )  # fmt: skip
    assert code == 2 and "already holds 24 markets of run 'markets': pass --resume" in err
    code, _, err = run(
        capsys, "markets", *ARGS, "--tiers", "mid", "--per-pool", "5", "--secret", S,
        "--out", str(out), "--resume",
    )  # fmt: skip
    assert code == 2 and "per_pool: stored 4, asked 5" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--pools", "linear+boulware"], "names 2 buyers, not 3"),
        (["--sellers", "auctioner"], "unknown agent 'auctioner'"),
        (["--pools", "human"], "plays through a seat"),
        (["--buyers", "20"], "at most 16 buyers"),
    ],
)
def test_bad_market_tournament_flags_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    base = ["markets", *ARGS, "--out", str(tmp_path / "m.db"), "--secret", S]
    try:
        code = main([*base, *argv])
    except SystemExit as exited:
        code = exited.code
    _, err = capsys.readouterr()
    assert code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "m.db").exists()


def _rows(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT key, record FROM markets"))


def test_a_killed_market_tournament_resumes_to_the_same_records(tmp_path: Path) -> None:
    killed, whole = tmp_path / "killed.db", tmp_path / "whole.db"
    argv = [
        str(Path(sys.executable).parent / "dealroom"), "markets", "--sellers", "auctioneer,linear",
        "--pools", "linear", "--tiers", "low", "--per-pool", "80", "--secret", S,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([*argv, "--out", str(killed)], env=env, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if killed.exists() and len(_rows_safe(killed)) >= 20:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stored = len(_rows_safe(killed))
    assert 20 <= stored < 160, stored
    subprocess.run(
        [*argv, "--out", str(killed), "--resume"], env=env, check=True, capture_output=True
    )
    subprocess.run([*argv, "--out", str(whole)], env=env, check=True, capture_output=True)
    assert _rows(killed) == _rows(whole) and len(_rows(whole)) == 160


def _rows_safe(path: Path) -> dict[str, str]:
    try:
        return _rows(path)
    except sqlite3.Error:  # created but its table not there yet
        return {}

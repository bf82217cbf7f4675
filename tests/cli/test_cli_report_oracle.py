"""``dealroom report --oracle``: the run's oracles searched under its own secret and rules."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from dealroom.cli import main
from dealroom.store.results import ResultsStore

SECRET = "0d" * 32


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("oracle") / "t.db"
    argv = ["tournament", "--agents", "boulware,linear,zic", "--per-pair", "2", "--tiers", "mid"]
    assert main([*argv, "--secret", SECRET, "--out", str(out)]) == 0
    return out


def test_the_oracle_section_is_reported_for_every_seat(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["report", str(store), "--oracle", "--json", "--resamples", "50"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert "oracles searched" in captured.err and captured.err.count("\n") == 1
    with ResultsStore(store) as s:
        rows = [row.record for row in s.iter()]
    for row in report["diagnostics"]:
        mine = [r for r in rows if getattr(r, row["role"]) == row["agent"]]
        with_gains = [r for r in mine if r.scenario.gains > 0]
        assert row["oracle_gap"]["n"] == len(with_gains)  # every counterpart is scripted
        assert 0.0 <= row["oracle_gap"]["value"] <= 1.0
        assert row["oracle_share"]["value"] is None or row["oracle_share"]["value"] <= 1.0
        # Against a time-dependent counterpart every oracle is exact; against ZI-C (random)
        # only those that reach v - c are.
        counterpart = "seller" if row["role"] == "buyer" else "buyer"
        timed = [r for r in mine if getattr(r, counterpart) != "zic"]
        assert row["oracle_exact"] >= len([r for r in timed if r.scenario.gains > 0])
    assert main(["report", str(store), "--resamples", "50"]) == 0
    assert "Oracle gap" not in capsys.readouterr().out  # only on request


@pytest.mark.parametrize(
    ("exact", "searched", "said"),
    [(3, 3, "all exact; "), (0, 3, "all lower bounds; "), (1, 3, "1 exact, the rest lower ")],
)
def test_the_oracle_line_speaks_of_a_rest_only_when_there_is_one(
    exact: int, searched: int, said: str
) -> None:
    from dealroom.cli.report import _exactness  # pyright: ignore[reportPrivateUsage]

    assert _exactness(exact, searched).startswith(said)


def test_a_run_of_time_dependent_counterparts_has_only_exact_oracles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t.db"
    argv = ["tournament", "--agents", "boulware,linear", "--per-pair", "1", "--tiers", "mid"]
    assert main([*argv, "--secret", SECRET, "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["report", str(out), "--oracle", "--resamples", "20"]) == 0
    err = capsys.readouterr().err
    assert "oracles searched (all exact; " in err and "the rest" not in err, err


def test_a_run_without_its_secret_has_no_oracle(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "t.db"
    copy.write_bytes(store.read_bytes())
    with sqlite3.connect(copy) as db:
        (config,) = db.execute("SELECT config FROM runs").fetchone()
        data = json.loads(config)
        data.pop("secret", None)
        data.pop("seed", None)
        db.execute("UPDATE runs SET config = ?", (json.dumps(data),))
    capsys.readouterr()
    assert main(["report", str(copy), "--oracle"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "records no secret" in err

"""``dealroom markets`` with model sellers (``llm:MODEL`` and ``--models`` roster entries) beside
scripted ones, on the loopback OpenAI-compatible endpoint of ``tests/fake_openai.py`` (nothing
leaves the machine): stored once each with the model's usage, resumed after kill -9 playing only
what is missing, ranked in the same report; bad input in one line with nothing stored."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from dealroom.cli import main
from dealroom.store import paid as paid_calls
from dealroom.store.results import ResultsStore
from fake_openai import FakeOpenAI, market_seller, serve, with_latency

S = "b1d3eb8f32936fa9cf89d2240bd10734"
CALLS_PER_MARKET = 7
"""``market_seller()``'s replies in one market of 3 buyers: ask all, 4 waits, read, accept,
then text."""


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def roster(
    path: Path, fake: FakeOpenAI, *, name: str = "trained", temperature: float = 0.0
) -> Path:
    path.write_text(
        f'[models.{name}]\nmodel = "fake"\nendpoint = "{fake.base_url}"\nkey_env = ""\n'
        f"temperature = {temperature}\nconcurrency = 2\ninput_price = 1.0\noutput_price = 2.0\n",
        encoding="utf-8",
    )
    return path


def markets(out: Path, *extra: str, per_pool: int = 2) -> list[str]:
    return [
        "markets", "--pools", "linear", "--tiers", "mid", "--per-pool", str(per_pool),
        "--secret", S, "--out", str(out), *extra,
    ]  # fmt: skip


def extras(path: Path) -> dict[str, dict[str, object]]:
    with sqlite3.connect(path) as db:
        return {key: json.loads(text) for key, text in db.execute("SELECT key, extra FROM markets")}


def test_model_and_scripted_sellers_play_the_same_markets_stored_once_and_ranked_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m.db"
    with serve(market_seller()) as fake:
        models = roster(tmp_path / "r.toml", fake)
        argv = markets(out, "--sellers", "auctioneer", "--models", str(models))
        assert main(argv) == 0
        text, err = capsys.readouterr()
        assert "4 markets played (0 already stored)" in err
        assert len(fake.requests) == 2 * CALLS_PER_MARKET
        assert main([*argv, "--resume"]) == 0  # nothing is missing: nothing is played
        again, err = capsys.readouterr()
        assert "0 markets played (4 already stored)" in err and again == text
        assert len(fake.requests) == 2 * CALLS_PER_MARKET
        other = roster(tmp_path / "r2.toml", fake, temperature=0.5)
        assert (
            main(markets(out, "--sellers", "auctioneer", "--models", str(other), "--resume")) == 2
        )
        assert "entries: stored" in capsys.readouterr().err
    rows = extras(out)
    assert set(rows) == {
        f"markets/{seller}/linear/mid/{i}" for seller in ("auctioneer", "trained") for i in (0, 1)
    }
    assert rows["markets/auctioneer/linear/mid/0"] == {}
    seat = rows["markets/trained/linear/mid/0"]["seller"]
    assert isinstance(seat, dict)
    assert seat["model_calls"] == CALLS_PER_MARKET and "error" not in seat
    assert seat["cost_usd"] == pytest.approx((11 * 7 * 1.0 + 49 * 2.0) / 1e6)
    assert seat["conversation"]["messages"][0]["content"].startswith(  # type: ignore[index]
        "You are the seller in a one-item market with 3 buyers"
    )
    with ResultsStore(out, create=False) as store:
        records = dict(store.iter_markets("markets"))
        assert (store.run_config("markets") or {})["entries"]["trained"]["model"] == "fake"
    for i in (0, 1):  # the same market for both sellers
        model, scripted = (
            records[f"markets/trained/linear/mid/{i}"],
            records[f"markets/auctioneer/linear/mid/{i}"],
        )
        assert model.scenario == scripted.scenario and model.seller == "trained"
    lines = text.splitlines()
    assert sorted(line.split()[0] for line in lines[4:6]) == ["auctioneer", "trained"]
    table = lines.index("Model seats")
    assert lines[table + 2].split()[:5] == ["trained", "seller", "2", "14", "0"]
    assert main(["report", str(out)]) == 0
    assert capsys.readouterr().out == text
    assert main(["report", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(row["model"], row["role"]) for row in report["models"]] == [("trained", "seller")]
    assert report["models"][0]["model_calls"] == 14


def test_an_llm_spec_sells_on_the_base_url_as_in_dealroom_tournament(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m.db"
    with serve(market_seller()) as fake:
        argv = markets(out, "--sellers", "sequential,llm:fake", "--base-url", fake.base_url)
        assert main([*argv, "--per-pool", "1"]) == 0
    assert "Model seats" in capsys.readouterr().out
    assert {r["model"] for r in fake.requests} == {"fake"}
    assert set(extras(out)) == {"markets/sequential/linear/mid/0", "markets/llm:fake/linear/mid/0"}


CLI = ("-c", "import sys; from dealroom.cli import main; sys.exit(main(sys.argv[1:]))")


def _stored(path: Path) -> dict[str, str]:
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return dict(db.execute("SELECT key, record FROM markets"))
    except sqlite3.Error:  # created but its table not there yet
        return {}


def unstored_paid_calls(path: Path) -> list[dict[str, Any]]:
    """Journaled model calls of markets not (yet) stored: the journal is read first, so a
    market stored in between counts as stored."""
    paid = list(paid_calls.read(paid_calls.paid_path(path)))
    kept = {extra.get("attempt") for extra in extras(path).values()} if path.exists() else set()
    return [line for line in paid if line["attempt"] not in kept]


def test_a_run_killed_mid_way_resumes_playing_only_the_missing_markets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kill -9 once some of the model's markets are stored and one is in flight, some of its
    model calls paid for; the resumed run plays only the others (its requests are exactly
    theirs), the store ends as an uninterrupted run's, and the report counts the lost market's
    calls as paid, not stored (the journal)."""
    killed, whole = tmp_path / "killed.db", tmp_path / "whole.db"
    with serve(with_latency(market_seller(), 0.02)) as fake:
        models = roster(tmp_path / "r.toml", fake)
        argv = markets(killed, "--sellers", "auctioneer", "--models", str(models), per_pool=6)
        child = subprocess.Popen(
            [sys.executable, *CLI, *argv, "--llm-concurrency", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and child.poll() is None:
            stored_models = sum("/trained/" in key for key in _stored(killed))
            if stored_models >= 2 and unstored_paid_calls(killed):
                break
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert child.returncode == -signal.SIGKILL, "the run ended before it could be killed"
        before = _stored(killed)
        model_before = sum("/trained/" in key for key in before)
        assert 2 <= model_before < 6 and sum("/auctioneer/" in k for k in before) == 6
        seen = len(fake.requests)
        assert main([*argv, "--resume"]) == 0
        err = capsys.readouterr().err
        assert f"{12 - len(before)} markets played ({len(before)} already stored)" in err
        assert len(fake.requests) - seen == (6 - model_before) * CALLS_PER_MARKET
        assert (
            main(markets(whole, "--sellers", "auctioneer", "--models", str(models), per_pool=6))
            == 0
        )
    after = _stored(killed)
    assert {k: v for k, v in after.items() if k in before} == before  # none stored twice
    assert after == _stored(whole) and len(after) == 12
    # Every model call was journaled as it returned, under its market's key and attempt: the
    # killed market's calls were paid for and lost, and the report counts them apart.
    paid = list(paid_calls.read(paid_calls.paid_path(killed)))
    lost = unstored_paid_calls(killed)
    assert 1 <= len(lost) <= CALLS_PER_MARKET and len({line["key"] for line in lost}) == 1
    assert lost[0]["key"] not in before and lost[0]["key"] in after  # replayed on resume
    assert {(line["run"], line["role"], line["agent"]) for line in paid} == {
        ("markets", "seller", "trained")
    }
    assert len(paid) == 6 * CALLS_PER_MARKET + len(lost)
    capsys.readouterr()
    assert main(["report", str(killed), "--json"]) == 0
    unstored = json.loads(capsys.readouterr().out)["unstored"]
    assert unstored["calls"] == len(lost)
    assert unstored["input_tokens"] == sum(line["input_tokens"] for line in lost)
    assert unstored["cost_usd"] == pytest.approx(sum(line["cost_usd"] for line in lost))
    assert main(["report", str(killed)]) == 0
    assert f"Run: paid, not stored: {len(lost)} model calls (" in capsys.readouterr().out
    assert main(["report", str(whole)]) == 0
    assert "paid, not stored" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--sellers", "auctioneer,nobody", "--models", "ROSTER"], "unknown agent 'nobody'"),
        (["--sellers", "auctioneer", "--models", "MISSING"], "MISSING"),
        (["--sellers", "llm:m", "--base-url", "http://127.0.0.1:9/v1"], "127.0.0.1:9"),
        (["--sellers", "auctioneer", "--models", "ROSTER", "--elicit-beliefs"], "elicit"),
        (["--models", "AUCTIONEER"], "'auctioneer' has the name of a scripted market seller"),
        (["--sellers", ""], "no seller given"),
        (
            ["--sellers", "trained", "--models", "ROSTER", "--pools", "llm:m"],
            "plays through a seat",
        ),
    ],
)
def test_bad_model_sellers_are_one_line_errors_and_store_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    out = tmp_path / "m.db"
    with serve(market_seller()) as fake:
        paths = {
            "ROSTER": str(roster(tmp_path / "r.toml", fake)),
            "AUCTIONEER": str(roster(tmp_path / "a.toml", fake, name="auctioneer")),
            "MISSING": str(tmp_path / "missing.toml"),
        }
        full = markets(out, *[paths.get(a, a) for a in argv])
        try:
            code = main(full)
        except SystemExit as exited:
            code = exited.code
        assert not fake.requests
    message = paths.get(message, message)
    _, err = capsys.readouterr()
    assert code == 2 and message in err and "Traceback" not in err, err
    assert err.count("\n") == 1, err
    assert not out.exists()

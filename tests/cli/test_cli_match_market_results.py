"""``dealroom match --buyers N --results FILE.db``: the market is stored once, in the store's
``markets`` table under a deterministic key of the run ``market-match``, with its model seats'
data by seat, and ``dealroom report`` reads it as a market run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dealroom.cli import main
from dealroom.protocol.market_referee import MarketRecord
from dealroom.store import paid as paid_calls
from dealroom.store.results import ResultsStore
from fake_openai import market_seats, market_seller, serve

S = "b1d3eb8f32936fa9cf89d2240bd10734"
OTHER = "0f" * 16
MARKET = ["match", "--buyers", "3", "--seller", "auctioneer", "--buyer", "linear"]
FAST = ["--model-timeout", "1", "--model-attempts", "2", "--model-backoff", "0.01"]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "k")


def stored(path: Path) -> dict[str, tuple[str, MarketRecord]]:
    with ResultsStore(path, create=False) as store:
        extras = store.market_extras()
        return {
            key: (json.dumps(extras.get(key, {}), sort_keys=True), record)
            for key, record in store.iter_markets("market-match")
        }


def test_a_stored_market_is_the_printed_one_under_its_key_and_the_report_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    assert main([*MARKET, "--secret", S, "--json", "--results", str(db)]) == 0
    printed = MarketRecord.model_validate_json(capsys.readouterr().out)
    rows = stored(db)
    key = f"market-match/{printed.scenario.id}/auctioneer/linear"
    assert list(rows) == [key]
    extra, record = rows[key]
    assert record == printed
    assert json.loads(extra) == {"secret": S}
    assert main(["report", str(db)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Market run 'market-match': 1 markets of 3 buyers")
    assert "  auctioneer           1  " in out


def test_the_same_market_twice_is_refused_before_play_and_stored_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    assert main([*MARKET, "--secret", S, "--results", str(db)]) == 0
    capsys.readouterr()
    before = db.read_bytes()
    assert main([*MARKET, "--secret", S, "--results", str(db)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and "is already stored (give another --secret)" in err
    assert db.read_bytes() == before
    assert main([*MARKET, "--secret", OTHER, "--results", str(db)]) == 0  # another market
    assert len(stored(db)) == 2


def test_model_seats_data_is_stored_by_seat_and_the_report_counts_every_model_seat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    with serve(market_seats()) as fake:
        argv = [
            "match", "--buyers", "3", "--seller", "llm:fake", "--buyer", "llm:fake,linear,llm:fake",
            "--base-url", fake.base_url, "--secret", S, *FAST, "--json", "--results", str(db),
        ]  # fmt: skip
        assert main(argv) == 0
    body = json.loads(capsys.readouterr().out)
    printed = body.pop("extra")
    [(key, (extra, record))] = stored(db).items()
    assert key == f"market-match/{record.scenario.id}/llm:fake/llm:fake+linear+llm:fake"
    assert record == MarketRecord.model_validate(body)
    kept = json.loads(extra)
    assert kept == {**printed, "secret": S, "attempt": kept["attempt"]}
    assert list(printed) == ["seller", "b1", "b3"]
    # every model seat's calls were journaled as they returned, under the market's key and
    # the attempt stored with it: none is paid and not stored
    paid = list(paid_calls.read(paid_calls.paid_path(db)))
    assert {(line["run"], line["key"], line["attempt"]) for line in paid} == {
        ("market-match", key, kept["attempt"])
    }
    for seat, role in (("seller", "seller"), ("b1", "buyer"), ("b3", "buyer")):
        lines = [line for line in paid if line["seat"] == seat]
        assert {(line["role"], line["agent"]) for line in lines} == {(role, "llm:fake")}
        assert len(lines) == printed[seat]["model_calls"]
        assert sum(line["output_tokens"] for line in lines) == printed[seat]["output_tokens"]
    assert main(["report", str(db), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    rows = {(row["model"], row["role"]): row for row in report["models"]}
    assert list(rows) == [("llm:fake", "buyer"), ("llm:fake", "seller")]
    buyers, seller = rows["llm:fake", "buyer"], rows["llm:fake", "seller"]
    assert (buyers["seats"], seller["seats"]) == (2, 1)
    for key in ("model_calls", "input_tokens", "output_tokens", "invalid_tool_calls"):
        assert buyers[key] == printed["b1"][key] + printed["b3"][key] > 0 or key.startswith("inv")
        assert seller[key] == printed["seller"][key]
    assert report["unstored"]["calls"] == 0
    assert main(["report", str(db)]) == 0
    text = capsys.readouterr().out.splitlines()
    table = text.index("Model seats")
    assert [line.split()[:4] for line in text[table + 2 : table + 4]] == [
        ["llm:fake", "buyer", "2", str(buyers["model_calls"])],
        ["llm:fake", "seller", "1", str(seller["model_calls"])],
    ]


def test_a_model_sellers_calls_against_scripted_buyers_are_journaled_under_the_stored_attempt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    with serve(market_seller()) as fake:
        argv = [
            "match", "--buyers", "3", "--seller", "llm:fake", "--buyer", "linear",
            "--base-url", fake.base_url, "--secret", S, *FAST, "--results", str(db),
        ]  # fmt: skip
        assert main(argv) == 0
    capsys.readouterr()
    [(key, (extra, _))] = stored(db).items()
    kept = json.loads(extra)
    paid = list(paid_calls.read(paid_calls.paid_path(db)))
    assert len(paid) == kept["seller"]["model_calls"] == len(fake.requests) > 0
    assert {(line["key"], line["attempt"], line["seat"]) for line in paid} == {
        (key, kept["attempt"], "seller")
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seller", "auction"], "unknown agent 'auction'"),
        (["--clock", "wall"], "markets play on the virtual clock"),
        (["--scenario", "mid-0"], "--scenario is for bilateral matches"),
    ],
)
def test_bad_input_with_results_is_one_line_and_creates_no_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    db = tmp_path / "r.db"
    assert main([*MARKET, "--secret", S, "--results", str(db), *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and message in err
    assert not db.exists()


def test_a_file_that_is_no_store_is_refused_before_play_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "notes.db"
    db.write_text("not a database\n")
    assert main([*MARKET, "--secret", S, "--results", str(db)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "cannot write the results store" in err
    assert db.read_text() == "not a database\n"

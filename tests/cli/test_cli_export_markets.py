"""``dealroom export-sft FILE.db --markets``: a market tournament's sellers as SFT rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dealroom.cli import main
from dealroom.engine.market import market_view
from dealroom.protocol.market_scenarios import market_at
from dealroom.protocol.market_seat import market_tools
from dealroom.protocol.market_text import market_briefing
from dealroom.protocol.rules import DEFAULT_RULES
from dealroom.protocol.secret import Secret
from dealroom.training.market_trl import MarketSellerEnv

SECRET = "5eed5eed5eed5eed5eed5eed5eed5eed"
SECRET_SEED = Secret.from_hex(SECRET)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("markets") / "m.db"
    argv = [
        "markets", "--sellers", "auctioneer,sequential", "--pools", "conceder,linear+boulware",
        "--buyers", "2", "--tiers", "mid", "--per-pool", "2", "--out", str(db),
        "--secret", SECRET,
    ]  # fmt: skip
    assert main(argv) == 0
    return db


def test_every_stored_markets_seller_becomes_a_row_of_the_seat_it_is_trained_in(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rows.jsonl"
    assert main(["export-sft", str(store), "--markets", "--out", str(out)]) == 0
    assert "wrote 8 transcripts" in capsys.readouterr().err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    keys = [row["metadata"]["key"] for row in rows]
    assert keys == sorted(keys) and keys[0] == "markets/auctioneer/conceder/mid/0"
    for row in rows:
        meta = row["metadata"]
        index = int(meta["key"].rsplit("/", 1)[1])
        market = market_at(SECRET_SEED, index, "mid", 2)
        assert row["messages"][0]["content"] == market_briefing(market_view(market))
        assert row["tools"] == market_tools(DEFAULT_RULES)
        assert meta["role"] == "seller" and meta["run"] == "markets"
    # The row is what the training environment returns for the same calls.
    row = rows[0]
    env = MarketSellerEnv(pool="conceder", buyers=2, seed=SECRET_SEED)
    env.reset(index=0)
    for asked, answered in zip(row["messages"][1::2], row["messages"][2::2], strict=True):
        function = asked["tool_calls"][0]["function"]
        assert getattr(env, function["name"])(**function["arguments"]) == answered["content"]


def test_filters_choose_the_sellers_and_their_outcomes(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    argv = ["export-sft", str(store), "--markets", "--out", str(out)]
    assert main([*argv, "--agent", "sequential", "--deals-only"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all(r["metadata"]["agent"] == "sequential" for r in rows)
    assert all(r["metadata"]["status"] == "deal" for r in rows)
    assert main([*argv, "--min-share", "0.2"]) == 0
    shares = [json.loads(line)["metadata"]["seller_share"] for line in out.read_text().splitlines()]
    assert shares and all(s >= 0.2 for s in shares)


def test_a_buyers_role_is_refused_in_one_line(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rows.jsonl"
    code = main(["export-sft", str(store), "--markets", "--role", "buyer", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "--markets exports the sellers' transcripts" in err
    assert err.count("\n") == 1 and not out.exists()

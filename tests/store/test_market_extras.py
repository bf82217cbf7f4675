"""The markets table keeps what a model seller's seat reported beside each market (``extra``);
a store written before that column existed gains it when opened for writing, keeps its
markets, and reads as having none when opened read-only."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from dealroom.agents.market import market_seller
from dealroom.engine.market import play_market
from dealroom.play.registry import resolve
from dealroom.protocol.market_referee import MarketRecord
from dealroom.protocol.market_scenarios import market_at
from dealroom.store.results import ResultsStore

OLD_MARKETS = """
CREATE TABLE negotiations (key TEXT PRIMARY KEY, run TEXT NOT NULL, buyer TEXT NOT NULL,
    seller TEXT NOT NULL, scenario_id TEXT NOT NULL, tier TEXT NOT NULL, status TEXT NOT NULL,
    end_reason TEXT NOT NULL, price TEXT, record TEXT NOT NULL,
    extra TEXT NOT NULL DEFAULT '{}', finished_at TEXT NOT NULL);
CREATE TABLE runs (run TEXT PRIMARY KEY, config TEXT NOT NULL);
CREATE TABLE markets (key TEXT PRIMARY KEY, run TEXT NOT NULL, seller TEXT NOT NULL,
    buyers TEXT NOT NULL, market_id TEXT NOT NULL, tier TEXT NOT NULL, status TEXT NOT NULL,
    end_reason TEXT NOT NULL, price TEXT, record TEXT NOT NULL, finished_at TEXT NOT NULL);
"""


def _market(index: int) -> MarketRecord:
    market = market_at(3, index, "mid", 2)
    buyers = [resolve("linear")] * 2
    names = ("auctioneer", ("linear", "linear"))
    return play_market(market, market_seller("auctioneer"), buyers, names=names, seed=3)


def test_a_market_is_stored_with_its_extra_and_read_back_by_key(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "r.db") as store:
        assert store.add_market("r/a/0", _market(0), run="r", extra={"seller": {"model_calls": 3}})
        assert store.add_market("r/a/1", _market(1), run="r")
        assert not store.add_market("r/a/0", _market(0), run="r", extra={"seller": {}})
        assert store.market_extras("r") == {"r/a/0": {"seller": {"model_calls": 3}}}
        assert store.market_extras("other") == {}


def test_the_sales_of_a_run_are_counted_from_the_stored_markets(tmp_path: Path) -> None:
    records = [_market(i) for i in range(4)]
    sold = sum(r.outcome.status == "deal" for r in records)
    with ResultsStore(tmp_path / "r.db") as store:
        assert store.market_sales("r") == 0
        for i, record in enumerate(records):
            store.add_market(f"r/a/{i}", record, run="r")
        store.add_market("q/a/0", records[0], run="q")
        assert store.market_sales("r") == sold
        assert store.market_sales() == sold + (records[0].outcome.status == "deal")
    assert sold  # the auctioneer sells to linear buyers


def test_a_store_from_before_market_extras_gains_the_column_and_keeps_its_markets(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    record = _market(0)
    with sqlite3.connect(path) as db:
        db.executescript(OLD_MARKETS)
        db.execute(
            "INSERT INTO markets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ("r/a/0", "r", "auctioneer", "[]", "m", "mid", "deal", "accepted", None,
             record.model_dump_json(), "2026-01-01T00:00:00+00:00"),
        )  # fmt: skip
    db.close()
    with ResultsStore(path, create=False) as store:  # read-only: no column, no extras
        assert store.market_extras("r") == {}
        assert [key for key, _ in store.iter_markets("r")] == ["r/a/0"]
    with ResultsStore(path) as store:
        assert store.add_market("r/a/1", _market(1), run="r", extra={"seller": {"x": 1}})
        assert store.market_extras("r") == {"r/a/1": {"seller": {"x": 1}}}
        assert dict(store.iter_markets("r"))["r/a/0"] == record

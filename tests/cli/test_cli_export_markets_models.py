"""``dealroom export-sft FILE.db --markets`` of model sellers: the conversation the model read and
wrote, stored beside its market, as rows in the shapes of the scripted sellers' rows and of the
training environment (``MarketSellerEnv``); a market whose model failed is skipped and counted in
the summary line; ``train sft --store FILE.db --markets`` reads the same rows. The model is
``tests/fake_openai.py``'s market seller on loopback."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from dealroom.cli import main
from dealroom.engine.market import market_view
from dealroom.protocol.market_scenarios import market_at
from dealroom.protocol.market_seat import market_tools
from dealroom.protocol.market_text import market_briefing
from dealroom.protocol.rules import DEFAULT_RULES
from dealroom.protocol.secret import Secret
from dealroom.store.results import ResultsStore
from dealroom.training import trainers
from dealroom.training.lengths import Lengths
from dealroom.training.market_trl import MarketSellerEnv
from fake_openai import Brain, Reply, Status, market_seller, serve

S = "b1d3eb8f32936fa9cf89d2240bd10734"
SEED = Secret.from_hex(S)
FAILED = market_briefing(market_view(market_at(SEED, 1, "mid", 3)))
"""The briefing of the market in which the model's endpoint fails for good (its third call)."""


def failing_in_market_1(brain: Brain) -> Brain:
    def failing(request: dict[str, Any]) -> Reply:
        messages = request["messages"]
        if messages[0]["content"] == FAILED and len(messages) > 3:
            return Status(400)
        return brain(request)

    return failing


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A market tournament of ``auctioneer`` and the roster's ``trained`` model (2 markets of 3
    linear buyers each), the model failing in its second market; the store and the requests."""
    tmp = tmp_path_factory.mktemp("model-markets")
    db = tmp / "m.db"
    with serve(failing_in_market_1(market_seller())) as fake:
        (tmp / "r.toml").write_text(
            f'[models.trained]\nmodel = "fake"\nendpoint = "{fake.base_url}"\nkey_env = ""\n'
            "temperature = 0.0\nconcurrency = 1\n",
            encoding="utf-8",
        )
        argv = [
            "markets", "--sellers", "auctioneer", "--models", str(tmp / "r.toml"),
            "--pools", "linear", "--tiers", "mid", "--per-pool", "2", "--secret", S,
            "--out", str(db),
        ]  # fmt: skip
        assert main(argv) == 0
        return db, list(fake.requests)


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def shapes(row: dict[str, Any]) -> set[tuple[str, ...]]:
    return {(m["role"], *sorted(m)) for m in row["messages"] if m["role"] != "assistant"} | {
        ("assistant", *sorted(m)) for m in row["messages"] if m.get("tool_calls")
    }


def test_a_model_sellers_row_is_the_conversation_its_model_read_in_the_training_shapes(
    played: tuple[Path, list[dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, requests = played
    out = tmp_path / "rows.jsonl"
    assert main(["export-sft", str(db), "--markets", "--agent", "trained", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err == (
        f"wrote 1 transcripts to {out}; skipped 1 whose model conversation ended in an error\n"
    )
    [row] = rows_of(out)
    market = market_at(SEED, 0, "mid", 3)
    meta = row["metadata"]
    assert meta["key"] == "markets/trained/linear/mid/0" and meta["source"] == "conversation"
    assert (meta["agent"], meta["role"], meta["status"]) == ("trained", "seller", "deal")
    messages = row["messages"]
    assert messages[0] == {"role": "user", "content": market_briefing(market_view(market))}
    # What the model read: its last request, message for message (the row's tool results name
    # their tool and its calls' arguments are objects, as in a scripted seller's row).
    last = [r for r in requests if r["messages"][0]["content"] == messages[0]["content"]][-1]
    assert row["tools"] == last["tools"] == market_tools(DEFAULT_RULES)
    read = last["messages"]
    # The market ended at the sale: the model was not asked again after its accept.
    assert len(messages) == len(read) + 2 and messages[-1]["role"] == "tool"
    assert messages[-2]["tool_calls"][0]["function"]["name"] == "accept"
    names: dict[str, str] = {}
    for mine, theirs in zip(messages, read, strict=False):
        assert mine["role"] == theirs["role"]
        assert mine["content"] == (theirs.get("content") or "")
        calls = theirs.get("tool_calls") or []
        names |= {call["id"]: call["function"]["name"] for call in calls}
        assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
            (c["id"], c["function"]["name"], json.dumps(c["function"]["arguments"]))
            for c in mine.get("tool_calls", [])
        ]
        if mine["role"] == "tool":
            assert mine["tool_call_id"] == theirs["tool_call_id"]
            assert mine["name"] == names[mine["tool_call_id"]]
    # The same calls in the training environment return the same texts.
    env = MarketSellerEnv(pool="linear", buyers=3, seed=SEED)
    env.reset(index=0)
    calls = {c["id"]: c["function"] for m in messages for c in m.get("tool_calls", [])}
    for answered in (m for m in messages if m["role"] == "tool"):
        function = calls[answered["tool_call_id"]]
        assert getattr(env, function["name"])(**function["arguments"]) == answered["content"]
    # A scripted seller's row has the same shapes. The row holds no text the model did not
    # read or write (a buyer's value shows only where its buyer bid it), nor does its metadata.
    with ResultsStore(db, create=False) as store:
        stored = store.market_extras()[meta["key"]]["seller"]["conversation"]["messages"]
    assert [m["content"] or "" for m in stored] == [m["content"] for m in messages]
    assert not [k for k in meta if "value" in k]
    assert (
        main(["export-sft", str(db), "--markets", "--agent", "auctioneer", "--out", str(out)]) == 0
    )
    assert shapes(rows_of(out)[0]) == shapes(row)


def test_json_arguments_and_the_outcome_filters_apply_to_model_sellers(
    played: tuple[Path, list[dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = played
    out = tmp_path / "rows.jsonl"
    argv = ["export-sft", str(db), "--markets", "--agent", "trained", "--out", str(out)]
    assert main([*argv, "--json-arguments", "--deals-only"]) == 0
    [row] = rows_of(out)
    assert all(
        isinstance(c["function"]["arguments"], str)
        for m in row["messages"]
        for c in m.get("tool_calls", [])
    )
    share = row["metadata"]["seller_share"]
    capsys.readouterr()
    assert main([*argv, "--min-share", str(min(1.0, max(0.0, share + 0.01)))]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1 and "no transcript matches the filters; skipped 1 whose model" in err
    )
    assert main(["export-sft", str(db), "--markets", "--agent", "llm", "--out", str(out)]) == 2


def test_a_stored_conversation_of_another_form_is_skipped_and_counted(
    played: tuple[Path, list[dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "m.db"
    db.write_bytes(played[0].read_bytes())
    key = "markets/trained/linear/mid/0"
    with ResultsStore(db, create=False) as store:
        seller = store.market_extras()[key]["seller"]
    seller["conversation"]["messages"].insert(0, {"role": "system", "content": "Be terse."})
    with sqlite3.connect(db) as raw:
        raw.execute(
            "UPDATE markets SET extra = ? WHERE key = ?", (json.dumps({"seller": seller}), key)
        )
    out = tmp_path / "rows.jsonl"
    argv = ["export-sft", str(db), "--markets", "--out", str(out)]
    assert main(argv) == 0  # the scripted seller's two markets
    err = capsys.readouterr().err
    assert err.endswith(
        "wrote 2 transcripts to "
        f"{out}; skipped 1 that do not replay (another surface: 1) and 1 whose model "
        "conversation ended in an error\n"
    )
    assert [r["metadata"]["agent"] for r in rows_of(out)] == ["auctioneer", "auctioneer"]


def test_train_sft_reads_the_model_sellers_rows_from_the_store(
    played: tuple[Path, list[dict[str, Any]]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db, _ = played
    given: list[list[dict[str, Any]]] = []

    def run_sft(settings: Any, rows: list[dict[str, Any]]) -> trainers.Result:
        given.append(rows)
        trainers.template_rows(rows, settings.arguments)  # what the trainer feeds its template
        history = [{"loss": 1.0, "step": 1}]
        lengths = Lengths(
            count=1, longest=10, longest_prompt=5, longest_completion=5, median_completion=5
        )
        return trainers.Result(settings.output_dir, 1, 1.0, history, lengths, learned=True)

    monkeypatch.setattr(trainers, "run_sft", run_sft)
    out = tmp_path / "rows.jsonl"
    assert main(["export-sft", str(db), "--markets", "--agent", "trained", "--out", str(out)]) == 0
    train = ["train", "sft", "--model", "m", "--output-dir", str(tmp_path / "o")]
    assert main([*train, "--store", str(db), "--markets", "--agent", "trained"]) == 0
    assert given == [rows_of(out)]
    capsys.readouterr()
    assert main([*train, "--data", str(out), "--markets"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--markets reads a results store" in err
    assert main([*train, "--store", str(db), "--markets", "--role", "buyer"]) == 2
    assert "drop --role buyer" in capsys.readouterr().err

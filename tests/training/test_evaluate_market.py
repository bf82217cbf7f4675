"""``dealroom train evaluate --buyers N --pools ...``: a served checkpoint as a market's seller,
on the loopback endpoint of tests/fake_openai.py (nothing leaves the machine): held-out markets,
stored as a market tournament that resumes, the report and the model's line printed; the
conversation it reads is the training environment's (the same requests as TRL's loop makes in
``MarketSellerEnv`` on the same markets); bad flags in one line with nothing stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dealroom.cli import main
from dealroom.protocol import DEFAULT_RULES, model_seat
from dealroom.protocol.market_scenarios import market_at
from dealroom.protocol.market_seat import market_tools
from dealroom.store.results import ResultsStore
from dealroom.training.evaluate import Completion, market_rollout
from dealroom.training.market_trl import MarketSellerEnv
from fake_openai import Brain, Text, ToolCalls, market_seller, serve

POOLS = "linear,boulware+linear+conceder"


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def evaluate(base_url: str, out: Path, *extra: str) -> list[str]:
    return [
        "train", "evaluate", "--model", "fake", "--base-url", base_url, "--name", "trained",
        "--buyers", "3", "--pools", POOLS, "--scenarios", "2", "--out", str(out), *extra,
    ]  # fmt: skip


def test_evaluate_buyers_sells_on_held_out_markets_stored_as_a_market_run_that_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "eval.db"
    with serve(market_seller()) as fake:
        argv = evaluate(fake.base_url, db)
        assert main(argv) == 0
        out, err = capsys.readouterr()
        calls = len(fake.requests)
        assert main([*argv, "--resume"]) == 0  # nothing left to play
        assert len(fake.requests) == calls
        assert "0 markets played (4 already stored)" in capsys.readouterr().err
        assert main([*argv, "--resume", "--temperature", "0.7"]) == 2
        assert "different configuration" in capsys.readouterr().err
        assert main([*argv, "--resume", "--scenario-seed", "0"]) == 2
        assert "seed: stored 1, asked 0" in capsys.readouterr().err
    assert "at most 100 tool-calling turns per market" in err
    assert "4 markets played (0 already stored)" in err
    assert err.splitlines()[-1].startswith(
        "dealroom: trained as market seller: 4 markets, sale rate 100%, seller share "
    )
    assert out.startswith("Market run 'evaluate': 4 markets of 3 buyers")
    assert "\nModel seats\n" in out
    with ResultsStore(db, create=False) as store:
        records = dict(store.iter_markets("evaluate"))
        extras = store.market_extras("evaluate")
        config = store.run_config("evaluate") or {}
    assert set(records) == {
        f"evaluate/trained/{pool}/mid/{i}" for pool in POOLS.split(",") for i in (0, 1)
    }
    assert config["seed"] == 1 and config["entries"]["trained"]["max_tool_rounds"] == 100
    for key, record in records.items():
        index = int(key.rsplit("/", 1)[1])
        assert record.seller == "trained"
        assert record.scenario == market_at(1, index, "mid", 3)
        # held out: GRPO's market rows draw market_at(its --scenario-seed, 0 by default, index)
        assert record.scenario.base != market_at(0, index, "mid", 3).base
        assert extras[key]["seller"]["model_calls"] >= 1
    assert sum(e["seller"]["model_calls"] for e in extras.values()) == calls
    assert main(["report", str(db), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [row["seller"] for row in report["sellers"]] == ["trained"]


def _rollout_requests(brain: Brain, index: int, pool: str) -> list[list[dict[str, Any]]]:
    """What TRL's loop sends in the training environment for market ``index`` of seed 1."""
    sent: list[list[dict[str, Any]]] = []

    def complete(messages: Any, tools: Any) -> Completion:
        request = {"messages": json.loads(json.dumps(list(messages))), "tools": tools}
        sent.append(request["messages"])
        reply = brain(request)
        if isinstance(reply, Text):
            return Completion(content=reply.text)
        assert isinstance(reply, ToolCalls)
        return Completion(content=reply.text or "", tool_calls=reply.calls)

    env = MarketSellerEnv(pool=pool, buyers=3, seed=1)
    market_rollout(env, complete, {"index": index, "tier": "mid"}, seller="trained")
    return sent


def test_evaluate_buyers_sends_what_the_training_environment_sends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The checkpoint reads the conversation GRPO trained it on: the requests of ``train
    evaluate --buyers`` are those TRL's loop sends in ``MarketSellerEnv`` on the same markets
    (seed 1, each index and pool), conversation for conversation, with the same tools."""
    brain = market_seller()
    with serve(brain) as fake:
        assert main(evaluate(fake.base_url, tmp_path / "e.db")) == 0
    capsys.readouterr()
    expected = [
        messages
        for pool in POOLS.split(",")
        for index in (0, 1)
        for messages in _rollout_requests(brain, index, pool)
    ]
    assert len({m[0]["content"] for m in expected}) == 2  # two markets, each for two pools
    assert _canonical([r["messages"] for r in fake.requests]) == _canonical(expected)
    assert all(r["tools"] == market_tools(DEFAULT_RULES) for r in fake.requests)


def _canonical(requests: list[list[dict[str, Any]]]) -> list[str]:
    """Every request's conversation as the model reads it, in one order (markets played
    concurrently interleave their requests)."""
    return sorted(json.dumps(model_seat.canonical(m), sort_keys=True) for m in requests)


@pytest.mark.parametrize(
    ("drop", "add", "message"),
    [
        ("--buyers", [], "--pools needs --buyers N"),
        ("--pools", [], "--buyers N evaluates a market seller: give --pools"),
        (None, ["--opponents", "boulware"], "--opponents is for negotiations"),
        (None, ["--role", "buyer"], "--role buyer: in a market the model is the seller"),
        (None, ["--models", "r.toml"], "--models is for negotiations"),
        (None, ["--pools", "linear+boulware"], "names 2 buyers, not 3"),
        (None, ["--pools", "nobody"], "unknown agent 'nobody'"),
        (None, ["--tiers", "huge"], "unknown tier"),
    ],
)
def test_evaluate_buyers_refuses_bad_flags_in_one_line_storing_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    drop: str | None,
    add: list[str],
    message: str,
) -> None:
    db = tmp_path / "e.db"
    argv = evaluate("http://127.0.0.1:9/v1", db, *add)
    if drop is not None:
        at = argv.index(drop)
        del argv[at : at + 2]
    try:
        code = main([*argv, "--endpoint-wait", "0"])
    except SystemExit as exited:
        code = exited.code
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not db.exists()


def test_evaluate_without_opponents_or_buyers_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "train", "evaluate", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
        "--out", str(tmp_path / "e.db"),
    ]  # fmt: skip
    assert main(argv) == 2
    assert "give --opponents (or --buyers N and --pools" in capsys.readouterr().err
    assert not (tmp_path / "e.db").exists()

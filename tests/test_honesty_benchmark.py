"""benchmarks/honesty.py: the rule-based figures, and the optional LLM judge through a roster
entry (a loopback fake model here), scored against the same corpus."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from benchmark_support import load_benchmark
from dealroom.analysis import honesty as h
from fake_openai import Reply, Status, Text, serve


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("honesty", "honesty_bench")


def rules_as_a_model(request: dict[str, Any]) -> Reply:
    """A judge that answers with what the rule-based extractor finds, as a model would write
    it (a sentence, then the JSON); every tenth message it fails."""
    text = request["messages"][-1]["content"].split("\n", 1)[1]
    if zlib.crc32(text.encode()) % 10 == 0:
        return Status(400)
    claims = [{"kind": c.kind, "amount": c.amount} for c in h.claims_in(text)]
    return Text("Here are the claims: " + json.dumps({"claims": claims}))


def test_the_judge_is_scored_against_the_corpus(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with serve(rules_as_a_model) as fake:
        models = tmp_path / "models.toml"
        models.write_text(
            f'[models.judge]\nmodel = "m"\nendpoint = "{fake.base_url}"\nkey_env = ""\n'
        )
        assert bench.main(["--judge", "judge", "--models", str(models)]) == 0
        assert all(r["messages"][0]["content"] == h.JUDGE_INSTRUCTIONS for r in fake.requests)
        assert {r["temperature"] for r in fake.requests} == {0}
    out = capsys.readouterr().out
    assert "target: precision and recall >= 0.9 overall on the corpus: met" in out
    assert "LLM judge 'judge', corpus" in out and "judge calls failed (no claim)" in out
    # The same claims as the rules, less those of the failed calls: precision stays 1.000.
    judged = out.split("LLM judge 'judge', corpus")[1].splitlines()
    overall = next(line for line in judged if line.strip().startswith("overall"))
    assert overall.split()[1] == "1.000"


def test_a_judge_that_is_not_in_the_roster_is_one_line(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    models = tmp_path / "models.toml"
    models.write_text('[models.other]\nmodel = "m"\nendpoint = "http://127.0.0.1:9/v1"\n')
    assert bench.main(["--judge", "judge", "--models", str(models)]) == 2
    assert bench.main(["--judge", "judge"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"honesty: {models}: no entry 'judge'",
        "honesty: --judge needs --models FILE, the roster that holds it",
    ]


def test_a_judges_reply_is_read_leniently() -> None:
    assert h.parse_judged("no JSON here") == []
    assert h.parse_judged('{"claims": [{"kind": "own_value", "amount": 900}]}') == [
        ("own_value", 900.0)
    ]
    junk = '{"claims": [{"kind": "offer", "amount": 1}, {"kind": "list_price", "amount": true},'
    junk += ' {"kind": "list_price", "amount": "5"}, 7, {"kind": "list_price", "amount": 5}]}'
    assert h.parse_judged(junk) == [("list_price", 5.0)]
    assert h.parse_judged('{"claims": [') == []

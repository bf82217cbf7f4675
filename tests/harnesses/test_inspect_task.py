"""The Inspect AI task, run through Inspect's own eval loop against a loopback model.

Inspect's ``openai`` provider (chat completions: ``responses_api=False``) talks to the scripted
OpenAI-compatible server of ``tests/fake_openai.py``: nothing leaves the machine, and the
requests are what any OpenAI-compatible endpoint would receive.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import get_model

from dealroom.analysis import metrics as m
from dealroom.analysis.report import build_report
from dealroom.harnesses.inspect_task import bargain
from dealroom.play.registry import AgentSpecError
from dealroom.store.results import ResultsStore, StoredNegotiation
from fake_openai import FakeOpenAI, negotiator, serve

SECRET = "5eed" * 8


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with serve(negotiator(accept_from_wake=3)) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        yield fake


def run(task: Any, endpoint: FakeOpenAI, tmp_path: Path, **kwargs: Any) -> EvalLog:
    """The task through Inspect's eval loop; its log as written to disk. (The endpoint is named
    explicitly: Inspect keeps a model per name and arguments for the life of the process.)"""
    (log,) = inspect_eval(
        task,
        model="openai/scripted",
        model_base_url=endpoint.base_url,
        model_args={"responses_api": False},
        log_dir=str(tmp_path / "logs"),
        display="none",
        **kwargs,
    )
    assert log.status == "success", log.error
    return read_eval_log(log.location)


def stored(path: Path, run_name: str) -> list[StoredNegotiation]:
    with ResultsStore(path, create=False) as store:
        return list(store.iter(run_name))


def metrics_of(log: EvalLog) -> dict[str, float]:
    assert log.results is not None
    return {
        name: metric.value for score in log.results.scores for name, metric in score.metrics.items()
    }


def test_the_log_holds_the_measures_dealroom_report_gives_for_the_same_negotiations(
    endpoint: FakeOpenAI, tmp_path: Path
) -> None:
    out = tmp_path / "inspect.db"
    task = bargain(opponent="boulware,conceder", tiers="low,mid", n=3, secret=SECRET, out=str(out))
    log = run(task, endpoint, tmp_path)
    rows = stored(out, "inspect")
    assert len(rows) == len(log.samples or []) == 2 * 2 * 3
    report = build_report(rows, samples=0)
    (row,) = (r for r in report.leaderboard if r.agent == "openai:scripted" and r.role == "buyer")
    got = metrics_of(log)
    assert got["share"] == pytest.approx(row.surplus_share.value)
    assert got["share_low"] == pytest.approx(row.surplus_share.low)
    assert got["deal_rate"] == pytest.approx(row.deal_rate.value)
    assert got["ir_violations"] == row.ir_violations
    assert got["efficiency"] == pytest.approx(report.overall.efficiency.value)
    seats = [s for r in rows for s in m.seats_of(r.record) if s.role == "buyer"]
    assert got["offers"] == pytest.approx(m.offers_per_negotiation(seats))
    # Each sample's score is its own negotiation's.
    by_game = {(r.record.seller, r.record.scenario.id): r.record for r in rows}
    for sample in log.samples or []:
        record = by_game[(sample.metadata["opponent"], sample.metadata["scenario_id"])]
        (score,) = (sample.scores or {}).values()
        assert isinstance(score.value, dict)
        assert score.value["deal"] == float(record.outcome.status == "deal")
        assert score.value["surplus"] == pytest.approx(float(record.outcome.buyer_surplus))
    # A scripted opponent of the same index plays the same scenario as the tournament's job.
    assert {r.key.split("/", 1)[1] for r in rows} >= {"low/00000/openai:scripted/boulware"}


def test_the_transcript_is_the_models_whole_conversation_and_never_shows_the_other_value(
    endpoint: FakeOpenAI, tmp_path: Path
) -> None:
    out = tmp_path / "inspect.db"
    log = run(
        bargain(role="seller", n=2, tiers="mid", secret=SECRET, out=str(out)), endpoint, tmp_path
    )
    rows = {r.record.scenario.id: r.record for r in stored(out, "inspect")}
    for sample in log.samples or []:
        record = rows[str(sample.metadata["scenario_id"])]
        roles = [message.role for message in sample.messages]
        assert roles[0] == "user" and "assistant" in roles and "tool" in roles
        text = json.dumps([message.model_dump(mode="json") for message in sample.messages])
        own, theirs = record.scenario.seller_cost, record.scenario.buyer_value
        assert f"{own:,.2f}" in text  # the briefing names the seat's own number
        assert f"{theirs:,.2f}" not in text and f"{theirs:.2f}" not in text


def test_a_second_model_plays_the_other_seat_through_the_opponent_role(
    endpoint: FakeOpenAI, tmp_path: Path
) -> None:
    opponent = get_model(
        "openai/other", base_url=endpoint.base_url, api_key="test-key", responses_api=False
    )
    out = tmp_path / "inspect.db"
    task = bargain(opponent="model", n=2, tiers="mid", secret=SECRET, out=str(out))
    log = run(task, endpoint, tmp_path, model_roles={"opponent": opponent})
    records = [r.record for r in stored(out, "inspect")]
    assert {(r.buyer, r.seller) for r in records} == {("openai:scripted", "openai:other")}
    models = {request["model"] for request in endpoint.requests}
    assert models == {"scripted", "other"}
    seller_briefings = [
        r for r in endpoint.requests if "You are the seller" in r["messages"][0]["content"]
    ]
    assert seller_briefings and all(r["model"] == "other" for r in seller_briefings)
    assert len(log.samples or []) == 2


def test_the_same_secret_gives_the_same_negotiations(endpoint: FakeOpenAI, tmp_path: Path) -> None:
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    run(bargain(n=2, tiers="mid", secret=SECRET, out=str(first)), endpoint, tmp_path)
    run(bargain(n=2, tiers="mid", secret=SECRET, out=str(second)), endpoint, tmp_path)

    def records(path: Path) -> dict[str, str]:
        return {r.key: r.record.model_dump_json() for r in stored(path, "inspect")}

    assert records(first) == records(second)


def test_without_a_secret_a_fresh_one_is_drawn_and_recorded_in_the_log(
    endpoint: FakeOpenAI, tmp_path: Path
) -> None:
    log = run(bargain(n=1, tiers="mid"), endpoint, tmp_path)
    secret = log.eval.metadata and log.eval.metadata.get("secret")
    assert isinstance(secret, str) and len(secret) == 64


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"role": "broker"}, "role must be buyer or seller"),
        ({"tiers": "mid,luxury"}, "tiers must be some of"),
        ({"n": 0}, "n must be a positive integer"),
        ({"secret": "abc"}, "secret:"),
        ({"secret": SECRET, "seed": 3}, "a secret or a seed"),
        ({"opponent": "boulware,boulware"}, "each once"),
    ],
)
def test_bad_task_arguments_are_one_sentence(arguments: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words) as caught:
        bargain(**arguments)
    assert "\n" not in str(caught.value)


def test_an_unknown_opponent_is_refused_before_any_sample() -> None:
    with pytest.raises(AgentSpecError, match="nosuch"):
        bargain(opponent="nosuch")


@pytest.mark.slow
def test_inspect_eval_finds_the_task_by_its_registered_name(
    endpoint: FakeOpenAI, tmp_path: Path
) -> None:
    """``inspect eval dealroom/bargain`` as the docs write it: the entry point, nothing else."""
    command = [
        sys.executable, "-m", "inspect_ai", "eval", "dealroom/bargain",
        "--model", "openai/scripted", "-M", "responses_api=false",
        "-T", "role=buyer", "-T", "opponent=boulware", "-T", "tiers=low,mid", "-T", "n=1",
        "-T", f"secret={SECRET}", "--log-dir", str(tmp_path / "logs"), "--display", "none",
    ]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=300, env=os.environ.copy(), check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success" and len(log.samples or []) == 2
    assert "share" in metrics_of(log)

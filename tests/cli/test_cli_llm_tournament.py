"""``dealroom tournament`` with LLM entries on loopback OpenAI-compatible endpoints.

The endpoints are ``tests/fake_openai.py`` (stdlib HTTP servers on 127.0.0.1); nothing leaves
the machine.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from dealroom.cli import main
from dealroom.play.tournament import TournamentConfig
from dealroom.store import paid as paid_calls
from dealroom.store.results import ResultsStore, StoredNegotiation
from fake_openai import FakeOpenAI, flaky, negotiator, serve, with_latency
from room_server import share_schema_validators


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def requests_of(data: dict[str, object]) -> int:
    return int(data.get("model_calls", 0)) + int(data.get("failed_attempts", 0))  # type: ignore[call-overload]


def test_llm_and_scripted_agents_play_a_round_robin(tmp_path: Path) -> None:
    out = tmp_path / "t.db"
    argv = ["tournament", "--agents", "llm:gpt-4.1-mini,boulware,conceder", "--per-pair", "1"]
    with serve(negotiator()) as fake:
        assert main([*argv, "--tiers", "mid", "--base-url", fake.base_url, "--out", str(out)]) == 0
    config = TournamentConfig(agents=("llm:gpt-4.1-mini", "boulware", "conceder"), tiers=("mid",))
    with ResultsStore(out) as store:
        rows = {row.key: row for row in store.iter()}
    assert set(rows) == {job.key for job in config.jobs()[:6]}
    llm_rows = [row for row in rows.values() if "llm:gpt-4.1-mini" in row.key]
    assert len(llm_rows) == 4
    assert sum(requests_of(p) for r in llm_rows for p in r.extra["players"].values()) == len(
        fake.requests
    )
    assert {r["model"] for r in fake.requests} == {"gpt-4.1-mini"}
    scripted = rows["tournament/mid/00000/boulware/conceder"]
    assert "players" not in scripted.extra  # played in the engine, no seats


def test_an_llm_entry_without_a_key_or_endpoint_is_a_usage_error_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["tournament", "--agents", "llm:gpt-4.1-mini,boulware", "--out", str(tmp_path / "t")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "OPENAI_API_KEY" in err
    assert not (tmp_path / "t").exists()


# -- a roster of three endpoints: usage, kill -9 and resume, budget stop and resume -------------

ENTRIES = ("fast", "slow", "flaky")
SCRIPTED = ("boulware", "conceder")
FAST_RETRY = ["--model-timeout", "5", "--model-attempts", "4", "--model-backoff", "0.01"]


@contextmanager
def three_endpoints() -> Iterator[dict[str, FakeOpenAI]]:
    """Three loopback endpoints with different latencies; the third fails every 5th request."""
    brain = negotiator(accept_from_wake=3)
    with (
        serve(with_latency(brain, 0.01)) as fast,
        serve(with_latency(brain, 0.04)) as slow,
        serve(flaky(with_latency(brain, 0.02), every=5)) as bad,
    ):
        yield {"fast": fast, "slow": slow, "flaky": bad}


def write_roster(path: Path, endpoints: dict[str, FakeOpenAI], **extra: str) -> Path:
    lines = []
    for i, (name, fake) in enumerate(endpoints.items()):
        lines += [
            f"[models.{name}]",
            f'model = "model-{name}"',
            f'endpoint = "{fake.base_url}"',
            'key_env = "FAKE_KEY"',
            "temperature = 0.5",
            f"concurrency = {2 + i}",
            f"input_price = {1.0 + i}",
            "output_price = 10.0",
            *(f"{key} = {value}" for key, value in extra.items()),
            "",
        ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


CLI = ("-c", "import sys; from dealroom.cli import main; sys.exit(main(sys.argv[1:]))")


def cli(*argv: str) -> subprocess.Popen[bytes]:
    """``dealroom ARGV`` in its own process group (so it can be killed with -9)."""
    return subprocess.Popen(
        [sys.executable, *CLI, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def stored(path: Path) -> dict[str, StoredNegotiation]:
    with ResultsStore(path) as store:
        return {row.key: row for row in store.iter()}


def usage_by_seat(rows: list[StoredNegotiation]) -> Counter[tuple[str, str]]:
    """Requests each LLM seat made, by (model, the seat's system message)."""
    counts: Counter[tuple[str, str]] = Counter()
    for row in rows:
        for data in row.extra.get("players", {}).values():
            if "model_calls" not in data:
                continue
            system = data["conversation"]["messages"][0]["content"]
            counts[(f"model-{data['name']}", system)] += requests_of(data)
    return counts


def request_log(
    endpoints: dict[str, FakeOpenAI], since: dict[str, int]
) -> Counter[tuple[str, str]]:
    """Requests the endpoints served (after ``since``), by (model, system message)."""
    counts: Counter[tuple[str, str]] = Counter()
    for name, fake in endpoints.items():
        for request in fake.requests[since.get(name, 0) :]:
            if "messages" not in request:  # cut off by the kill before its body arrived
                continue
            counts[(request["model"], request["messages"][0]["content"])] += 1
    return counts


def count_rows(path: Path) -> int:
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM negotiations").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def unstored_paid_calls(path: Path) -> list[dict[str, Any]]:
    """Journaled model calls of negotiations not (yet) stored: the journal is read first, so a
    negotiation stored in between counts as stored."""
    paid = list(paid_calls.read(paid_calls.paid_path(path)))
    try:
        with sqlite3.connect(path, timeout=5) as db:
            extras = [json.loads(row[0]) for row in db.execute("SELECT extra FROM negotiations")]
    except sqlite3.OperationalError:
        extras = []
    kept = {extra.get("attempt") for extra in extras}
    return [line for line in paid if line["attempt"] not in kept]


@pytest.mark.slow
def test_an_llm_round_robin_stores_exact_usage_survives_kill_9_and_a_budget_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FAKE_KEY", "sk-test")
    out = tmp_path / "llm.db"
    with three_endpoints() as endpoints:
        roster = write_roster(tmp_path / "models.toml", endpoints)
        argv = [
            "tournament",
            *("--models", str(roster), "--agents", ",".join(SCRIPTED)),
            *("--tiers", "mid", "--per-pair", "1", "--out", str(out)),
            *("--concurrency", "1", "--llm-concurrency", "3", *FAST_RETRY),
        ]
        config = TournamentConfig(agents=(*ENTRIES, *SCRIPTED), tiers=("mid",), per_pair=1)
        expected = {job.key for job in config.jobs()}

        # 1. kill -9 mid-run
        child = cli(*argv)
        try:
            deadline = time.monotonic() + 120
            # killed once 6 are stored and a paid call of an unstored negotiation is journaled
            # (killed between two negotiations, nothing would be paid and lost)
            while (
                (count_rows(out) < 6 or not unstored_paid_calls(out))
                and time.monotonic() < deadline
                and child.poll() is None
            ):
                time.sleep(0.02)
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
        assert child.returncode == -signal.SIGKILL, "the run ended before it could be killed"
        before = stored(out)
        at_kill = {name: len(fake.requests) for name, fake in endpoints.items()}
        assert 6 <= len(before) < len(expected)
        # every stored negotiation's requests were served (the lost in-flight ones add more)
        served = request_log(endpoints, {})
        assert all(served[seat] >= n for seat, n in usage_by_seat(list(before.values())).items())

        # 2. resume under a budget: it stops cleanly (status 3), having started nothing past it
        resumed = subprocess.run(
            [sys.executable, *CLI, *argv, "--resume", "--max-calls", "10"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert resumed.returncode == 3, resumed.stderr
        assert "stopped: the limit of 10 model calls was reached" in resumed.stderr
        middle = stored(out)
        assert set(before) < set(middle) < expected

        # 3. resume to the end
        assert main([*argv, "--resume"]) == 0
        after = stored(out)

    assert set(after) == expected  # exactly the expected negotiations, each once
    for key, row in before.items():
        assert after[key].extra == row.extra  # never replayed
    new_rows = [row for key, row in after.items() if key not in before]
    # every request made after the kill belongs to a negotiation stored after it: no finished
    # negotiation's model calls were made again, and the stored usage is exact
    assert request_log(endpoints, at_kill) == usage_by_seat(new_rows)
    prices = {"fast": 1.0, "slow": 2.0, "flaky": 3.0}
    for row in after.values():
        for data in row.extra.get("players", {}).values():
            cost = (prices[data["name"]] * data["input_tokens"] + 10 * data["output_tokens"]) / 1e6
            assert data["cost_usd"] == pytest.approx(cost)
    assert sum(len(fake.probes) for fake in endpoints.values()) == 3 * 3  # once per run each
    assert any(fake.requests for fake in endpoints.values())
    assert any(
        data["failed_attempts"]
        for row in after.values()
        for data in row.extra.get("players", {}).values()
    )
    # Every model call was journaled as it returned: the kill's lost plays were paid for, and
    # the report counts them apart ("paid, not stored").
    paid = list(paid_calls.read(paid_calls.paid_path(out)))
    kept = {row.extra.get("attempt") for row in after.values()}
    lost = [line for line in paid if line["attempt"] not in kept]
    stored_calls = sum(
        data["model_calls"]
        for row in after.values()
        for data in row.extra.get("players", {}).values()
    )
    assert lost and len(paid) == stored_calls + len(lost)
    capsys.readouterr()
    assert main(["report", str(out), "--json"]) == 0
    totals = json.loads(capsys.readouterr().out)["usage"]["totals"]
    assert totals["unstored_calls"] == len(lost) and totals["model_calls"] == stored_calls
    assert totals["unstored_cost_usd"] == pytest.approx(sum(x["cost_usd"] for x in lost))
    assert main(["report", str(out)]) == 0
    assert f"paid, not stored: {len(lost)} model calls" in capsys.readouterr().out


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed")
@pytest.mark.slow
def test_the_ray_backend_plays_an_llm_round_robin_into_one_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 11 item 7: a local Ray cluster of two CPUs, each task a driver of the endpoints
    (its own players, HTTP clients and event loop), every result written by the one driver."""
    monkeypatch.setenv("FAKE_KEY", "sk-test")
    out = tmp_path / "ray.db"
    with three_endpoints() as endpoints:
        roster = write_roster(tmp_path / "models.toml", endpoints)
        argv = [
            "tournament",
            *("--models", str(roster), "--agents", ",".join(SCRIPTED)),
            *("--tiers", "low", "--per-pair", "2", "--out", str(out), "--backend", "ray"),
            *("--concurrency", "2", "--llm-concurrency", "2", *FAST_RETRY),
        ]
        # 36 seat jobs in 18 tasks, 6 in flight. A budget stops it cleanly: no new task starts,
        # those in flight are stored, so every request the endpoints served belongs to a stored
        # negotiation (none paid for and lost).
        assert main([*argv, "--max-calls", "5"]) == 3
        first = stored(out)
        assert 0 < len(first) < 40
        seated_first = [row for row in first.values() if row.extra.get("players")]
        assert request_log(endpoints, {}) == usage_by_seat(seated_first)
        assert main([*argv, "--resume"]) == 0
        rows = stored(out)
    config = TournamentConfig(agents=(*ENTRIES, *SCRIPTED), tiers=("low",), per_pair=2)
    assert set(rows) == {job.key for job in config.jobs()}  # each once
    seated = [row for row in rows.values() if row.extra.get("players")]
    assert len(seated) == len(rows) - 4  # all but the two scripted pairings, twice
    # the stored usage is exactly what the endpoints served, seat by seat
    assert request_log(endpoints, {}) == usage_by_seat(seated)
    assert all(fake.requests for fake in endpoints.values())
    assert not [row.key for row in seated if row.extra.get("errors")]


@pytest.mark.parametrize(
    ("extra", "unset", "fragment"),
    [
        ({"colour": '"red"'}, False, "colour: unknown key"),
        ({}, True, "$FAKE_KEY is not set"),
        ({"max_tokens": "0"}, False, "max_tokens"),
        ({"max_tool_rounds": "0"}, False, "max_tool_rounds"),
    ],
    ids=["unknown-key", "missing-key-variable", "bad-value", "bad-tool-rounds"],
)
def test_a_bad_roster_is_one_line_before_anything_starts(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    extra: dict[str, str],
    unset: bool,
    fragment: str,
) -> None:
    if not unset:
        monkeypatch.setenv("FAKE_KEY", "k")
    with serve(negotiator()) as fake:
        roster = write_roster(tmp_path / "m.toml", {"one": fake}, **extra)
        argv = ["tournament", "--models", str(roster), "--agents", "boulware"]
        assert main([*argv, "--out", str(tmp_path / "t.db")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err, err
    assert not fake.requests and not (tmp_path / "t.db").exists()


@pytest.mark.parametrize(
    ("endpoint", "fragment"),
    [("ftp://x/v1", "neither an http(s) base URL"), ("http://127.0.0.1:9/v1", "unreachable")],
)
def test_a_bad_or_unreachable_endpoint_is_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    endpoint: str,
    fragment: str,
) -> None:
    monkeypatch.setenv("FAKE_KEY", "k")
    roster = tmp_path / "m.toml"
    roster.write_text(f'[models.a]\nmodel = "m"\nendpoint = "{endpoint}"\nkey_env = "FAKE_KEY"\n')
    argv = ["tournament", "--models", str(roster), "--agents", "boulware"]
    assert main([*argv, "--out", str(tmp_path / "t.db")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err, err
    assert not (tmp_path / "t.db").exists()


def test_export_sft_exports_what_the_model_really_read_and_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_KEY", "k")
    out = tmp_path / "t.db"
    with serve(negotiator()) as fake:
        roster = write_roster(tmp_path / "m.toml", {"solo": fake})
        argv = ["tournament", "--models", str(roster), "--agents", "boulware", "--tiers", "low"]
        assert main([*argv, "--per-pair", "1", "--out", str(out)]) == 0
    assert (
        main(["export-sft", str(out), "--agent", "solo", "--out", str(tmp_path / "s.jsonl")]) == 0
    )
    examples = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert len(examples) == 2
    for example in examples:
        messages = example["messages"]
        # the last request of that seat is a prefix of what was exported, byte for byte
        # (the instructions are the same for both seats: the briefing, first user message, differs)
        last = [r for r in fake.requests if r["messages"][:2] == messages[:2]][-1]
        assert messages[: len(last["messages"])] == last["messages"]
        assert example["tools"] == last["tools"]
        assert example["metadata"]["source"] == "conversation"


def test_the_report_shows_each_models_usage_and_cost_in_every_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FAKE_KEY", "k")
    out = tmp_path / "t.db"
    with serve(negotiator()) as one, serve(flaky(negotiator(), every=4)) as two:
        roster = write_roster(tmp_path / "m.toml", {"one": one, "two": two})
        argv = ["tournament", "--models", str(roster), "--agents", "boulware", "--tiers", "low"]
        assert main([*argv, *FAST_RETRY, "--per-pair", "1", "--out", str(out)]) == 0
    capsys.readouterr()
    html = tmp_path / "r.html"
    assert main(["report", str(out), "--json", "--resamples", "20", "--html", str(html)]) == 0
    usage = json.loads(capsys.readouterr().out)["usage"]
    rows = {row["agent"]: row for row in usage["models"]}
    assert set(rows) == {"one", "two"}
    for name, fake in (("one", one), ("two", two)):
        assert rows[name]["model_calls"] + rows[name]["failed_attempts"] == len(fake.requests)
        assert rows[name]["seats"] == 4  # against each other and boulware, both seats
        assert rows[name]["input_tokens"] == 11 * rows[name]["model_calls"]
    assert rows["two"]["failed_attempts"] > 0 and rows["one"]["failed_attempts"] == 0
    totals = usage["totals"]
    assert totals["model_calls"] == rows["one"]["model_calls"] + rows["two"]["model_calls"]
    assert totals["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in rows.values()), abs=1e-6)
    assert main(["report", str(out), "--resamples", "20"]) == 0
    text = capsys.readouterr().out
    assert "Models: usage per negotiation seat" in text and "Run: " in text
    model_lines = [line for line in text.splitlines() if line.startswith(("one ", "two "))]
    assert any("$" in line and " s " in line for line in model_lines)
    page = html.read_text()
    assert "<h2>Models</h2>" in page and "<td>two</td>" in page

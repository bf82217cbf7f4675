"""``vf-eval`` of dealroom-verifiers plays whole negotiations on a real dealroom server.

The server is dealroom's own (``dealroom serve --transport http``, from dealroom's venv: the
executable in $DEALROOM_BIN, default ``<repo>/.venv/bin/dealroom``); the model is a loopback
chat-completions endpoint playing a fixed policy (``loopback_model``). Checked:

- every rollout is one whole negotiation, and its ``surplus_share`` reward is what ``dealroom
  report`` computes from the server's results store for the same negotiations;
- what the model was sent, request by request (messages and tools), is the recording in
  ``tests/golden/verifiers_requests.json`` of dealroom's repo, which dealroom's own parity test
  (tests/test_model_seat_parity.py) compares with what the tournament's ``llm:`` seat sends for
  the same scenario and replies: one conversation on both (``DEALROOM_RECORD=1`` rewrites it);
- nothing the model read holds the other side's private number;
- a wrong server URL, admin token or opponent stops the run with one line.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loopback_model import LoopbackModel, serving

REPO = Path(__file__).resolve().parents[3]
GOLDEN = REPO / "tests" / "golden" / "verifiers_requests.json"
DEALROOM = os.environ.get("DEALROOM_BIN", str(REPO / ".venv" / "bin" / "dealroom"))
ADMIN = "vf-admin-token"
SECRET = "5b0f3c8e9a1d47e2b6c4a8f01d3e5b7c9a2f4d6e8b0c1a3e5f7d9b2c4e6a8f10"
N = 4


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A dealroom HTTP server from dealroom's venv: (its URL, its results store)."""
    assert Path(DEALROOM).exists(), f"no dealroom executable at {DEALROOM}: set DEALROOM_BIN"
    results = tmp_path_factory.mktemp("server") / "results.db"
    port = free_port()
    command = [DEALROOM, "serve", "--transport", "http", "--port", str(port)]
    env = {**os.environ, "DEALROOM_ADMIN_TOKEN": ADMIN}
    process = subprocess.Popen(
        [*command, "--results", str(results)], env=env, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as answer:
                if answer.status == 200:
                    break
        except OSError:
            assert process.poll() is None, "the dealroom server exited"
            assert time.monotonic() < deadline, "the dealroom server did not start"
            time.sleep(0.1)
    try:
        yield url, results
    finally:
        process.terminate()
        process.wait(30)


@pytest.fixture(scope="module")
def model() -> Iterator[LoopbackModel]:
    with serving() as endpoint:
        yield endpoint


def vf_eval(
    model: LoopbackModel, out: Path, *settings: str, admin: str = ADMIN
) -> subprocess.CompletedProcess[str]:
    vf_eval = Path(sys.executable).parent / "vf-eval"
    command = [str(vf_eval), "dealroom-verifiers", "-m", "loopback", "--no-push"]
    command += ["--client.base-url", model.base_url, "--client.api-key-var", "LOOPBACK_KEY"]
    command += ["-o", str(out), "--run.dir", "run", *settings]
    env = {**os.environ, "DEALROOM_ADMIN_TOKEN": admin, "DEALROOM_SECRET": SECRET}
    env["LOOPBACK_KEY"] = "k"
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def report(results: Path, run: str) -> dict[str, Any]:
    printed = subprocess.run(
        [DEALROOM, "report", str(results), "--run", run, "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return json.loads(printed)


@pytest.fixture(scope="module")
def played(
    server: tuple[str, Path], model: LoopbackModel, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], subprocess.CompletedProcess[str]]:
    """One vf-eval run of N scenarios: (its traces, the model's requests, the process)."""
    url, _ = server
    out = tmp_path_factory.mktemp("vf")
    before = len(model.requests)
    run = vf_eval(
        model, out, "--env.taskset.server", url, "--env.taskset.n", str(N),
        "--env.taskset.run", "vf-test",
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    lines = (out / "run" / "traces.jsonl").read_text().splitlines()
    traces = [trace for line in lines for trace in json.loads(line)["traces"]]
    return traces, model.requests[before:], run


def test_vf_eval_plays_whole_negotiations_with_dealrooms_rewards(
    played: tuple[list[dict[str, Any]], list[dict[str, Any]], Any], server: tuple[str, Path]
) -> None:
    traces, _, run = played
    assert len(traces) == N and all(t["ok"] for t in traces), run.stdout[-2000:]
    outcomes = [t["info"]["dealroom"]["outcome"] for t in traces]
    assert all(o is not None and o["end_reason"] for o in outcomes)  # every one ended
    assert {t["task"]["data"]["index"] for t in traces} == set(range(N))
    scored = [t for t in traces if t["metrics"]["has_gains"] == 1.0]
    shares = [t["rewards"]["surplus_share"]["score"] for t in scored]
    measured = report(server[1], "vf-test")
    assert measured["negotiations"] == N
    (row,) = [r for r in measured["leaderboard"] if (r["agent"], r["role"]) == ("mcp", "buyer")]
    assert row["surplus_share"]["n"] == len(scored) > 0
    assert abs(row["surplus_share"]["value"] - sum(shares) / len(shares)) < 1e-9
    assert any(t["metrics"]["deal"] == 1.0 for t in traces)  # the policy makes deals here
    assert "surplus_share" in run.stdout


def opening(trace: dict[str, Any]) -> str:
    """The briefing a trace's model read: its first message, as verifiers recorded it."""
    message = trace["nodes"][0]["message"]
    assert message["role"] == "user"
    return str(message["content"])


def test_what_the_model_was_sent_is_the_recorded_conversation(
    played: tuple[list[dict[str, Any]], list[dict[str, Any]], Any],
) -> None:
    traces, requests, _ = played
    assert len({r["messages"][0]["content"] for r in requests}) == N  # one briefing a scenario
    (first,) = [t for t in traces if t["task"]["data"]["index"] == 0]
    mine = [
        {"messages": r["messages"], "tools": r["tools"]}
        for r in requests
        if r["messages"][0]["content"] == opening(first)
    ]
    assert [m["role"] for m in mine[0]["messages"]] == ["user"]  # the briefing alone
    recorded = {
        "secret": SECRET,
        "tier": "mid",
        "index": 0,
        "role": "buyer",
        "opponent": "boulware",
        "requests": mine,
    }
    if os.environ.get("DEALROOM_RECORD") == "1":
        GOLDEN.write_text(json.dumps(recorded, indent=1) + "\n")
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    assert recorded == golden, f"{GOLDEN} differs (DEALROOM_RECORD=1 rewrites it)"


def test_nothing_the_model_read_holds_the_other_sides_number(
    played: tuple[list[dict[str, Any]], list[dict[str, Any]], Any],
) -> None:
    traces, requests, _ = played
    for trace in traces:
        briefing = opening(trace)
        found = re.search(r"Your private value is \$([\d,]+\.\d\d)", briefing)
        assert found is not None
        value = float(found.group(1).replace(",", ""))
        cost = value - float(trace["info"]["dealroom"]["outcome"]["gains"])
        read = json.dumps(
            [r["messages"] for r in requests if r["messages"][0]["content"] == briefing]
        )
        assert read.count("Your private value") == read.count(briefing[:40]) > 0
        assert f"{cost:,.2f}" not in read and f"{cost:.2f}" not in read, trace["task"]["data"]


@pytest.mark.parametrize(
    ("settings", "admin", "says"),
    [
        (("--env.taskset.server", "http://127.0.0.1:9"), ADMIN, "cannot reach the dealroom server"),
        ((), "wrong-token", "refused the admin token"),
        (("--env.taskset.opponent", "nosuch"), ADMIN, "unknown agent 'nosuch'"),
    ],
)
def test_bad_settings_stop_the_run_with_one_line(
    server: tuple[str, Path],
    model: LoopbackModel,
    tmp_path: Path,
    settings: tuple[str, ...],
    admin: str,
    says: str,
) -> None:
    base = ("--env.taskset.server", server[0], "--env.taskset.n", "1")
    run = vf_eval(model, tmp_path, *base, *settings, admin=admin)
    assert run.returncode == 1
    lines = [
        line for line in (run.stdout + run.stderr).splitlines() if "dealroom-verifiers:" in line
    ]
    assert len(lines) == 1 and says in lines[0], run.stdout[-2000:] + run.stderr[-2000:]
    assert "Traceback" not in run.stderr

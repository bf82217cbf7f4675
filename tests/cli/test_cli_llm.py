"""``dealroom match`` with LLM agents on a loopback OpenAI-compatible endpoint, and ``play``.

The endpoint is ``tests/fake_openai.py``: a stdlib HTTP server on 127.0.0.1 whose replies are
scripted tool calls (or errors). Nothing leaves the machine.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from dealroom.agents import resolve
from dealroom.agents._llm_chat import ChatCompletions
from dealroom.agents.llm import LLMPlayer, LLMSettings, RetryPolicy
from dealroom.cli import _mcp_match, _players, main
from dealroom.cli import play as cli_play
from dealroom.engine.match import play
from dealroom.play import settings as settings_module
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.model_seat import MAX_TOOL_ROUNDS
from dealroom.protocol.secret import Secret
from dealroom.protocol.tools import seat_tools
from dealroom.store.results import ResultsStore
from fake_openai import Garbage, Hang, Status, negotiator, scripted, serve
from room_server import ADMIN, room_server_thread, share_schema_validators

TOOLS = {tool.name for tool in seat_tools(series=False)}
SECRET = "2b43c8a13f14fc14e797e8a128dbe4db"
FAST = ["--model-timeout", "1", "--model-attempts", "2", "--model-backoff", "0.01"]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DEALROOM_ADMIN_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def built_llm_players(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[LLMPlayer]:
    """The LLM players a command module builds (through ``_players.player``), as it builds
    them."""
    built: list[LLMPlayer] = []

    def recording(spec: str, args: Any) -> Any:
        made = _players.player(spec, args)
        if isinstance(made, LLMPlayer):
            built.append(made)
        return made

    monkeypatch.setattr(module, "player", recording)
    return built


def closed(player: LLMPlayer) -> bool:
    """The player's HTTP client was used and has been closed (no kept-alive connection
    outlives its loop)."""
    model = player.model
    assert isinstance(model, ChatCompletions)
    return model.sessions_opened == 1 and model.closed


def match_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    """Run ``dealroom match ... --json``: (exit status, the printed JSON object)."""
    status = main(["match", *argv, "--json"])
    out = capsys.readouterr().out
    return status, json.loads(out)


def test_an_llm_buyer_plays_a_scripted_seller_to_an_outcome(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with serve(negotiator()) as fake:
        status, body = match_json(
            capsys, "--buyer", "llm:fake", "--seller", "boulware", "--base-url", fake.base_url
        )
    assert status == 0
    assert body["outcome"]["status"] == "deal"
    assert body["buyer"] == "llm:fake"
    assert {tool["function"]["name"] for tool in fake.requests[0]["tools"]} == TOOLS
    data = body["extra"]["players"]["buyer"]
    assert data["model_calls"] == len(fake.requests) >= 2
    assert data["output_tokens"] == 7 * data["model_calls"]
    assert data["input_tokens"] == 11 * data["model_calls"]
    assert "errors" not in body["extra"]


def test_two_llms_play_each_other_and_match_closes_both(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    built = built_llm_players(monkeypatch, _mcp_match)
    with serve(negotiator(accept_from_wake=3)) as fake:
        status, body = match_json(
            capsys, "--buyer", "llm:a", "--seller", "llm:b", "--base-url", fake.base_url
        )
    assert status == 0
    assert len(built) == 2 and all(map(closed, built))
    assert body["outcome"]["end_reason"] == "accepted"
    assert {r["model"] for r in fake.requests} == {"a", "b"}
    assert set(body["extra"]["players"]) == {"buyer", "seller"}


def test_an_llm_plays_a_room_of_an_http_server(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", ADMIN)
    built = built_llm_players(monkeypatch, _mcp_match)
    with serve(negotiator()) as fake, room_server_thread(tmp_path) as server:
        status, body = match_json(
            capsys,
            *("--buyer", "llm:fake", "--seller", "conceder", "--secret", SECRET),
            *("--base-url", fake.base_url, "--server", server.url),
        )
        stored = list(server.store.iter())
    assert status == 0
    assert len(built) == 1 and closed(built[0])
    assert body["outcome"]["status"] == "deal"
    assert body["extra"]["room"].startswith("room-")
    assert len(stored) == 1
    assert stored[0].record.outcome.model_dump(mode="json") == body["outcome"]
    assert [e.model_dump(mode="json") for e in stored[0].record.events] == body["events"]


def test_a_server_without_the_admin_token_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["match", "--buyer", "llm:x", "--seller", "boulware", "--base-url",
                   "http://127.0.0.1:9/v1", "--server", "http://127.0.0.1:9"])  # fmt: skip
    assert status == 2
    assert "DEALROOM_ADMIN_TOKEN" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("replies", "error"),
    [
        ([Status(500)], "HTTP 500"),
        ([Status(429)], "HTTP 429"),
        ([Hang(20)], "timed out"),
        ([Garbage()], "JSONDecodeError"),
    ],
    ids=["500", "429", "hang", "garbage"],
)
def test_a_failing_endpoint_ends_as_a_recorded_error_with_nothing_lost(
    replies: list[Any], error: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    started = time.monotonic()
    with serve(scripted([], then=replies[0])) as fake:
        status, body = match_json(
            capsys,
            *("--buyer", "llm:fake", "--seller", "boulware", "--base-url", fake.base_url),
            *FAST,
            *("--results", str(tmp_path / "r.db")),
        )
    assert time.monotonic() - started < 30
    assert status == 1
    assert (body["outcome"]["end_reason"], body["outcome"]["ended_by"]) == ("walk_away", "buyer")
    assert error in body["extra"]["errors"]["buyer"]
    assert body["extra"]["players"]["buyer"]["error"] == body["extra"]["errors"]["buyer"]
    with ResultsStore(tmp_path / "r.db") as store:
        (row,) = list(store.iter())
    assert row.record.model_dump(mode="json") == {k: v for k, v in body.items() if k != "extra"}
    assert row.extra["errors"] == body["extra"]["errors"]


def test_the_text_output_reports_usage_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    with serve(scripted([], then=Status(503))) as fake:
        status = main(
            [
                *("match", "--buyer", "llm:fake", "--seller", "boulware"),
                *("--base-url", fake.base_url, *FAST),
            ]
        )
    out = capsys.readouterr().out
    assert status == 1
    assert "buyer llm:fake: 0 model calls" in out
    assert "error (buyer): model call failed after 2 attempt(s): HTTP 503" in out


def test_scripted_matches_stay_in_process_and_never_load_the_agents_sdk() -> None:
    code = (
        "import sys; from dealroom.cli import main; "
        "main(['match', '--buyer', 'boulware', '--seller', 'conceder', '--secret', "
        f"'{SECRET}', '--json']);"
        "print('agents' in sys.modules or 'openai' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    line, loaded = out.splitlines()
    secret = Secret.from_hex(SECRET)
    expected = play(
        scenario_at(secret, 0, "mid"),
        resolve("boulware"),
        resolve("conceder"),
        names=("boulware", "conceder"),
        seed=secret,
    )
    assert line == expected.model_dump_json()
    assert loaded == "False"


def test_an_llm_without_a_key_or_endpoint_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["match", "--buyer", "llm:gpt-4.1-mini", "--seller", "boulware"])
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "OPENAI_API_KEY" in err


def test_the_llm_flag_defaults_are_the_settings_defaults() -> None:
    settings, retry, flags = LLMSettings(), RetryPolicy(), settings_module.SeatSettings()
    assert flags.max_tool_rounds == settings.max_tool_rounds
    assert settings.max_tool_rounds == MAX_TOOL_ROUNDS
    assert retry.timeout_s == settings_module.MODEL_TIMEOUT_S
    assert retry.attempts == settings_module.MODEL_ATTEMPTS
    assert retry.initial_s == settings_module.MODEL_BACKOFF_S
    assert retry.max_s == settings_module.MODEL_MAX_BACKOFF_S


def test_a_person_plays_a_seat_in_the_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    commands = "state\noffer 5000 Let us talk.\nbogus\naccept o999\nwait\naccept\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(commands))
    status = main(["play", "--role", "buyer", "--opponent", "conceder"])
    out = capsys.readouterr().out
    assert status == 0
    assert "You are the buyer in a one-item negotiation." in out
    assert 'You offered $5,000.00, saying "Let us talk."' in out
    assert "unknown command 'bogus'" in out
    assert "refused: There is no offer 'o999'." in out
    assert "The negotiation is over: a deal at" in out
    assert "buyer  human:" in out  # the full record at the end


def test_a_person_plays_against_an_llm(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("offer 7000\nwait\nwait\nwait\n"))
    built = built_llm_players(monkeypatch, cli_play)
    with serve(negotiator(price=6000)) as fake:
        status = main(
            ["play", "--role", "seller", "--opponent", "llm:fake", "--base-url", fake.base_url]
        )
    out = capsys.readouterr().out
    assert status == 0
    assert len(built) == 1 and closed(built[0])
    assert "buyer offered $6,000.00" in out
    assert "buyer accepted o" in out and "The negotiation is over: a deal at $7,000.00" in out


def test_a_person_who_stops_typing_walks_away(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("offer 5000\n"))
    status = main(["play", "--opponent", "hardliner"])
    out = capsys.readouterr().out
    assert status == 1
    assert "no deal (walk_away)" in out
    assert "error (buyer): the input ended before the negotiation did" in out


def test_a_scripted_match_can_be_stored_and_prints_the_same(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["match", "--buyer", "boulware", "--seller", "linear", "--json", "--secret", SECRET]
    assert main(argv) == 0
    plain = capsys.readouterr().out
    assert main([*argv, "--results", str(tmp_path / "r.db")]) == 0
    assert capsys.readouterr().out == plain
    with ResultsStore(tmp_path / "r.db") as store:
        (row,) = list(store.iter())
    assert row.record.model_dump_json() + "\n" == plain
    assert row.extra == {"secret": SECRET}  # stored with the match, so it can be replayed


def test_a_match_is_stored_once_and_a_repeat_is_refused_before_it_plays(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The same secret and players are the same match: its key is fixed (it had a random
    suffix, and the same negotiation was stored twice), and a repeat is refused before anyone
    plays, so no model is paid for a result that would not be stored."""
    results = tmp_path / "r.db"
    argv = ["match", "--buyer", "boulware", "--seller", "linear", "--secret", SECRET]
    assert main([*argv, "--results", str(results)]) == 0
    capsys.readouterr()
    assert main([*argv, "--results", str(results)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"dealroom: error: {results}: match 'match/")
    assert line.endswith("/boulware/linear' is already stored (give another --secret)")
    with ResultsStore(results) as store:
        assert len(store) == 1
    with serve(scripted([], then=Status(500))) as fake:
        llm = [
            *("match", "--buyer", "llm:fake", "--seller", "boulware", "--secret", SECRET),
            *("--base-url", fake.base_url, *FAST, "--results", str(results)),
        ]
        assert main(llm) == 1  # the model failed: a recorded walk-away, stored
        capsys.readouterr()
        asked = len(fake.requests)
        assert main(llm) == 2
        assert "is already stored" in capsys.readouterr().err
        assert len(fake.requests) == asked  # refused before the model was asked anything
    with ResultsStore(results) as store:
        assert len(store) == 2


def test_a_wall_clock_needs_a_player_that_is_not_scripted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["match", "--buyer", "boulware", "--seller", "linear", "--clock", "wall"]) == 2
    assert "--clock wall" in capsys.readouterr().err

"""``dealroom tournament`` with LLM entries on loopback OpenAI-compatible endpoints.

The endpoints are ``tests/fake_openai.py`` (stdlib HTTP servers on 127.0.0.1); nothing leaves
the machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dealroom.cli import main
from dealroom.play.tournament import TournamentConfig
from dealroom.store.results import ResultsStore
from fake_openai import negotiator, serve
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

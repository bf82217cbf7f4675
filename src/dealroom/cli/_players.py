"""Players from specs, and the flags of the seat players (LLM agents, people).

Every spec goes through the registry (``dealroom.play.registry``), which names every kind of
player. Imported by every ``dealroom`` run, so it stays light: the Agents SDK is imported only
when an LLM actually plays.
"""

from __future__ import annotations

import argparse
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dealroom.cli._common import ADMIN_TOKEN_ENV, positive_int, usage_error
from dealroom.play.registry import AgentSpecError, PlayerOptions, is_scripted, resolve_player
from dealroom.protocol.model_seat import MAX_TOOL_ROUNDS

if TYPE_CHECKING:
    from dealroom.agents.llm import LLMSettings
    from dealroom.play.players import Player
    from dealroom.protocol.record import NegotiationRecord


# Defaults of RetryPolicy (a test keeps them equal), as literals so that building the parser
# does not import the Agents SDK (the round limit is the one model seat's own).
MODEL_TIMEOUT_S = 60.0
MODEL_ATTEMPTS = 4
MODEL_BACKOFF_S = 0.5
MODEL_MAX_BACKOFF_S = 8.0


def scripted(spec: str) -> bool:
    """True for a scripted agent; a usage error for a spec that names no agent."""
    try:
        return is_scripted(spec)
    except AgentSpecError as exc:
        raise usage_error(str(exc)) from None


def needs_mcp(*specs: str) -> bool:
    """True if a spec is not a scripted agent (so the match runs through seats)."""
    return not all(scripted(spec) for spec in specs)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError(f"must be in (0, 86400]: {text!r}")
    return value


def add_llm_flags(parser: argparse.ArgumentParser) -> None:
    """Flags for ``llm:MODEL`` agents (``serve``: the opponent on stdio, a room's house seat
    over HTTP)."""
    group = parser.add_argument_group("LLM agents (llm:MODEL)")
    group.add_argument(
        "--base-url",
        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 "
        "(default: $OPENAI_BASE_URL, else OpenAI); the key comes from $OPENAI_API_KEY",
    )
    group.add_argument(
        "--max-tool-rounds",
        type=positive_int,
        default=MAX_TOOL_ROUNDS,
        help="most model replies whose tool calls are made, per negotiation; the next reply "
        "ends the seat's play, as TRL's max_tool_calling_iterations (default: %(default)s)",
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
        "--elicit-beliefs",
        action="store_true",
        help="after each negotiation has ended, ask every LLM seat once for its estimate of the "
        "other side's private number (stored as its belief, reported by dealroom report; play "
        "is unchanged); default: off",
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
    return LLMSettings(
        max_tool_rounds=args.max_tool_rounds,
        retry=retry,
        tracing=args.trace,
        elicit_beliefs=args.elicit_beliefs,
    )


@dataclass(frozen=True, slots=True, eq=False)
class SpecResolver:
    """Specs to players with the options of one command (picklable: worker processes and Ray
    tasks build the same players). Roster entries (``--models``) come first, by name."""

    options: PlayerOptions
    roster: Mapping[str, Callable[[], Player]] = field(default_factory=dict[str, Any])
    """Roster entries' player builders (``dealroom.agents.roster.RosterPlayer``), by name."""

    def __call__(self, spec: str) -> Player:
        build = self.roster.get(spec.strip())
        if build is not None:
            return build()
        return resolve_player(spec, None if is_scripted(spec) else self.options)


def player_options(args: argparse.Namespace) -> PlayerOptions:
    """The options the LLM flags give seat players (this imports the Agents SDK)."""
    return PlayerOptions(base_url=args.base_url, settings=llm_settings(args))


def player(spec: str, args: argparse.Namespace) -> Player:
    """The player a spec names (any kind the registry knows), or a usage error. Scripted
    agents are built without the seat players' options (so without the Agents SDK)."""
    try:
        options = None if scripted(spec) else player_options(args)
        return resolve_player(spec, options)
    except AgentSpecError as exc:
        raise usage_error(str(exc)) from None


@dataclass(frozen=True, slots=True)
class Lineup:
    """The agents of a tournament, how to build each, and what is recorded about the LLM
    entries (so a resume with other models or sampling settings is refused)."""

    agents: tuple[str, ...]
    resolver: SpecResolver
    entries: dict[str, Any]


def lineup(specs: list[str], args: argparse.Namespace) -> Lineup:
    """Roster entries (``--models``) then ``specs``; every player is built once and every
    endpoint probed once, so a bad roster, a missing key or an unreachable endpoint is a usage
    error before anything starts."""
    from dealroom.agents.roster import RosterError

    try:
        return _lineup(specs, args)
    except RosterError as exc:
        raise usage_error(str(exc)) from None


def _lineup(specs: list[str], args: argparse.Namespace) -> Lineup:
    roster: dict[str, Any] = {}
    entries: dict[str, Any] = {}
    probes: dict[str, str | None] = {}
    extra: list[Any] = list(getattr(args, "extra_entries", ()))
    if args.models is not None or extra:
        from dealroom.agents import roster as rosters

        loaded = [*(rosters.load(args.models) if args.models is not None else []), *extra]
        if len({entry.name for entry in loaded}) != len(loaded):
            raise usage_error("two roster entries share a name")
        roster = rosters.players(loaded, llm_settings(args))
        for entry in loaded:
            if _registered(entry.name):
                raise usage_error(f"{args.models}: [models.{entry.name}] is a registered agent")
            entries[entry.name] = entry.describe()
            probes.setdefault(entry.endpoint, roster[entry.name].api_key)
    agents = [*roster, *(spec for spec in specs if spec not in roster)]
    seats = [spec for spec in agents if spec not in roster and not scripted(spec)]
    chosen = SpecResolver(player_options(args) if seats else PlayerOptions(), roster)
    for spec in agents:
        try:
            chosen(spec)
        except AgentSpecError as exc:
            raise usage_error(str(exc)) from None
    if any(spec.startswith("llm:") for spec in seats):
        import os

        from dealroom.agents._llm_model import API_KEY_ENV, DEFAULT_BASE_URL_ENV

        url = args.base_url or os.environ.get(DEFAULT_BASE_URL_ENV) or "https://api.openai.com/v1"
        probes.setdefault(url, os.environ.get(API_KEY_ENV))
    if probes:
        from dealroom.agents.roster import probe_all

        probe_all(probes)
    return Lineup(tuple(agents), chosen, entries)


def _registered(name: str) -> bool:
    try:
        is_scripted(name)
    except AgentSpecError:
        return False
    return True

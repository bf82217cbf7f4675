"""Players from specs, and the flags of the seat players (LLM agents, people).

Every spec goes through the registry (``dealroom.play.registry``), which names every kind of
player. Imported by every ``dealroom`` run, so it stays light: the Agents SDK is imported only
when an LLM actually plays.
"""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dealroom.cli._common import ADMIN_TOKEN_ENV, positive_int, usage_error
from dealroom.play.registry import AgentSpecError, PlayerOptions, is_scripted, resolve_player
from dealroom.play.settings import (
    MODEL_ATTEMPTS,
    MODEL_BACKOFF_S,
    MODEL_MAX_BACKOFF_S,
    MODEL_TIMEOUT_S,
    PlaySettings,
    SeatSettings,
)
from dealroom.protocol.market import pool_name
from dealroom.protocol.model_seat import MAX_TOOL_ROUNDS
from dealroom.protocol.secret import Seed, seed_json

if TYPE_CHECKING:
    from dealroom.agents.lineup import Lineup
    from dealroom.play.players import OnModelCall, Player
    from dealroom.protocol.market_referee import MarketRecord
    from dealroom.protocol.record import NegotiationRecord
    from dealroom.store.results import ResultsStore


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
        help="also store the negotiation or market (with LLM players' usage and errors) in this "
        "store",
    )


@dataclass(frozen=True, slots=True)
class KeepMarket:
    """What keeps a market match (``--results``): its model seats' calls journaled as they
    return (``paid``: ``<results>.paid.jsonl``, as a tournament journals them, under the
    market's key and this play's attempt), then the finished market stored under ``key`` with
    its model seats' data by seat, the secret, and the attempt if a model played. Nothing
    without ``--results``."""

    results: Path | None
    key: str
    secret: Seed
    attempt: str = field(default_factory=lambda: uuid.uuid4().hex)

    def paid(self, seat: str, agent: str) -> OnModelCall | None:
        """The journal's hook for the model calls of ``agent`` in ``seat`` (``seller``,
        ``b1`` ..), or None without ``--results``."""
        if self.results is None:
            return None
        from dealroom.store import paid as paid_calls

        log = paid_calls.paid_path(self.results)
        role = "seller" if seat == "seller" else "buyer"
        line = {"run": MARKET_MATCH_RUN, "key": self.key, "attempt": self.attempt}
        line |= {"role": role, "seat": seat, "agent": agent}
        return lambda usage: paid_calls.append(log, {**line, **usage})

    def __call__(self, record: MarketRecord, extra: Mapping[str, Any]) -> None:
        """Store the finished market (``extra``: its model seats' data by seat)."""
        if self.results is None:
            return
        kept = {**extra, **seed_json(self.secret)}
        if extra:
            kept["attempt"] = self.attempt
        store_market(self.results, self.key, record, kept)


MARKET_MATCH_RUN = "market-match"
"""The run that ``dealroom match --buyers N --results`` stores its markets under (apart from
the bilateral matches' ``match``: a report reads one run as negotiations or as markets)."""


MATCH_RUN = "match"
"""The run that ``dealroom match --results`` stores its negotiations under."""


def match_key(scenario_id: str, buyer: str, seller: str) -> str:
    """A match's key in the results store: the same scenario (its id, from the secret), buyer
    and seller give the same key, so a match is stored once."""
    return f"{MATCH_RUN}/{scenario_id}/{buyer}/{seller}"


def check_unstored(path: Path, key: str, *, market: bool = False) -> None:
    """A usage error, before anything is played, if ``path`` is not a results store that can
    take ``key`` (a file that is no store, or one that holds the key already): the
    negotiation, or with ``market`` the market (run ``market-match``)."""
    if not path.exists():
        return
    what = "market" if market else "match"
    _stored_once(
        path,
        what,
        key,
        lambda store: key not in (store.market_keys(MARKET_MATCH_RUN) if market else store.keys()),
        create=False,
    )


def store_match(path: Path, record: NegotiationRecord, extra: Mapping[str, Any]) -> None:
    """Add one match to a results store under its ``match_key``; a usage error if the key is
    stored already (nothing is written twice)."""
    key = match_key(record.scenario.id, record.buyer, record.seller)
    _stored_once(
        path, "match", key, lambda store: store.add(key, record, run=MATCH_RUN, extra=extra)
    )


def _stored_once(
    path: Path,
    what: str,
    key: str,
    write: Callable[[ResultsStore], bool],
    *,
    create: bool = True,
) -> None:
    """Open the results store at ``path`` and ``write`` (False: ``key`` is stored already); a
    usage error, one line, for a store that cannot be written or a key stored already."""
    from dealroom.store.results import ResultsStore, StoreError

    try:
        with ResultsStore(path, create=create) as store:
            fresh = write(store)
    except (OSError, StoreError) as exc:
        raise usage_error(f"{path}: cannot write the results store ({exc})") from None
    if not fresh:
        raise usage_error(f"{path}: {what} {key!r} is already stored (give another --secret)")


def market_match_key(market_id: str, seller: str, buyers: Sequence[str]) -> str:
    """A market match's key in the results store: the same market (its id, from the secret),
    seller and buyers give the same key, so it is stored once."""
    return f"{MARKET_MATCH_RUN}/{market_id}/{seller}/{pool_name(buyers)}"


def store_market(path: Path, key: str, record: MarketRecord, extra: Mapping[str, Any]) -> None:
    """Add one market match to a results store under ``key`` (``market_match_key``); a usage
    error if the key is stored already (nothing is written twice)."""

    def add(store: ResultsStore) -> bool:
        return store.add_market(key, record, run=MARKET_MATCH_RUN, extra=extra)

    _stored_once(path, "market", key, add)


def seat_settings(args: argparse.Namespace) -> SeatSettings:
    """How model seats play, from the LLM flags (``add_llm_flags``)."""
    return SeatSettings(
        base_url=args.base_url,
        max_tool_rounds=args.max_tool_rounds,
        model_timeout_s=args.model_timeout,
        model_attempts=args.model_attempts,
        model_backoff_s=args.model_backoff,
        trace=args.trace,
        elicit_beliefs=args.elicit_beliefs,
    )


def flag_options(args: argparse.Namespace) -> PlayerOptions:
    """The options the LLM flags give seat players (this imports the Agents SDK)."""
    from dealroom.agents.lineup import player_options as options

    return options(seat_settings(args))


def player(spec: str, args: argparse.Namespace) -> Player:
    """The player a spec names (any kind the registry knows), or a usage error. Scripted
    agents are built without the seat players' options (so without the Agents SDK)."""
    try:
        options = None if scripted(spec) else flag_options(args)
        return resolve_player(spec, options)
    except AgentSpecError as exc:
        raise usage_error(str(exc)) from None


def checked_lineup(play: PlaySettings) -> Lineup:
    """``dealroom.agents.lineup.lineup``, its errors as usage errors."""
    from dealroom.agents.lineup import lineup as build
    from dealroom.agents.roster import RosterError

    try:
        return build(play)
    except (RosterError, AgentSpecError) as exc:
        raise usage_error(str(exc)) from None

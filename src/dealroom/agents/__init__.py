"""Agents: scripted strategies, the seat players (``llm:MODEL``, ``human``) and the registry
that names them all."""

# Imported for its side effect: it registers the built-in agents.
from dealroom.agents import builtin as _builtin  # noqa: F401  # pyright: ignore[reportUnusedImport]
from dealroom.play.registry import (
    AgentEntry,
    AgentFamily,
    AgentSpecError,
    MissingExtraError,
    PlayerOptions,
    SeatEntry,
    entries,
    families,
    is_scripted,
    parse_spec,
    resolve,
    resolve_player,
    seat_entries,
)

__all__ = [
    "AgentEntry",
    "AgentFamily",
    "AgentSpecError",
    "MissingExtraError",
    "PlayerOptions",
    "SeatEntry",
    "entries",
    "families",
    "is_scripted",
    "parse_spec",
    "resolve",
    "resolve_player",
    "seat_entries",
]

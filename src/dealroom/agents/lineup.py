"""Players from ``PlaySettings``: every spec and roster entry built once, every endpoint probed.

``lineup`` is where a front end (``dealroom tournament``, ``train evaluate``, the Inspect task)
turns what it plays into players, so a bad roster, a missing key or an unreachable endpoint is
one sentence before anything starts (``AgentSpecError`` or ``RosterError``), whatever the front
end. ``llm_settings`` is the one translation of ``SeatSettings`` into how an LLM seat runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dealroom.play.registry import AgentSpecError, PlayerOptions, is_scripted, resolve_player
from dealroom.play.settings import MODEL_MAX_BACKOFF_S, PlaySettings, SeatSettings

if TYPE_CHECKING:  # the Agents SDK loads only when a seat player is built
    from dealroom.agents.llm import LLMSettings
    from dealroom.play.players import Player


def llm_settings(seats: SeatSettings) -> LLMSettings:
    """How an LLM seat runs under ``seats``."""
    from dealroom.agents.llm import LLMSettings, RetryPolicy

    retry = RetryPolicy(
        attempts=seats.model_attempts,
        initial_s=seats.model_backoff_s,
        max_s=max(seats.model_backoff_s, MODEL_MAX_BACKOFF_S),
        timeout_s=seats.model_timeout_s,
    )
    return LLMSettings(
        max_tool_rounds=seats.max_tool_rounds,
        retry=retry,
        tracing=seats.trace,
        elicit_beliefs=seats.elicit_beliefs,
    )


def player_options(seats: SeatSettings) -> PlayerOptions:
    """The options seat players get (this imports the Agents SDK)."""
    return PlayerOptions(base_url=seats.base_url, settings=llm_settings(seats))


@dataclass(frozen=True, slots=True, eq=False)
class SpecResolver:
    """Specs to players with one front end's options (picklable: worker processes and Ray
    tasks build the same players). Roster entries come first, by name."""

    options: PlayerOptions
    roster: Mapping[str, Callable[[], Player]] = field(default_factory=dict[str, Any])
    """Roster entries' player builders (``dealroom.agents.roster.RosterPlayer``), by name."""

    def __call__(self, spec: str) -> Player:
        build = self.roster.get(spec.strip())
        if build is not None:
            return build()
        return resolve_player(spec, None if is_scripted(spec) else self.options)


@dataclass(frozen=True, slots=True)
class Lineup:
    """The agents of a run, how to build each, and what is recorded about the LLM entries (so
    a resume with other models or sampling settings is refused)."""

    agents: tuple[str, ...]
    resolver: SpecResolver
    entries: dict[str, Any]


def lineup(play: PlaySettings, *, probe: bool = True) -> Lineup:
    """Roster entries (the file's, then ``play.entries``), then ``play.agents``; every player is
    built once and, with ``probe``, every endpoint asked once whether it answers. Raises
    ``RosterError`` or ``AgentSpecError`` (one sentence each)."""
    from dealroom.agents import roster as rosters

    roster: dict[str, Any] = {}
    entries: dict[str, Any] = {}
    probes: dict[str, str | None] = {}
    loaded = [*(rosters.load(play.roster) if play.roster is not None else []), *play.entries]
    if loaded:
        if len({entry.name for entry in loaded}) != len(loaded):
            raise rosters.RosterError("two roster entries share a name")
        roster = rosters.players(loaded, llm_settings(play.seats))
        for entry in loaded:
            if _registered(entry.name):
                where = f"{play.roster}: " if play.roster is not None else ""
                raise rosters.RosterError(f"{where}[models.{entry.name}] is a registered agent")
            entries[entry.name] = entry.describe()
            probes.setdefault(entry.endpoint, roster[entry.name].api_key)
    agents = [*roster, *(spec for spec in play.agents if spec not in roster)]
    seats = [spec for spec in agents if spec not in roster and not is_scripted(spec)]
    chosen = SpecResolver(player_options(play.seats) if seats else PlayerOptions(), roster)
    for spec in agents:
        chosen(spec)
    if any(spec.startswith("llm:") for spec in seats):
        from dealroom.agents._llm_model import API_KEY_ENV, DEFAULT_BASE_URL_ENV

        url = (
            play.seats.base_url
            or os.environ.get(DEFAULT_BASE_URL_ENV)
            or "https://api.openai.com/v1"
        )
        probes.setdefault(url, os.environ.get(API_KEY_ENV))
    if probes and probe:
        rosters.probe_all(probes)
    return Lineup(tuple(agents), chosen, entries)


def _registered(name: str) -> bool:
    try:
        is_scripted(name)
    except AgentSpecError:
        return False
    return True


__all__ = ["Lineup", "SpecResolver", "lineup", "llm_settings", "player_options"]

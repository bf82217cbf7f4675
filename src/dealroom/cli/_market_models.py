"""Model sellers of ``dealroom markets``: ``llm:MODEL`` specs and ``--models`` roster entries.

They are built as ``dealroom tournament`` builds its LLM agents (``dealroom.agents.lineup``:
every entry checked and every endpoint probed before anything is stored, the entries recorded
with the run) and play the seller's seat of ``dealroom.agents.llm_market`` (the conversation
``train grpo --buyers N`` trains). Imported only when a model sells, so that the Agents SDK is
loaded only then.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dealroom.agents.lineup import SpecResolver
from dealroom.agents.llm import LLMPlayer
from dealroom.agents.llm_market import LLMMarketSeller
from dealroom.agents.market import market_seller
from dealroom.cli._common import usage_error
from dealroom.cli._players import checked_lineup
from dealroom.play.market_tournament import SeatSeller
from dealroom.play.registry import AgentSpecError
from dealroom.play.settings import PlaySettings, RosterEntry, SeatSettings
from dealroom.protocol.market import MarketAgentFactory


def is_model(spec: str) -> bool:
    """True for an ``llm:MODEL`` seller spec."""
    return spec.strip().startswith("llm:")


@dataclass(frozen=True, slots=True)
class MarketSellers:
    """Specs to market sellers: the models of the lineup as seat sellers, the rest scripted."""

    models: frozenset[str]
    resolver: SpecResolver

    def __call__(self, spec: str) -> MarketAgentFactory | SeatSeller:
        if spec not in self.models:
            return market_seller(spec)
        player = self.resolver(spec)
        if not isinstance(player, LLMPlayer):  # a roster entry or llm: spec is one, always
            raise AgentSpecError(f"seller {spec!r} is not a model")
        return LLMMarketSeller(player)


def model_sellers(
    sellers: Sequence[str],
    *,
    roster: Path | None,
    seats: SeatSettings,
    entries: Sequence[RosterEntry] = (),
) -> tuple[tuple[str, ...], MarketSellers, dict[str, Any]]:
    """The run's sellers (the given ones, then every roster entry not named), their resolver
    and what is recorded about the roster entries; usage errors in one line, before anything
    is stored (a bad roster, a missing key, an endpoint that does not answer)."""
    play = PlaySettings(
        agents=tuple(spec for spec in sellers if is_model(spec)),
        roster=roster,
        entries=tuple(entries),
        seats=seats,
    )
    players = checked_lineup(play)
    for name in players.entries:
        try:
            market_seller(name)
        except AgentSpecError:
            continue
        raise usage_error(f"roster entry {name!r} has the name of a scripted market seller")
    given = tuple(sellers)
    models = frozenset(players.agents)
    try:
        for spec in given:
            if spec not in models:
                market_seller(spec)
    except AgentSpecError as exc:
        raise usage_error(str(exc)) from None
    chosen = (*given, *(name for name in players.agents if name not in given))
    return chosen, MarketSellers(models, players.resolver), players.entries

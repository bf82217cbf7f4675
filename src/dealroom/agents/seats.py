"""The seat players the registry names besides scripted strategies: ``llm:MODEL`` and ``human``.

Registered with the built-in agents; each builder imports its player only when it is built, so
naming (and listing) them costs scripted runs nothing: the Agents SDK loads only when an LLM
actually plays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dealroom.play.registry import AgentSpecError, PlayerOptions, SeatEntry, register

if TYPE_CHECKING:
    from dealroom.play.players import Player


def _llm(model: str, options: PlayerOptions) -> Player:
    from dealroom.agents.llm import LLMConfigError, LLMPlayer, LLMSettings

    settings = options.settings if isinstance(options.settings, LLMSettings) else None
    try:
        return LLMPlayer.from_spec(
            f"llm:{model}", base_url=options.base_url, api_key=options.api_key, settings=settings
        )
    except LLMConfigError as exc:
        raise AgentSpecError(str(exc)) from None


def _human(argument: str, options: PlayerOptions) -> Player:
    del argument, options
    from dealroom.agents.human import HumanPlayer

    return HumanPlayer()


register(
    SeatEntry(
        name="llm",
        summary="a language model on an OpenAI-compatible endpoint (--base-url) or LiteLLM",
        build=_llm,
        argument="MODEL",
    )
)
register(SeatEntry(name="human", summary="a person at this terminal", build=_human))

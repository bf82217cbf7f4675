"""An LLM in a market's seller seat, on the virtual clock (``match --buyers N --seller llm:M``).

The seller of a ``MarketRoom`` is driven from outside one tool call at a time, with the
market seller's turn semantics (``dealroom.engine.market_calls``: an action returns once it has
taken effect, a wait sleeps until a buyer moves, its timeout or the end, ``get_state`` costs no
clock time).

The conversation is the one model seat's (``dealroom.protocol.model_seat``) with the market
seller's tools (``dealroom.protocol.market_seat``) and texts (``dealroom.protocol.market_text``),
played by the bilateral LLM seat's turn loop (``TurnLoop``) with its model, meter and settings
(``LLMPlayer``). Once the model's play ends (a reply without tool calls, the round limit, a full
context) the seller sits out, silent, until the market ends; its live offers can still be
accepted. A model call that fails for good makes the seller walk away from the whole market,
and the error is kept beside the record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from dealroom.agents._llm_chat import Conversation, Sampling
from dealroom.agents._llm_loop import TurnLoop
from dealroom.agents._llm_model import LLMError, Meter
from dealroom.agents._llm_tools import ToolStats
from dealroom.agents.llm import LLMPlayer, call_usage, usage_fields
from dealroom.engine.market import MarketRoom, buyer_agents, market_record, market_view
from dealroom.engine.market_calls import MarketSellerCalls
from dealroom.play.players import OnModelCall
from dealroom.protocol import AgentFactory, model_seat
from dealroom.protocol.market import (
    DEFAULT_MARKET_RULES,
    MarketRules,
    MarketScenario,
    MarketView,
)
from dealroom.protocol.market_referee import MarketRecord
from dealroom.protocol.market_seat import bind_market, market_tools
from dealroom.protocol.market_text import market_briefing
from dealroom.protocol.secret import Seed
from dealroom.protocol.wire import ClockKind


class MarketSellerSeat:
    """The driven seller of a ``MarketRoom`` for a model's raw calls, counted: ``call`` checks
    one call against its tool's signature, makes it (``MarketSellerCalls``) and returns the text
    the model reads (see the module's docstring)."""

    def __init__(self, room: MarketRoom, stats: ToolStats) -> None:
        self.calls = MarketSellerCalls(room)
        self.stats = stats

    @property
    def over(self) -> bool:
        """True once the market has ended."""
        return self.calls.over

    async def call(self, name: str, raw: str) -> str:
        """One call with the model's raw arguments, counted: the text the model reads."""
        stats = self.stats
        stats.calls[name] += 1
        bound = bind_market(name, model_seat.parse_arguments(raw))
        if isinstance(bound, str):
            return stats.invalid_call(bound)
        reply = self.calls.call(bound)
        if reply.refused:
            stats.refused += 1
            return stats.error(reply.text)
        return reply.text

    async def finish(self, *, leave: bool) -> None:
        """The model's play has ended: sit out to the end of the market, after walking away
        from it if ``leave`` (its model failed)."""
        if leave:
            self.calls.leave()
        else:
            self.calls.sit_out()


class ModelSellerSeat(Protocol):
    """What ``MarketGame`` plays: a seller seat for a model's raw calls, counted in ``stats``
    (``MarketSellerSeat`` on a bare ``MarketRoom``; a served room's seller,
    ``dealroom.agents.llm_market_served``)."""

    stats: ToolStats

    @property
    def over(self) -> bool: ...

    async def call(self, name: str, raw: str) -> str: ...

    async def finish(self, *, leave: bool) -> None: ...


class MarketGame:
    """One market of an LLM seller: its seat, its conversation and its counters;
    ``on_model_call`` sees each model call's usage as it returns (the paid-call journal)."""

    def __init__(
        self,
        player: LLMPlayer,
        room: MarketRoom | ModelSellerSeat,
        view: MarketView,
        clock: ClockKind = "virtual",
        *,
        on_model_call: OnModelCall | None = None,
    ) -> None:
        self.player = player
        self.clock: ClockKind = clock
        """How time passes, as its briefing says (a served wall-clock room's: ``wall``)."""
        self.settings = settings = player.settings
        self.view = view
        self.seat: ModelSellerSeat = (
            MarketSellerSeat(room, ToolStats()) if isinstance(room, MarketRoom) else room
        )
        self.stats = self.seat.stats
        self.meter = Meter(settings.retry)
        if on_model_call is not None:
            prices = settings.prices
            self.meter.on_completion = lambda reply: on_model_call(call_usage(reply, prices))
        self.turns = TurnLoop(self.meter, settings.max_tool_rounds)
        self.definitions = market_tools(view.rules.rules)
        self.chat: Conversation | None = None
        self.error: str | None = None

    async def run(self) -> None:
        """Play the seller's seat to the end of the market."""
        sampling = Sampling(
            temperature=self.settings.temperature,
            max_tokens=self.settings.max_tokens,
            reasoning_effort=self.settings.reasoning_effort,
        )
        chat = self.chat = self.player.model.conversation(self.definitions, sampling)
        for message in model_seat.opening(market_briefing(self.view, self.clock)):
            chat.add_user(message["content"])
        seat = self.seat
        try:
            await self.turns.run(chat, seat.call, lambda: seat.over)
        except LLMError as exc:
            self.error = str(exc)
        except Exception as exc:  # the SDK's own errors (e.g. ModelBehaviorError), as LLMPlayer
            self.error = f"{type(exc).__name__}: {exc}"
        await seat.finish(leave=self.error is not None)

    def extra(self) -> dict[str, Any]:
        """What is kept beside the record for the seller: usage, counts, cost, the error if
        any, and the model's conversation (what it read and wrote, with its tools)."""
        messages = [] if self.chat is None else self.chat.messages()
        data: dict[str, Any] = {
            **self.turns.as_dict(),
            **usage_fields(self.meter, self.settings.prices),
            **self.stats.as_dict(),
            "conversation": {"messages": messages, "tools": self.definitions},
        }
        if self.error is not None:
            data["error"] = self.error
        return data


class LLMMarketSeller:
    """An LLM player as a market tournament's seat seller (``play.market_tournament``): each
    market is ``play_llm_market``'s, on the player's model, settings and endpoint limit."""

    def __init__(self, player: LLMPlayer) -> None:
        self.player = player
        self.name = player.name
        self.endpoint = player.endpoint

    async def sell(
        self,
        market: MarketScenario,
        buyers: Sequence[AgentFactory],
        *,
        buyer_names: Sequence[str],
        rules: MarketRules,
        seed: Seed,
        on_model_call: OnModelCall | None = None,
    ) -> tuple[MarketRecord, dict[str, Any]]:
        """Play one market in the seller's seat: its record and the seller's data."""
        return await play_llm_market(
            market,
            self.player,
            buyers,
            buyer_names=buyer_names,
            rules=rules,
            seed=seed,
            on_model_call=on_model_call,
        )

    async def aclose(self) -> None:
        """Close the player's connections."""
        await self.player.aclose()


async def play_llm_market(
    market: MarketScenario,
    player: LLMPlayer,
    buyers: Sequence[AgentFactory],
    *,
    buyer_names: Sequence[str] | None = None,
    rules: MarketRules = DEFAULT_MARKET_RULES,
    seed: Seed = 0,
    on_model_call: OnModelCall | None = None,
) -> tuple[MarketRecord, dict[str, Any]]:
    """Play one market with ``player``'s model in the seller's seat and scripted buyers; the
    record and the seller's data (``MarketGame.extra``). Buyers draw as in ``play_market``;
    ``on_model_call`` sees each model call's usage as it returns."""
    room = MarketRoom(market, rules, buyers=buyer_agents(market, buyers, seed))
    view = market_view(market, rules)
    game = MarketGame(player, room, view, on_model_call=on_model_call)
    await game.run()
    names = list(buyer_names or [f"buyer {b}" for b in market.buyers])
    return market_record(room, (player.name, names)), game.extra()


__all__ = ["LLMMarketSeller", "MarketGame", "MarketSellerSeat", "play_llm_market"]

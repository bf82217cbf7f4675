"""Models in any seat of a served market: the seller's seat beside client seats or model buyers.

``dealroom.agents.llm_market`` plays a model seller on a bare ``MarketRoom`` whose buyers are
all house agents. Where other seats are driven too (model buyers, clients of a market room),
the seller's calls must take their turns: here the same conversation (``MarketGame``: the one
model seat, the market seller's tools and texts) makes each call through the seat a seller
client is served (``ServedMarketSeller``: the same calls, ``MarketSellerCalls``, the same texts),
which waits for the seller's turn (``dealroom.server.market_clients``).

``model_market_player`` makes an ``llm:`` player the in-process player of any seat of a served
market (``MarketPlayer``): the seller's through ``MarketGame``, a buyer's through the bilateral
model seat (``dealroom.play.market_players``). ``dealroom match --buyers N`` and a market room's
``house_seller`` / ``house_buyers`` both use it.
"""

from __future__ import annotations

from dealroom.agents._llm_tools import ToolStats
from dealroom.agents.llm import LLMPlayer
from dealroom.agents.llm_market import MarketGame
from dealroom.engine.market import market_view
from dealroom.engine.market_turns import SELLER
from dealroom.play.market_players import PaidHooks, market_house_player
from dealroom.play.players import OnModelCall
from dealroom.protocol import model_seat
from dealroom.protocol.market_seat import bind_market
from dealroom.server.market_room import MarketPlayer, MarketRoomServed
from dealroom.server.market_seats import ServedMarketSeller

SIT_OUT_WAIT_S = 20.0
"""Timeout of the silent waits of a seller whose play has ended."""


class ServedSellerSeat:
    """A served market's seller seat for a model's raw calls, counted
    (``llm_market.ModelSellerSeat``): each call is checked against its tool's signature and
    made at the seller's turn."""

    def __init__(self, room: MarketRoomServed) -> None:
        self.room = room
        self.seller = ServedMarketSeller(room)
        self.stats = ToolStats()

    @property
    def over(self) -> bool:
        """True once the market has ended."""
        return not self.room.is_open

    async def call(self, name: str, raw: str) -> str:
        """One call with the model's raw arguments, counted: the text the model reads."""
        stats = self.stats
        stats.calls[name] += 1
        bound = bind_market(name, model_seat.parse_arguments(raw))
        if isinstance(bound, str):
            return stats.invalid_call(bound)
        text, view = await self.seller.call(bound.name, bound.arguments)
        if view is None:
            stats.refused += 1
            return stats.error(text)
        return text

    async def finish(self, *, leave: bool) -> None:
        """Sit out (silent waits, no model call) to the end of the market, after walking away
        from it if ``leave``."""
        if leave and not self.over:
            await self.seller.call("walk_away", {})
        while not self.over:
            await self.seller.call("wait_for_opponent", {"timeout_s": SIT_OUT_WAIT_S})


async def play_served_seller(
    room: MarketRoomServed, player: LLMPlayer, *, on_model_call: OnModelCall | None = None
) -> None:
    """Play ``room``'s seller seat with ``player``'s model to the end of the market; its data
    (``MarketGame.extra``, with ``name``) is the room's ``played["seller"]``;
    ``on_model_call`` sees each model call's usage as it returns."""
    seat = ServedSellerSeat(room)
    view = market_view(room.market, room.rules)
    game = MarketGame(player, seat, view, room.clock, on_model_call=on_model_call)
    try:
        await game.run()
    except Exception as exc:  # a failure outside the model's turns (MarketGame keeps those)
        game.error = f"{type(exc).__name__}: {exc}"
        await seat.finish(leave=True)
    finally:
        room.played[SELLER] = {"name": player.name, **game.extra()}


def model_market_player(player: LLMPlayer, *, paid: PaidHooks | None = None) -> MarketPlayer:
    """``player`` as the in-process player of a served market's seat: the seller's, or any
    buyer's; ``paid`` gives the seat's hook for its model calls (the paid-call journal)."""
    buyer = market_house_player(player, paid=paid)

    async def play(room: MarketRoomServed, seat: str) -> None:
        if seat == SELLER:
            hook = None if paid is None else paid(seat, player.name)
            await play_served_seller(room, player, on_model_call=hook)
        else:
            await buyer.play(room, seat)

    return MarketPlayer(spec=player.name, play=play)


__all__ = ["ServedSellerSeat", "model_market_player", "play_served_seller"]

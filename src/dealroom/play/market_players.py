"""Players of a market's buyer seats through their tools: a model buyer in a market.

A buyer seat of a served market (``dealroom.server.market_room.MarketRoomServed``) that is no
house agent is a client seat; a ``Player`` (an ``llm:`` seat) plays it in this process through
the very seat an MCP buyer client is served (``ServedMarketBuyer``, called as functions by
``SeatClient.local``): the bilateral buyer's tools and results from its own thread only, and
its briefing followed by the market line. So a model buyer reads the bilateral model seat's
buyer conversation, and exactly what an MCP buyer client of the same room reads.

The seats take their turns on the virtual clock (``dealroom.server.market_clients``), so the
market's record depends on what each seat decides, never on how long a model takes to answer:

- ``play_market_seat`` plays one client seat and ends it if its player fails (the seat walks
  away from its thread, and the error is kept), as a bilateral room's in-process player does;
- ``market_house_player`` makes a player a served market room's in-process buyer
  (``MarketPlayer``): it takes its turns as a client seat does, under the room's idle and
  abandon rules;
- ``play_served_market`` plays a whole market whose driven seats are all players in this process
  (``dealroom match --buyers N --buyer llm:M``, a model seller beside them or not); there a wait
  sleeps until the seat's wake however long the other seats' models take (never ``woke:
  pending``), and no seat is counted idle: the wall clock plays no part.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import structlog

from dealroom.client.seat import SeatClient
from dealroom.engine.market_turns import SELLER
from dealroom.play.players import OnModelCall, Player, PlayerFailed, SeatContext
from dealroom.play.runner import FAILED_MESSAGE
from dealroom.protocol import WalkAway
from dealroom.protocol.market import MarketRules, MarketScenario
from dealroom.protocol.market_referee import MarketRecord
from dealroom.protocol.secret import Seed
from dealroom.server.market_room import MarketPlayer, MarketRoomServed, SellerHouse
from dealroom.server.market_seats import ServedMarketBuyer
from dealroom.server.negotiation import RoomLimits
from dealroom.server.room_settings import House

log = structlog.stdlib.get_logger(__name__)

PaidHooks = Callable[[str, str], OnModelCall | None]
"""Given a seat (``seller``, ``b1`` ..) and its player's name, the hook that sees each of its
model calls' usage as it returns (``SeatContext.on_model_call``: the paid-call journal), or
None."""

CLEANUP_S = 30.0
"""Wall seconds a failed seat's walk-away may wait for its turn."""

NO_WALL_LIMITS = RoomLimits(idle_s=math.inf, abandon_s=math.inf, max_wait_s=math.inf)
"""A market whose every driven seat is played in process: nobody is counted idle or absent, and
a wait sleeps until its wake (``MarketClients.wait_limit``)."""


async def play_market_seat(
    room: MarketRoomServed,
    name: str,
    player: Player,
    *,
    seed: Seed,
    report: Callable[[Mapping[str, Any]], None] | None = None,
    on_model_call: OnModelCall | None = None,
) -> dict[str, Any]:
    """Play buyer seat ``name`` of ``room`` with ``player`` to the end of its thread: what the
    player returned (``{"name": ..., **data}``), with ``error`` if it failed or stopped early;
    then the seat walks away from its thread (bounded by ``CLEANUP_S``). ``report`` gets the
    player's data each time it changes (``SeatContext.report``), ``on_model_call`` each model
    call's usage as it returns."""
    seat = ServedMarketBuyer(room, name)
    context = SeatContext(
        role="buyer",
        rules=room.rules.rules,
        seed=seed,
        on_model_call=on_model_call,
        report=report,
    )
    error: str | None = None
    data: Mapping[str, Any] = {}
    try:
        async with SeatClient.local(seat) as client:
            data = await player.play(client, context)
    except PlayerFailed as failure:
        error, data = failure.message, failure.extra
    except Exception as exc:  # a player's bug must not stall the market's clock
        log.exception("player failed", seat=name, player=player.name)
        error = f"{type(exc).__name__}: {exc}"
    if error is None and not seat.calls.closed:
        error = "the player stopped before its thread ended"
    played: dict[str, Any] = {"name": player.name, **data}
    if error is not None:
        played["error"] = error
        log.warning("player failed; walking away for it", seat=name, error=error)
        await _walk_away(seat)
    return played


def market_house_player(player: Player, *, paid: PaidHooks | None = None) -> MarketPlayer:
    """``player`` as the in-process player of a market room's buyer seat (``--house-buyers
    b2=llm:MODEL``): it plays the seat as a client would, and its data (usage, counts, its
    conversation, its error) is the room's ``played[seat]``, kept up to date as it plays;
    ``paid`` gives the seat's hook for its model calls."""

    async def play(room: MarketRoomServed, seat: str) -> None:
        def report(data: Mapping[str, Any]) -> None:
            room.played[seat] = {"name": player.name, **data}

        hook = None if paid is None else paid(seat, player.name)
        played = await play_market_seat(
            room, seat, player, seed=room.seed, report=report, on_model_call=hook
        )
        room.played[seat] = played

    return MarketPlayer(spec=player.name, play=play)


async def _walk_away(seat: ServedMarketBuyer) -> None:
    """End a failed seat's thread (a refusal means it has already ended); then it sits out."""
    with anyio.move_on_after(CLEANUP_S):
        try:
            await seat.act(WalkAway(message=FAILED_MESSAGE))
        except Exception as exc:
            log.info("walk-away for failed seat refused", seat=seat.name, error=str(exc))


async def play_served_market(
    market: MarketScenario,
    rules: MarketRules,
    *,
    seller: SellerHouse | MarketPlayer,
    buyers: Mapping[str, House | MarketPlayer],
    seed: Seed,
) -> tuple[MarketRecord, dict[str, dict[str, Any]]]:
    """Play one market whose seats are house agents or in-process players (``MarketPlayer``:
    a model buyer from ``market_house_player``, a model seller from
    ``dealroom.agents.llm_market_served``): the record, and each player's data by seat (the
    seller first)."""
    houses = {name: seat for name, seat in buyers.items() if isinstance(seat, House)}
    players = {name: seat for name, seat in buyers.items() if isinstance(seat, MarketPlayer)}
    if isinstance(seller, MarketPlayer):
        players = {SELLER: seller, **players}
    room = MarketRoomServed(
        "match",
        market,
        rules,
        seller=seller if isinstance(seller, SellerHouse) else None,
        buyers=houses,
        seed=seed,
        run="match",
        writer=None,
        players=players,
        limits=NO_WALL_LIMITS,
    )
    await room.play()
    if room.is_open:  # every player returned with its seat closed: the rest is the houses'
        raise RuntimeError(f"the market did not end (turn: {room.turns.turn!r})")
    return room.record(), {seat: room.played[seat] for seat in players}


__all__ = [
    "NO_WALL_LIMITS",
    "PaidHooks",
    "market_house_player",
    "play_market_seat",
    "play_served_market",
]

"""stdio, house mode: this process is one client's seat against a house agent.

The other seat may be an in-process player of the room (an LLM): it plays while the server runs
and is cancelled when the client closes the stream.

On stdio the wire is stdout: nothing else may be written there. Logs go to stderr (the entry
point configures them before the MCP server is built).
"""

from __future__ import annotations

import anyio
import structlog

from dealroom.protocol import Role
from dealroom.server.market_room import SELLER
from dealroom.server.market_seats import ServedMarketBuyer, ServedMarketSeller
from dealroom.server.market_series import MarketSeries
from dealroom.server.mcp_app import build_app
from dealroom.server.room import Room
from dealroom.server.seat import RoomSeat
from dealroom.server.stdio_wire import serve_stdio_wire


async def serve_stdio(room: Room, role: Role, *, reap_interval: float = 1.0) -> None:
    """Serve ``role`` of ``room`` on stdin/stdout until the client closes the stream."""
    structlog.contextvars.bind_contextvars(room=room.id, seat=role)
    seat = RoomSeat(room, role)
    app = build_app(lambda: seat, series=room.series.available)

    async def reap() -> None:
        # Ends wall-clock negotiations at their deadline even while the client is silent.
        while True:
            await anyio.sleep(reap_interval)
            await room.current.tick()

    async with room.playing(), anyio.create_task_group() as group:
        group.start_soon(reap)
        if room.records.writer is not None:  # results that could not be written yet, retried
            group.start_soon(room.records.writer.retry_forever, reap_interval)
        await serve_stdio_wire(app)
        group.cancel_scope.cancel()


async def serve_market_stdio(markets: MarketSeries) -> None:
    """Serve the client seat of a market room's series on stdin/stdout until the client closes
    the stream (a seller's: the market seller's tools; a buyer's: the buyer's), each call on the
    series' current market (``new_negotiation`` starts the next, as in an HTTP room)."""
    name = markets.current.client_seat
    structlog.contextvars.bind_contextvars(room=markets.id, seat=name)

    def seat() -> ServedMarketSeller | ServedMarketBuyer:
        market = markets.current
        if name == SELLER:
            return ServedMarketSeller(market, series=markets)
        return ServedMarketBuyer(market, name, series=markets)

    await serve_stdio_wire(build_app(seat, series=markets.series.available))

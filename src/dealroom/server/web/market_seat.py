"""The seat page's routes for a market room's seat tokens (a buyer's, or the seller's): the same
paths as a bilateral seat's (``/web/api/seat[/events|/call|/consent|/page]``), each answered here
for a market seat's token and by ``routes.WebApi`` for any other.

- ``GET /web/api/seat[/events]``: the seat's page (``market_seat_views``: a buyer's own thread
  only; the seller's every thread), now or live (read again every ``STREAM_POLL_S``: it changes
  when a seat's call settles);
- ``POST /web/api/seat/call``: one tool call through the seat's MCP calls (``seat_calls``): a
  buyer is offered the tools its MCP client is, the seller the market seller's (each action
  naming a buyer). A call waits for its seat's turn on the market's clock, as an MCP call does
  (``dealroom.server.market_clients``): the page says whose turn it is;
- ``POST /web/api/seat/consent``: refused (a market room asks no consent);
- ``POST /web/api/seat/page``: a page event, logged.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from dealroom.server.gone import while_connected
from dealroom.server.market_room import SELLER
from dealroom.server.market_seats import ServedMarketBuyer, ServedMarketSeller
from dealroom.server.market_series import MarketSeries
from dealroom.server.rooms import RoomRegistry
from dealroom.server.seat import ServedSeat
from dealroom.server.study import PAGE_EVENTS
from dealroom.server.web.market_seat_views import market_buyer_view, market_seller_view
from dealroom.server.web.routes import NO_STORE, WebApi, bearer, body_within, error, read_call
from dealroom.server.web.seat_calls import seat_call, seller_call

log = structlog.stdlib.get_logger(__name__)

MarketSeat = tuple[MarketSeries, str]
"""A market room and one of its client seats (``seller``, or a buyer's name)."""


def market_seat_json(series: MarketSeries, seat: str) -> str:
    """The seat page's view of a market seat in its room's current market, as JSON. On the wall
    clock the page shows the market as it stands now (as a bilateral wall room's page does):
    showing it starts the market's clock, if no call has, and brings it up to the present."""
    if series.current.wall is not None:
        series.current.wall.step(True)
    if seat == SELLER:
        return market_seller_view(series.current, series).model_dump_json()
    return market_buyer_view(series.current, seat, series).model_dump_json()


class MarketSeatApi:
    """The seat page's routes, a market seat's token answered here, any other by ``api``."""

    def __init__(self, registry: RoomRegistry, api: WebApi) -> None:
        self.registry = registry
        self.api = api

    def _market_seat(self, request: Request) -> MarketSeat | None:
        """The market seat the request's token opens; None for any other token (or none)."""
        token = bearer(request)
        found = None if token is None else self.registry.seat_for_token(token)
        if found is None:
            return None
        room = self.registry.markets.get(found[0])
        return None if room is None else (room, found[1])

    async def seat(self, request: Request) -> Response:
        """GET /web/api/seat: the seat page's view now."""
        found = self._market_seat(request)
        if found is None:
            return await self.api.seat(request)
        return Response(market_seat_json(*found), media_type="application/json")

    async def seat_events(self, request: Request) -> Response:
        """GET /web/api/seat/events: the seat page's view, live."""
        found = self._market_seat(request)
        if found is None:
            return await self.api.seat_events(request)
        room, seat = found

        async def read() -> str:
            return market_seat_json(room, seat)

        return self.api.streaming(read, anyio.sleep, (room.id, seat))

    async def call(self, request: Request) -> Response:
        """POST /web/api/seat/call ``{"tool": name, "arguments": {...}}``: one tool call."""
        found = self._market_seat(request)
        if found is None:
            return await self.api.call(request)
        room, seat = found
        called = await read_call(request)
        if isinstance(called, Response):
            return called
        tool, arguments = called
        served = self.registry.served_seat(room.id, seat)  # the MCP client's seat, series and all
        with structlog.contextvars.bound_contextvars(room=room.id, seat=seat, tool=tool[:64]):
            reply = await while_connected(request, lambda: _call(served, tool, arguments))
        if reply is None:  # no one reads it
            return error(400, "the client has gone")
        return JSONResponse(reply, headers=NO_STORE)

    async def consent(self, request: Request) -> Response:
        """POST /web/api/seat/consent: a market room asks no consent."""
        if self._market_seat(request) is None:
            return await self.api.consent(request)
        return error(400, "this room asks for no consent")

    async def page(self, request: Request) -> Response:
        """POST /web/api/seat/page ``{"event": ...}``: what the person's page did (logged)."""
        found = self._market_seat(request)
        if found is None:
            return await self.api.page(request)
        body = await body_within(request, 256)
        try:
            event = json.loads(body or b"{}").get("event")
        except (ValueError, UnicodeDecodeError, AttributeError):
            event = None
        if event not in PAGE_EVENTS:
            return error(400, f"event must be one of {', '.join(PAGE_EVENTS)}")
        log.info("page event", page=event, room=found[0].id, seat=found[1])
        return Response(status_code=204, headers=NO_STORE)


async def _call(
    served: ServedSeat | ServedMarketSeller, tool: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    if isinstance(served, ServedMarketSeller):
        return await seller_call(served, tool, arguments)
    assert isinstance(served, ServedMarketBuyer)  # a market seat's token serves a market seat
    return await seat_call(served, tool, arguments, series=True, clock=served.room.clock)


__all__ = ["MarketSeatApi", "market_seat_json"]

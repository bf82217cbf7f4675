"""A seat page's tool calls, made as the seat's MCP client makes them (one home for what a seat
can do: ``dealroom.server.mcp_app.dispatch`` for a bilateral seat and a market's buyer,
``ServedMarketSeller.call`` for a market's seller), answered in a person's words.

A reply is ``{"text", "result"}``: the text a person reads (``people_log.reply``, or a market
seller's ``people_market.seller_reply``) and the JSON the MCP client gets; or ``{"error": {"code",
"text"}}``: the refusal's stable code as MCP sends it and its words for the page
(``people_text.refusal``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from dealroom.protocol import people_log, people_text, seat_text
from dealroom.protocol.people_market import seller_reply
from dealroom.protocol.tools import ArgumentError, seat_tools, validate_arguments
from dealroom.protocol.wire import ClockKind, ToolErrorPayload
from dealroom.server.market_seats import ServedMarketSeller
from dealroom.server.mcp_app import dispatch
from dealroom.server.seat import CallRefused, ServedSeat

log = structlog.stdlib.get_logger(__name__)


async def seat_call(
    seat: ServedSeat, name: str, arguments: dict[str, Any], *, series: bool, clock: ClockKind
) -> dict[str, Any]:
    """One tool call of a bilateral seat or a market's buyer (``series``: whether the seat is
    offered the series tool, as its MCP client is)."""
    offered = {t.name: t for t in seat_tools(series=series)}
    spec = offered.get(name)
    if spec is None:
        return refused_call(seat_text.unknown_tool(name, offered))
    try:
        args = validate_arguments(spec, arguments)
        result = await dispatch(seat, spec, args)
    except (ArgumentError, CallRefused) as refusal:
        return refused_call(refusal.payload)
    role, currency = await seat.viewer()
    text = people_log.reply(result, role, currency, clock=clock, surface="web")
    return {"text": text, "result": result.model_dump(mode="json")}


async def seller_call(
    seat: ServedMarketSeller, name: str, arguments: Mapping[str, Any]
) -> dict[str, Any]:
    """One call of a market seller's tool (each action names a buyer): its result is the
    seller's view (``MarketObservation``), as the MCP tool's structured result."""
    text, view = await seat.call(name, arguments)
    if view is None:  # refused: its text is the model's one line, code first
        return refused_call(ToolErrorPayload.parse(text.partition("\n")[0]))
    return {"text": seller_reply(text, seat.room.clock), "result": view}


def refused_call(payload: ToolErrorPayload) -> dict[str, Any]:
    """A refusal in the page's words (``people_text.refusal``); its code as MCP sends it."""
    log.info("web call refused", code=payload.code)
    return {"error": {"code": payload.code, "text": people_text.refusal(payload, "web")}}


__all__ = ["refused_call", "seat_call", "seller_call"]

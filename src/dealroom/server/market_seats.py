"""The client seats of a served market (``dealroom.server.market_room``): buyers' and the seller's.

- ``ServedMarketBuyer`` is a ``ServedSeat``: a buyer's client gets today's buyer tools, results
  and refusals, built from its own thread only (``MarketBuyerCalls``), and the bilateral
  briefing of its thread followed by what it is told of the market
  (``market_text.buyer_market_text``: the number of buyers when
  ``MarketRules.buyers_know_count`` says so). Nothing it can read holds another buyer's value or
  thread.
- ``ServedMarketSeller`` serves the market seller's tools (``dealroom.protocol.market_seat``: the
  bilateral tools, each action naming a buyer) and texts (``market_text``), the one home of
  both; the MCP surface lists and calls them in place of the bilateral ones
  (``dealroom.server.mcp_app``).

Every tool call waits for its seat's turn (``dealroom.server.market_clients``) and stores the
market once it has ended; the resources and the briefing read the seat's latest view at once.

A client's seat (HTTP, stdio) is served with its room's series (``dealroom.server.market_series``):
``new_negotiation`` starts the next market where the room plays a series (refused
``series_unavailable`` where several seats are clients', ``negotiation_running`` while the market
is on), and get_state carries the series (a buyer's ``SeatState`` fields; the seller's
``series``, a ``SeriesTally``, beside its view). A seat without one (an in-process player's, which
its market starts afresh) plays its one market.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from dealroom.engine.market import market_view
from dealroom.protocol import (
    Action,
    ActionResult,
    Role,
    RuleViolation,
    SeatState,
    SessionErrorCode,
    WaitResult,
    model_seat,
    seat_text,
)
from dealroom.protocol.market import Addressed, MarketRules
from dealroom.protocol.market_seat import (
    SERIES_TOOL,
    GetState,
    Wait,
    market_tools,
    move_of,
    seller_tools,
)
from dealroom.protocol.market_text import buyer_market_text, market_briefing, market_state_text
from dealroom.protocol.model_seat import Bound
from dealroom.protocol.tools import ArgumentError, validate_arguments
from dealroom.protocol.wire import SeriesTally
from dealroom.server import texts
from dealroom.server.market_room import SELLER, MarketRoomServed
from dealroom.server.market_series import MarketSeries
from dealroom.server.room_error import RoomError
from dealroom.server.seat import CallRefused, descriptions


async def _next_market(series: MarketSeries | None) -> MarketRoomServed:
    """Start a seat's room's next market, then store the finished ones a failed write left
    pending; raises CallRefused, one line, when it cannot start now (a seat without a series:
    ``series_over``, one market)."""
    if series is None:
        message = "A market room plays one market; the server opens a new room for the next."
        raise CallRefused(seat_text.error_payload(SessionErrorCode.SERIES_OVER, message))
    try:
        market = series.start_next()
    except RoomError as error:
        raise CallRefused(seat_text.error_payload(error.code, error.message)) from None
    await series.save()
    return market


class ServedMarketBuyer:
    """A market room's buyer seat played by its client (a ``ServedSeat``)."""

    def __init__(
        self, room: MarketRoomServed, name: str, *, series: MarketSeries | None = None
    ) -> None:
        calls = room.buyer_calls.get(name)
        if calls is None:
            raise ValueError(f"buyer {name!r} of room {room.id} is no client's")
        self.room = room
        self.calls = calls
        self.name = name
        self.series = series
        """The room's series (a client's seat), or None: one market."""

    @property
    def log_context(self) -> Mapping[str, str]:
        """Room and seat."""
        return {"room": self.room.id, "seat": self.name}

    async def viewer(self) -> tuple[Role, str]:
        """A buyer, and the market's currency."""
        return "buyer", self.room.market.base.currency

    async def tool_descriptions(self) -> Mapping[str, str]:
        """The bilateral tools' descriptions under the threads' rules."""
        return descriptions(self.room.rules.rules)

    async def act(self, action: Action) -> ActionResult:
        """One action in its thread, at its turn; returns once it has taken effect and it is
        the seat's turn again. Raises CallRefused if refused."""
        clients = self.room.clients
        async with clients.call(self.name, action):
            try:
                result = await clients.served(self.name, lambda: self.calls.begin_act(action))
            except RuleViolation as violation:
                refusal = seat_text.error_payload(violation.code, violation.message)
                raise CallRefused(refusal) from None
            assert result is not None  # no limit
            return result

    async def wait(self, timeout_s: float) -> WaitResult:
        """Sleep until the seller moves in its thread, the timeout on the clock, or the end;
        ``woke: pending`` (still asleep) if other clients are still deciding after
        ``timeout_s`` (at most the room's ``max_wait_s``) wall seconds."""
        clients = self.room.clients
        limit = clients.wait_limit(timeout_s)
        async with clients.call(self.name):
            begin = self.calls.begin_wait
            result = await clients.served(self.name, lambda: begin(timeout_s), limit=limit)
            return self.calls.pending() if result is None else result

    async def state(self) -> SeatState:
        """Its thread as it sees it at its turn; marks every event as seen."""
        async with self.room.clients.call(self.name):
            await self.room.clients.turn(self.name)
            observation = self.calls.observe(deliver=True)
            if self.series is None:
                surplus = (
                    Decimal("0.00") if observation.outcome is None else observation.outcome.surplus
                )
                tally = SeriesTally(
                    negotiation=1,
                    finished=0 if self.room.is_open else 1,
                    total_surplus=surplus,
                    can_start_next=False,
                )
                results = ()
            else:
                tally, results = self.series.tally(self.name), self.series.results(self.name)
            return SeatState(
                observation=observation,
                negotiation=tally.negotiation,
                results=results,
                finished=tally.finished,
                total_surplus=tally.total_surplus,
                can_start_next=tally.can_start_next,
                clock=self.room.clock,
                hint=self.calls.hint(),
            )

    async def new_negotiation(self) -> SeatState:
        """The room's next market (its series'), and the seat's state in it; refused
        (``CallRefused``) where the room starts none now."""
        market = await _next_market(self.series)
        return await ServedMarketBuyer(market, self.name, series=self.series).state()

    async def observation_json(self) -> str:
        """Its thread's observation (JSON; events not marked as seen)."""
        return self.calls.observe(deliver=False).model_dump_json(indent=2)

    async def transcript(self) -> str:
        """Its thread so far, one line per event."""
        return texts.transcript(self.calls.observe(deliver=False))

    async def briefing(self) -> str:
        """The bilateral briefing of its thread, then what it is told of the market."""
        rules = self.room.rules
        thread = texts.briefing(
            self.calls.observe(deliver=False), rules.rules, clock=self.room.clock
        )
        series = self.series is not None and self.series.series.available
        buyers = len(self.room.market.buyers)
        market = buyer_market_text(buyers, know_count=rules.buyers_know_count, series=series)
        return f"{thread}\n\n{market}"

    async def model_tools(self) -> str:
        """The bilateral buyer's tools as the one model seat offers them."""
        return json.dumps(model_seat.tools(self.room.rules.rules))


class ServedMarketSeller:
    """A market room's seller seat played by its client: the market seller's tools."""

    def __init__(self, room: MarketRoomServed, *, series: MarketSeries | None = None) -> None:
        calls = room.seller_calls
        if calls is None:
            raise ValueError(f"the seller of room {room.id} is a house agent")
        self.room = room
        self.calls = calls
        self.series = series
        """The room's series (a client's seat), or None: one market."""

    @property
    def offers_series(self) -> bool:
        """True where the room plays a series: ``new_negotiation`` is among the tools."""
        return self.series is not None and self.series.series.available

    @property
    def log_context(self) -> Mapping[str, str]:
        """Room and seat."""
        return {"room": self.room.id, "seat": SELLER}

    @property
    def rules(self) -> MarketRules:
        """The room's market rules (the seller's tools are described under them)."""
        return self.room.rules

    async def call(
        self, name: str, arguments: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any] | None]:
        """One call of a market seller's tool: the text it reads and its view as JSON, or the
        refusal's one line and None (``unknown_tool``, ``invalid_arguments``,
        ``unknown_buyer``, any referee code; ``new_negotiation``'s refusals)."""
        tools = seller_tools(series=self.offers_series)
        spec = tools.get(name)
        if spec is None:
            return seat_text.unknown_tool(name, tools).text(), None
        try:
            if spec is SERIES_TOOL:
                validate_arguments(spec, dict(arguments))
                return await self._next_market()
            move = move_of(Bound(spec.name, dict(arguments)))
        except ArgumentError as error:
            return error.payload.text(), None
        except CallRefused as refusal:
            return refusal.payload.text(), None
        clients = self.room.clients
        limit = clients.wait_limit(move.timeout_s) if isinstance(move, Wait) else None
        try:
            async with clients.call(SELLER, move.action if isinstance(move, Addressed) else None):
                served = await clients.served(SELLER, lambda: self.calls.begin(move), limit=limit)
                text, refused = (self.calls.pending(), False) if served is None else served
                view = None if refused else self.calls.observation().model_dump(mode="json")
                if view is not None and isinstance(move, GetState) and self.series is not None:
                    tally = self.series.tally(SELLER)
                    text = market_state_text(self.calls.observation(), tally)
                    view["series"] = tally.model_dump(mode="json")
        except CallRefused as refusal:
            return refusal.payload.text(), None
        return text, view

    async def _next_market(self) -> tuple[str, dict[str, Any] | None]:
        """``new_negotiation``: the next market, and get_state's text and view in it."""
        market = await _next_market(self.series)
        return await ServedMarketSeller(market, series=self.series).call("get_state", {})

    async def observation_json(self) -> str:
        """What the seller sees now (JSON): every thread, its own cost, no buyer's value."""
        return self.calls.observation().model_dump_json(indent=2)

    async def transcript(self) -> str:
        """Every thread so far, as ``get_state`` shows it (nothing marked as seen)."""
        return market_state_text(self.calls.observation())

    async def briefing(self) -> str:
        """The market seller's briefing (with the room's series where it plays one)."""
        view = market_view(self.room.market, self.room.rules)
        return market_briefing(view, self.room.clock, series=self.offers_series)

    async def model_tools(self) -> str:
        """The market seller's tools as the one model seat offers them (JSON)."""
        return json.dumps(market_tools(self.room.rules.rules, series=self.offers_series))


__all__ = ["ServedMarketBuyer", "ServedMarketSeller"]

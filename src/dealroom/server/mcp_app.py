"""The MCP surface of one seat: tools, resources and the briefing prompt.

The same surface serves every transport: stdio house mode, seats of HTTP rooms and the seat
proxy. Which seat a call acts for comes from ``seat()``, which the transport supplies (the
launch arguments on stdio, the bearer token over HTTP), never from a tool argument.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Annotated, Any, TypeVar

import structlog
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import AfterValidator, Field

from dealroom.protocol import (
    Accept,
    ActionResult,
    MakeOffer,
    Reject,
    SeatState,
    SendMessage,
    WaitResult,
    WalkAway,
)
from dealroom.server.seat import SeatBackend, SeatError

log = structlog.stdlib.get_logger(__name__)

SeatProvider = Callable[[], SeatBackend]
"""The seat the current call acts for."""

OBSERVATION_URI = "dealroom://seat/observation"
TRANSCRIPT_URI = "dealroom://seat/transcript"

INSTRUCTIONS = """You hold one seat (buyer or seller) in a one-item negotiation run by this \
server. Read the `briefing` prompt or call get_state first: it tells you the item, your own \
private value and the rules. Offers made with make_offer are binding; messages are cheap talk. \
After acting, call wait_for_opponent to hear the other side. Never reveal your private value."""

R = TypeVar("R")
ToolSpec = dict[str, Any]
"""What a tool function is registered with (``Tool.from_function`` keywords)."""


def _encodable(text: str | None) -> str | None:
    """Refuse text that cannot be written as UTF-8 (a lone surrogate, which JSON can carry):
    in the negotiation it would make every later result, and the record, unserialisable."""
    if text is not None:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("text must be valid Unicode (it holds a lone surrogate)") from None
    return text


Price = Annotated[
    float,
    Field(
        gt=0,
        description="Price in the negotiation's currency as a plain number (e.g. 1250.00); "
        "rounded to cents. Must be above 0 and at most 10 times the list price.",
    ),
]
OfferId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        description="Id of the other side's live offer, e.g. 'o3' (see live_offers).",
    ),
    AfterValidator(_encodable),
]
Message = Annotated[
    str | None,
    Field(description="Optional cheap talk sent along; it binds nobody. Omit for none."),
    AfterValidator(_encodable),
]
Text = Annotated[
    str,
    Field(description="What to say. Cheap talk: nothing in it is binding."),
    AfterValidator(_encodable),
]
Timeout = Annotated[
    float,
    Field(
        ge=0,
        le=60,
        description="Most seconds to wait for the other side (on the negotiation clock; the "
        "call itself also returns within this many real seconds). Default 20.",
    ),
]

_COMMON = (
    " Returns ok, the events you have not seen yet, the live offers, your clock and time left, "
    "and your outcome if the negotiation ended. A refused action is a tool error with a code "
    "(e.g. offer_not_live: ...) and changes nothing."
)


def _tool_functions(seat: SeatProvider, series: bool) -> list[tuple[Callable[..., Any], ToolSpec]]:
    """The seat's tool functions, bound to ``seat``, each with what it is registered with."""

    async def call(name: str, run: Callable[[SeatBackend], Awaitable[R]]) -> R:
        backend = seat()
        with structlog.contextvars.bound_contextvars(**backend.log_context, tool=name):
            try:
                return await run(backend)
            except SeatError as error:
                log.info("tool refused", code=error.payload.code)
                raise ToolError(error.payload.text()) from None

    tools: list[tuple[Callable[..., Any], ToolSpec]] = []

    def tool(**spec: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def add(fn: Callable[..., Any]) -> Callable[..., Any]:
            tools.append((fn, spec))
            return fn

        return add

    @tool(
        description="Make a binding offer to the other side: if they accept it, the deal "
        "closes at once at this price. It replaces your previous live offer, if any. Prices are "
        "in the negotiation's currency. The optional message is cheap talk. Takes clock time "
        "(5 s by default). Afterwards, call wait_for_opponent for their answer." + _COMMON,
        annotations=ToolAnnotations(title="Make a binding offer", destructive_hint=False),
    )
    async def make_offer(price: Price, message: Message = None) -> ActionResult:
        return await call(
            "make_offer", lambda s: s.act(MakeOffer(price=Decimal(str(price)), message=message))
        )

    @tool(
        description="Accept the other side's live offer: the deal closes at once at its price "
        "and the negotiation ends. Only accept a price that gives you a positive surplus."
        + _COMMON,
        annotations=ToolAnnotations(title="Accept their offer", destructive_hint=True),
    )
    async def accept(offer_id: OfferId) -> ActionResult:
        return await call("accept", lambda s: s.act(Accept(offer_id=offer_id)))

    @tool(
        description="Reject the other side's live offer: it stops being live and they are told. "
        "You may attach a message (cheap talk). To propose your own price instead, use "
        "make_offer." + _COMMON,
        annotations=ToolAnnotations(title="Reject their offer", destructive_hint=False),
    )
    async def reject(offer_id: OfferId, message: Message = None) -> ActionResult:
        return await call("reject", lambda s: s.act(Reject(offer_id=offer_id, message=message)))

    @tool(
        description="Send a message to the other side. Cheap talk: nothing said binds anyone; "
        "only offers do. Takes clock time (3 s by default)." + _COMMON,
        annotations=ToolAnnotations(title="Send a message", destructive_hint=False),
    )
    async def send_message(text: Text) -> ActionResult:
        return await call("send_message", lambda s: s.act(SendMessage(text=text)))

    @tool(
        description="Walk away for good: the negotiation ends at once without a deal (surplus "
        "0 for both). Use it only when no acceptable deal is possible." + _COMMON,
        annotations=ToolAnnotations(title="Walk away", destructive_hint=True),
    )
    async def walk_away(message: Message = None) -> ActionResult:
        return await call("walk_away", lambda s: s.act(WalkAway(message=message)))

    @tool(
        description="Wait for the other side's next move. Returns as soon as they do something "
        "(woke = news), when timeout_s passes without news (woke = timeout), when the "
        "negotiation ends (woke = ended), or, if they are still deciding in real time, after "
        "timeout_s real seconds (woke = pending: call it again). Carries the events you have "
        "not seen yet. Waiting spends clock time; the deadline keeps running.",
        annotations=ToolAnnotations(title="Wait for the other side", read_only_hint=True),
    )
    async def wait_for_opponent(timeout_s: Timeout = 20.0) -> WaitResult:
        return await call("wait_for_opponent", lambda s: s.wait(timeout_s))

    @tool(
        description="Your seat's full view now: role, item, list price, your own private value, "
        "every event so far, live offers, clock and time left, your outcome once it ended, and "
        "the results of the series so far. Costs no clock time.",
        annotations=ToolAnnotations(title="Get the current state", read_only_hint=True),
    )
    async def get_state() -> SeatState:
        return await call("get_state", lambda s: s.state())

    if series:

        @tool(
            description="Start the next negotiation of the series, once the current one has "
            "ended (new item, new private value, the clock starts again). Returns the new state."
            " Refused with negotiation_running while the current one is still on.",
            annotations=ToolAnnotations(title="Start the next negotiation", destructive_hint=False),
        )
        async def new_negotiation() -> SeatState:
            return await call("new_negotiation", lambda s: s.new_negotiation())

    return tools


@functools.cache
def _tool_templates(series: bool) -> dict[str, Tool]:
    """The tools built once per process: their schemas and argument models (pydantic's schema
    generation, the bulk of building an app) do not depend on the seat."""

    def unbound() -> SeatBackend:
        raise RuntimeError("a template tool is never called")

    templates = [Tool.from_function(fn, **spec) for fn, spec in _tool_functions(unbound, series)]
    return {t.name: t for t in templates}


def seat_tools(seat: SeatProvider, *, series: bool = True) -> list[Tool]:
    """The seat's tools, acting for ``seat()``: the shared templates bound to its functions."""
    templates = _tool_templates(series)
    return [
        templates[fn.__name__].model_copy(update={"fn": fn})
        for fn, _ in _tool_functions(seat, series)
    ]


def register(app: MCPServer, seat: SeatProvider) -> None:
    """Add the seat's resources and briefing prompt to ``app`` (its tools: ``seat_tools``)."""

    @app.resource(
        OBSERVATION_URI,
        name="observation",
        description="Your seat's current observation (JSON): never the other side's value.",
        mime_type="application/json",
    )
    async def observation() -> str:
        return await seat().observation_json()

    @app.resource(
        TRANSCRIPT_URI,
        name="transcript",
        description="The negotiation so far as your seat sees it, one line per event.",
        mime_type="text/plain",
    )
    async def transcript() -> str:
        return await seat().transcript()

    @app.prompt(
        name="briefing",
        description="Your briefing: role, item, your private value, rules, deadline, how to "
        "use the tools and what counts as success.",
    )
    async def briefing() -> str:
        return await seat().briefing()


def build_app(
    seat: SeatProvider, *, name: str = "dealroom", series: bool = True, **kwargs: Any
) -> MCPServer:
    """An MCP server for one kind of seat (``kwargs`` go to ``MCPServer``)."""
    tools = seat_tools(seat, series=series)
    app = MCPServer(name, instructions=INSTRUCTIONS, log_level="WARNING", tools=tools, **kwargs)
    register(app, seat)
    return app

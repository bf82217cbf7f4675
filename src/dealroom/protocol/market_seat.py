"""The market seller's model seat: its tools, and what a model's tool call means. Pure.

The seller of a market (``dealroom.protocol.market``) plays the one model seat's rules
(``dealroom.protocol.model_seat``: the briefing as the only opening message, tools in name
order, calls run one by one, news only through ``wait_for_opponent``, a reply without tool
calls ends its play) with the bilateral seat's tools, each addressed to one buyer:
``make_offer``, ``reject`` and ``send_message`` take a required ``buyer``, ``accept`` a buyer and
that thread's ``offer_id``, ``walk_away`` an optional buyer (none: leave the whole market);
``wait_for_opponent`` waits for any buyer, ``get_state`` shows every thread. Each tool is the
bilateral ``SeatTool`` (``dealroom.protocol.tools``) with a buyer added to its arguments and a
summary of its own; the arguments are checked as the bilateral ones are, and the buyer's name by
the referee (an unknown buyer is refused ``unknown_buyer`` and counted, as any refused action).
What the seat reads is ``dealroom.protocol.market_text``. A served market room that plays a
series (one client seat) also offers ``new_negotiation`` (``market_tools(rules, series=True)``:
the bilateral tool's spec with a summary of its own), which starts the room's next market once
this one has ended.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any, Generic, TypeVar

from pydantic import AfterValidator, Field

from dealroom.protocol.actions import Action
from dealroom.protocol.arguments import (
    DEFAULT_WAIT_S,
    AcceptArgs,
    MakeOfferArgs,
    RejectArgs,
    SendMessageArgs,
    WaitArgs,
    WalkAwayArgs,
    action_of,
    encodable,
)
from dealroom.protocol.market import Addressed
from dealroom.protocol.model_seat import Bound, bind_on
from dealroom.protocol.rules import Rules
from dealroom.protocol.tools import (
    TOOLS_BY_NAME,
    SeatTool,
    ToolName,
    function_schema,
    validate_arguments,
)

R = TypeVar("R")

Buyer = Annotated[
    str,
    Field(min_length=1, max_length=64, description="The buyer it is for, e.g. 'b2'."),
    AfterValidator(encodable),
]
AnyBuyer = Annotated[
    str | None,
    Field(description="The buyer whose thread you leave; none: leave the whole market."),
    AfterValidator(encodable),
]


class MarketMakeOfferArgs(MakeOfferArgs):
    buyer: Buyer


class MarketAcceptArgs(AcceptArgs):
    buyer: Buyer


class MarketRejectArgs(RejectArgs):
    buyer: Buyer


class MarketSendMessageArgs(SendMessageArgs):
    buyer: Buyer


class MarketWalkAwayArgs(WalkAwayArgs):
    buyer: AnyBuyer = None


_SUMMARIES: dict[ToolName, Callable[[Rules], str]] = {
    "make_offer": lambda r: (
        f"Make a binding offer to one buyer (at most {r.max_price_multiple:g} times the list "
        "price); it replaces your live offer to that buyer."
    ),
    "accept": lambda r: "Accept a buyer's live offer: the item sells and the market ends.",
    "reject": lambda r: "Reject a buyer's live offer.",
    "send_message": lambda r: (
        f"Send cheap talk to one buyer (at most {r.max_message_chars} characters)."
    ),
    "walk_away": lambda r: (
        "Leave one buyer's thread for good, or with no buyer the whole market, without a sale."
    ),
    "wait_for_opponent": lambda r: "Wait for any buyer's next move.",
    "get_state": lambda r: "Your whole view of the market, every thread (costs no clock time).",
}
"""What each of the seller's market tools does, for a model that has read the market briefing:
sent with every request, as the bilateral summaries are."""

_MARKET_ARGS = {
    "make_offer": MarketMakeOfferArgs,
    "accept": MarketAcceptArgs,
    "reject": MarketRejectArgs,
    "send_message": MarketSendMessageArgs,
    "walk_away": MarketWalkAwayArgs,
}

MARKET_TOOLS: dict[str, SeatTool] = {
    name: replace(TOOLS_BY_NAME[name], args=_MARKET_ARGS.get(name, TOOLS_BY_NAME[name].args))
    for name in sorted(_SUMMARIES)
}
"""The seller's tools in a market, by name, in name order: the bilateral tools, each action
addressed to a buyer."""

SERIES_TOOL: SeatTool = TOOLS_BY_NAME["new_negotiation"]
"""The tool a served market room that plays a series adds to the seller's (and a buyer's)."""


def _series_summary(rules: Rules) -> str:
    del rules
    return "Start the next market of the series once this one has ended (a new item and buyers)."


def seller_tools(*, series: bool) -> dict[str, SeatTool]:
    """The seller's tools, by name, in name order: ``MARKET_TOOLS``, and the series tool where
    the room plays a series."""
    if not series:
        return MARKET_TOOLS
    return dict(sorted({**MARKET_TOOLS, SERIES_TOOL.name: SERIES_TOOL}.items()))


BUYER_TOOLS: tuple[str, ...] = tuple(
    name
    for name, tool in MARKET_TOOLS.items()
    if "buyer" in tool.args.model_fields and tool.args.model_fields["buyer"].is_required()
)
"""The tools whose calls must name a buyer, in name order."""


def market_tools(rules: Rules, *, series: bool = False) -> list[dict[str, Any]]:
    """The seller's market tools as OpenAI function schemas, in name order, each with its
    market summary and the buyer as its first argument (the order of ``MarketToolMethods``);
    with ``series``, ``new_negotiation`` among them (``seller_tools``)."""
    schemas: list[dict[str, Any]] = []
    for tool in seller_tools(series=series).values():
        schema = function_schema(tool, rules)
        function = schema["function"]
        parameters = function["parameters"]
        properties: dict[str, Any] = parameters["properties"]
        if "buyer" in properties:
            parameters["properties"] = {"buyer": properties.pop("buyer"), **properties}
            required: list[str] = parameters.get("required", [])
            if "buyer" in required:
                parameters["required"] = ["buyer", *(r for r in required if r != "buyer")]
        summary = _series_summary if tool is SERIES_TOOL else _SUMMARIES[tool.name]
        function["description"] = summary(rules)
        schemas.append(schema)
    return schemas


class MarketToolMethods(Generic[R]):
    """The seller's market tools as Python methods: the signatures a model's call is checked
    against (``ToolMethods``' rule, with the buyer first)."""

    def _call(self, name: ToolName, arguments: dict[str, Any]) -> R:
        raise NotImplementedError  # pragma: no cover

    def make_offer(self, buyer: str, price: float, message: str | None = None):
        return self._call("make_offer", {"buyer": buyer, "price": price, "message": message})

    def accept(self, buyer: str, offer_id: str):
        return self._call("accept", {"buyer": buyer, "offer_id": offer_id})

    def reject(self, buyer: str, offer_id: str, message: str | None = None):
        return self._call("reject", {"buyer": buyer, "offer_id": offer_id, "message": message})

    def send_message(self, buyer: str, text: str):
        return self._call("send_message", {"buyer": buyer, "text": text})

    def walk_away(self, buyer: str | None = None, message: str | None = None):
        return self._call("walk_away", {"buyer": buyer, "message": message})

    def wait_for_opponent(self, timeout_s: float = DEFAULT_WAIT_S):
        return self._call("wait_for_opponent", {"timeout_s": timeout_s})

    def get_state(self):
        return self._call("get_state", {})


MARKET_TOOL_NAMES: frozenset[str] = frozenset(MARKET_TOOLS)


class _Binder(MarketToolMethods[Bound]):
    def _call(self, name: ToolName, arguments: dict[str, Any]) -> Bound:
        return Bound(name, arguments)


_BINDER = _Binder()


def bind_market(name: str, arguments: object) -> Bound | str:
    """A model's call checked against the seller's market tool's signature: the bound call, or
    the error text the model reads (``model_seat.bind``'s rule)."""
    return bind_on(_BINDER, MARKET_TOOL_NAMES, name, arguments)


@dataclass(frozen=True, slots=True)
class Wait:
    """A call of ``wait_for_opponent``: sleep until a buyer moves or ``timeout_s`` passes."""

    timeout_s: float


@dataclass(frozen=True, slots=True)
class GetState:
    """A call of ``get_state``."""


Move = Addressed | Wait | GetState
"""What a bound call of the seller's market tools stands for."""


def move_of(bound: Bound) -> Move:
    """What a bound call stands for; raises ``ArgumentError`` (``invalid_arguments: ...``, the
    bilateral tools' one line) for arguments its tool refuses, before anything happens."""
    tool = MARKET_TOOLS[bound.name]
    given: Mapping[str, Any] = {k: v for k, v in bound.arguments.items() if v is not None}
    args = validate_arguments(tool, given)
    if isinstance(args, WaitArgs):
        return Wait(args.timeout_s)
    action: Action | None = action_of(args)
    if action is None:
        return GetState()
    buyer: str | None = getattr(args, "buyer", None)
    return Addressed(buyer, action)


__all__ = [
    "BUYER_TOOLS",
    "MARKET_TOOLS",
    "MARKET_TOOL_NAMES",
    "SERIES_TOOL",
    "GetState",
    "MarketToolMethods",
    "Move",
    "Wait",
    "bind_market",
    "market_tools",
    "move_of",
    "seller_tools",
]

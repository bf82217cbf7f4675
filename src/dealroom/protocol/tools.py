"""The seat's tools, defined once: names, titles, arguments, descriptions, hints, result kinds.

Every surface a model or a program calls the seat through is derived from ``SEAT_TOOLS``: the
MCP tools (``dealroom.server.mcp_app``), the client's methods (``dealroom.client.seat``), the
TRL environment's methods and the SFT ``tools`` column (``dealroom.training``), and the stdlib
remote client (``dealroom.training.remote``, checked against this module by a test). A tool's
description is rendered from the negotiation's actual ``Rules`` (clock costs, limits), never
from the defaults. Pure: pydantic only.

The arguments' models live in ``dealroom.protocol.arguments``; a refused argument reads
``invalid_arguments: <field>: <sentence>. <hint>.`` (``argument_error``), like every other
error: the code first. How tool calls sit in a chat transcript is the one model seat's
(``dealroom.protocol.model_seat``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, assert_never

from pydantic import ValidationError

from dealroom.protocol.actions import (
    ActionType,
)
from dealroom.protocol.arguments import (
    AcceptArgs,
    ArgsModel,
    MakeOfferArgs,
    NoArgs,
    RejectArgs,
    SendMessageArgs,
    WaitArgs,
    WalkAwayArgs,
)
from dealroom.protocol.rules import Rules
from dealroom.protocol.wire import Refusal, SessionErrorCode, ToolErrorPayload

ToolName = Literal[
    "make_offer",
    "accept",
    "reject",
    "send_message",
    "walk_away",
    "wait_for_opponent",
    "get_state",
    "new_negotiation",
]
"""Every seat tool's name: matches over it are exhaustive (pyright flags a missing one)."""

ResultKind = Literal["action", "wait", "state"]
"""What a tool returns: an ``ActionResult``, a ``WaitResult`` or a ``SeatState``."""

# -- descriptions, rendered from the rules -------------------------------------------------------

_RETURNS = {
    "action": "Returns once the action has taken effect: what you have not seen yet (events, "
    "oldest first), the clock, the live offers and, if it ended, your outcome.",
    "wait": "Returns the news (events you have not seen yet), the clock, the live offers and, "
    "if it ended, your outcome.",
    "state": "Returns your whole view of the negotiation.",
}


def _refusals(rules: Rules) -> str:
    return (
        " A refused call changes nothing but the clock (its time passes) and reads "
        "`code: reason. hint.`; after "
        f"{rules.max_invalid_actions} refused actions you forfeit."
    )


def _describe_make_offer(rules: Rules) -> str:
    return (
        "Make a binding offer: if the other side accepts it, the deal closes at once at this "
        "price. It replaces your previous live offer, if any. Prices above "
        f"{rules.max_price_multiple:g} times the list price are refused. Takes "
        f"{rules.costs.make_offer:g} s of clock time (plus {rules.thinking.per_wake:g} s of "
        "thinking on your first action after a wait). Then call wait_for_opponent for their "
        "answer."
    )


def _describe_accept(rules: Rules) -> str:
    return (
        "Accept the other side's live offer: the deal closes at its price and the negotiation "
        "ends. Only accept a price that gives you a positive surplus. Takes "
        f"{rules.costs.accept:g} s of clock time."
    )


def _describe_reject(rules: Rules) -> str:
    return (
        "Reject the other side's live offer: it stops being live and they are told. To propose "
        f"your own price instead, use make_offer. Takes {rules.costs.reject:g} s of clock time."
    )


def _describe_send_message(rules: Rules) -> str:
    return (
        "Send a message to the other side. Cheap talk: nothing said binds anyone; only offers "
        f"do. At most {rules.max_message_chars} characters. Takes "
        f"{rules.costs.send_message:g} s of clock time."
    )


def _describe_walk_away(rules: Rules) -> str:
    return (
        "Walk away for good: the negotiation ends at once without a deal (surplus 0 for you). "
        "Use it only when no acceptable deal is possible. Takes "
        f"{rules.costs.walk_away:g} s of clock time."
    )


def _describe_wait(rules: Rules) -> str:
    del rules
    return (
        "Wait for the other side's next move. Returns as soon as they do something (woke: "
        "news), when timeout_s passes on the clock without news (woke: timeout), when the "
        "negotiation ends (woke: ended), or, if they are still deciding in real time, after "
        "timeout_s real seconds (woke: pending: call it again). Waiting spends clock time; the "
        "deadline keeps running."
    )


def _describe_get_state(rules: Rules) -> str:
    del rules
    return (
        "Your seat's full view now: role, item, list price, your own private value, every event "
        "so far, the clock, the live offers and your outcome once it ended. Costs no clock time."
    )


def _describe_new_negotiation(rules: Rules) -> str:
    del rules
    return (
        "Start the next negotiation of the series once the current one has ended (new item, "
        "new private value, the clock starts again). Refused with negotiation_running while the "
        "current one is still on."
    )


_SUMMARIES: dict[ToolName, Callable[[Rules], str]] = {
    "make_offer": lambda r: (
        f"Make a binding offer (at most {r.max_price_multiple:g} times the list price)."
    ),
    "accept": lambda r: "Accept their live offer: the deal closes.",
    "reject": lambda r: "Reject their live offer.",
    "send_message": lambda r: f"Send cheap talk (at most {r.max_message_chars} characters).",
    "walk_away": lambda r: "End the negotiation for good, without a deal.",
    "wait_for_opponent": lambda r: "Wait for the other side's next move.",
    "get_state": lambda r: "Your whole view of the negotiation (costs no clock time).",
    "new_negotiation": lambda r: "Start the series' next negotiation once this one has ended.",
}
"""What each tool does, for a model that has read the briefing (which says the rules, the
clock costs and what a result holds once): sent with every request of the one model seat."""


@dataclass(frozen=True, slots=True)
class ToolHints:
    """MCP tool annotations, as plain data."""

    read_only: bool = False
    destructive: bool = False


@dataclass(frozen=True, slots=True)
class SeatTool:
    """One tool of a seat."""

    name: ToolName
    title: str
    args: type[ArgsModel]
    """The argument model: field types, constraints and descriptions."""
    result: ResultKind
    hints: ToolHints
    describe_rules: Callable[[Rules], str]
    series_only: bool = False
    """Offered only by servers that play a series (``new_negotiation``)."""

    def description(self, rules: Rules) -> str:
        """What the tool does under ``rules``, and what it returns: self-contained, as MCP
        clients list it."""
        refusals = _refusals(rules) if self.result == "action" else ""
        return f"{self.describe_rules(rules)} {_RETURNS[self.result]}{refusals}"

    def model_description(self, rules: Rules) -> str:
        """What the tool does under ``rules``, for a model that has read the briefing: one
        short sentence, since it is sent with every request of the one model seat."""
        return _SUMMARIES[self.name](rules)


def _tool(
    name: ToolName,
    title: str,
    args: type[ArgsModel],
    result: ResultKind,
    describe: Callable[[Rules], str],
    *,
    read_only: bool = False,
    destructive: bool = False,
    series_only: bool = False,
) -> SeatTool:
    return SeatTool(
        name, title, args, result, ToolHints(read_only, destructive), describe, series_only
    )


SEAT_TOOLS: tuple[SeatTool, ...] = (
    _tool("make_offer", "Make a binding offer", MakeOfferArgs, "action", _describe_make_offer),
    _tool("accept", "Accept their offer", AcceptArgs, "action", _describe_accept, destructive=True),
    _tool("reject", "Reject their offer", RejectArgs, "action", _describe_reject),
    _tool("send_message", "Send a message", SendMessageArgs, "action", _describe_send_message),
    _tool("walk_away", "Walk away", WalkAwayArgs, "action", _describe_walk_away, destructive=True),
    _tool(
        "wait_for_opponent",
        "Wait for the other side",
        WaitArgs,
        "wait",
        _describe_wait,
        read_only=True,
    ),
    _tool(
        "get_state", "Get the current state", NoArgs, "state", _describe_get_state, read_only=True
    ),
    _tool(
        "new_negotiation",
        "Start the next negotiation",
        NoArgs,
        "state",
        _describe_new_negotiation,
        series_only=True,
    ),
)
"""Every seat tool, in the order every surface lists them."""

TOOLS_BY_NAME: dict[str, SeatTool] = {tool.name: tool for tool in SEAT_TOOLS}

ACTION_TOOLS: dict[ActionType, SeatTool] = {
    "make_offer": TOOLS_BY_NAME["make_offer"],
    "accept": TOOLS_BY_NAME["accept"],
    "reject": TOOLS_BY_NAME["reject"],
    "send_message": TOOLS_BY_NAME["send_message"],
    "walk_away": TOOLS_BY_NAME["walk_away"],
}
"""The tool of each action type (a complete mapping: pyright checks the keys against
``ActionType``'s literal through ``tool_of``)."""


def tool_of(action_type: ActionType) -> SeatTool:
    """The tool that makes an action of ``action_type``."""
    match action_type:
        case "make_offer" | "accept" | "reject" | "send_message" | "walk_away":
            return ACTION_TOOLS[action_type]
        case _:
            assert_never(action_type)


def seat_tools(*, series: bool) -> tuple[SeatTool, ...]:
    """The tools a seat is offered (the series tool only where a series is played)."""
    return tuple(t for t in SEAT_TOOLS if series or not t.series_only)


# -- derived forms -------------------------------------------------------------------------------


def _json_type(annotation: Any) -> tuple[str, bool]:
    """(JSON type, nullable) of a field annotation of the argument models."""
    if annotation is float:
        return "number", False
    if annotation is str:
        return "string", False
    if annotation == (str | None):
        return "string", True
    raise TypeError(f"no JSON type for {annotation!r}")


def function_schema(tool: SeatTool, rules: Rules) -> dict[str, Any]:
    """The tool as an OpenAI function schema, exactly as ``transformers.utils.get_json_schema``
    writes it for the TRL environment's method (so SFT rows and GRPO rollouts show the model
    the same tools: same order, descriptions and nullability)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, info in tool.args.model_fields.items():
        kind, nullable = _json_type(info.annotation)
        prop: dict[str, Any] = {"type": kind}
        if nullable:
            prop["nullable"] = True
        prop["description"] = info.description or name
        properties[name] = prop
        if info.is_required():
            required.append(name)
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.model_description(rules),
            "parameters": parameters,
        },
    }


def function_schemas(rules: Rules, *, series: bool = False) -> list[dict[str, Any]]:
    """Every tool a seat is offered, as OpenAI function schemas (the SFT ``tools`` column), in
    name order: TRL lists an environment's methods that way (``inspect.getmembers``), and the
    chat template renders the tools in the order given, so this is the order a model trained in
    ``BargainToolEnv`` reads them in."""
    tools = sorted(seat_tools(series=series), key=lambda t: t.name)
    return [function_schema(t, rules) for t in tools]


def docstring(tool: SeatTool, rules: Rules) -> str:
    """A Google-style docstring for the tool (TRL reads a method's schema from it)."""
    lines = [tool.model_description(rules)]
    fields = tool.args.model_fields
    if fields:
        lines += ["", "Args:"]
        lines += [f"    {name}: {info.description}" for name, info in fields.items()]
    return "\n".join(lines)


def validate_arguments(tool: SeatTool, arguments: Mapping[str, Any]) -> ArgsModel:
    """The tool's arguments, validated strictly; raises ``ArgumentError`` if they are wrong."""
    extra = sorted(set(arguments) - set(tool.args.model_fields))
    if extra:
        raise ArgumentError(
            ToolErrorPayload(
                code=SessionErrorCode.INVALID_ARGUMENTS,
                message=f"{tool.name} takes no argument {extra[0]!r}. {_arguments_hint(tool)}",
            )
        )
    try:
        return tool.args.model_validate(dict(arguments))
    except ValidationError as exc:
        raise ArgumentError(argument_error(tool, exc)) from None


class ArgumentError(Refusal, ValueError):
    """Arguments a tool refused before anything happened."""


_KINDS = {
    "float_type": "must be a JSON number such as 1250.00",
    "string_type": "must be a JSON string",
    "missing": "is missing",
    "greater_than": "must be above {gt}",
    "greater_than_equal": "must be at least {ge}",
    "less_than_equal": "must be at most {le}",
    "string_too_short": "must not be empty",
    "string_too_long": "must be at most {max_length} characters",
}
_SHOW_INPUT = ("float_type", "string_type", "greater_than", "greater_than_equal", "less_than_equal")


def _got(value: Any) -> str:
    match value:
        case bool():
            return "a boolean"
        case str():
            return "a string"
        case int() | float():
            return repr(value)
        case None:
            return "null"
        case list():
            return "a list"
        case dict():
            return "an object"
        case _:
            return type(value).__name__


def _arguments_hint(tool: SeatTool) -> str:
    names = ", ".join(tool.args.model_fields) or "none"
    return f"Call {tool.name} again with its listed arguments ({names})."


def argument_error(tool: SeatTool, exc: ValidationError) -> ToolErrorPayload:
    """One line for refused arguments: ``invalid_arguments: price must be ... (got ...). hint``.

    Only the first problem, named by field; never pydantic's dump (URLs, input echoes).
    """
    error = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in error["loc"]) or "arguments"
    kind = error["type"]
    if kind == "value_error":
        reason = str(error.get("ctx", {}).get("error", error["msg"]))
    else:
        ctx = {k: f"{v:g}" if isinstance(v, float) else v for k, v in error.get("ctx", {}).items()}
        reason = _KINDS.get(kind, error["msg"].lower()).format(**ctx)
        if kind in _SHOW_INPUT:
            reason = f"{reason} (got {_got(error.get('input'))})"
    return ToolErrorPayload(
        code=SessionErrorCode.INVALID_ARGUMENTS,
        message=f"{where} {reason}. {_arguments_hint(tool)}",
    )

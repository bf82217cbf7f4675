"""What a model reads after each tool call: one renderer for every surface. Pure.

The MCP tools send it as their text content (``structuredContent`` keeps the JSON for
programs), the built-in LLM seat hands it to its model, the TRL environment returns it from its
tool methods and the SFT export writes it in its tool messages, so a model is trained, played
and evaluated on the same bytes. It is rendered from the wire models only (``ActionResult``,
``WaitResult``, ``SeatState``, ``ToolErrorPayload``): nothing here can see the other side's
value.

The form, for models: a head line (``ok``, ``woke: news``, or an error as ``code: sentence.
hint.``), then one line per event of the other side the seat has not seen yet, oldest first
(``[6 s] seller offered $2,795.00 (o1)``; the seat's own moves are left out, get_state lists
them), then ``clock:``, ``live offers:`` and ``outcome:`` once it ended. The wire's ``hint``
(what the seat can usefully do next) is for programs; the briefing says the loop once. No JSON,
no pretty-printing, no field names a model must decode.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import assert_never

from dealroom.protocol._base import Role
from dealroom.protocol.errors import ErrorCode
from dealroom.protocol.events import Event
from dealroom.protocol.observation import LiveOffer, Observation
from dealroom.protocol.outcome import SeatOutcome
from dealroom.protocol.text import describe_event, event_text, money
from dealroom.protocol.wire import (
    ActionResult,
    SeatState,
    SessionErrorCode,
    ToolErrorPayload,
    WaitResult,
)

ERROR_HINTS: dict[str, str] = {
    ErrorCode.OFFER_NOT_FOUND: "Use an offer_id from the live offers (get_state lists them).",
    ErrorCode.OFFER_NOT_LIVE: "Call get_state for the offers that are live now.",
    ErrorCode.OWN_OFFER: "To change your own offer, call make_offer again with a new price.",
    ErrorCode.PRICE_NOT_FINITE: "Send the price as a plain number such as 1250.00.",
    ErrorCode.PRICE_OUT_OF_RANGE: "Offer a positive price within that limit.",
    ErrorCode.NEGOTIATION_CLOSED: "Call get_state to see the outcome.",
    ErrorCode.MESSAGE_TOO_LONG: "Send a shorter message.",
    ErrorCode.MESSAGE_EMPTY: "Write some text, or do not send a message.",
    ErrorCode.DEADLINE_PASSED: "Call get_state to see the outcome.",
    ErrorCode.INVALID_ACTION: "Call get_state, then choose one of the tools.",
    SessionErrorCode.NEGOTIATION_RUNNING: "Call get_state to see where it stands.",
    SessionErrorCode.SERIES_UNAVAILABLE: "Call get_state to see your results.",
    SessionErrorCode.SERIES_OVER: "Call get_state to see your results.",
    SessionErrorCode.UPSTREAM_UNAVAILABLE: "Try again in a moment.",
    SessionErrorCode.SEAT_TOKEN_REFUSED: "Start the seat again with a token the room issued.",
    SessionErrorCode.RESULT_PENDING: "Call get_state to see the outcome; do not repeat the action.",
    SessionErrorCode.TOO_MANY_NEGOTIATIONS: "Call new_negotiation again then.",
    SessionErrorCode.TOO_MANY_MESSAGE_CHARS: "Act without a message, or with a shorter one.",
}
"""The hint appended to each refusal, by code (argument errors carry their own)."""


def error_payload(code: str, message: str) -> ToolErrorPayload:
    """A refusal (the referee's or the room's) with its one-sentence hint appended."""
    hint = ERROR_HINTS.get(code, "")
    return ToolErrorPayload(code=code, message=f"{message} {hint}".strip())


def unknown_tool(name: str, offered: Iterable[str]) -> ToolErrorPayload:
    """A call of a tool the seat is not offered, with the names it is (``tools/list``'s order)."""
    return ToolErrorPayload(
        code=SessionErrorCode.UNKNOWN_TOOL,
        message=f"There is no tool {name[:64]!r}. Use one of {', '.join(offered)}.",
    )


def seconds(x: float) -> str:
    """Clock seconds as the model reads them: at most three decimals, no trailing zeros."""
    text = f"{round(x, 3):.3f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def hint(role: Role, live_offers: Sequence[LiveOffer], outcome: SeatOutcome | None) -> str:
    """What the seat can usefully do next, from what it sees (the ``hint`` of every result)."""
    if outcome is not None:
        return "the negotiation is over; get_state shows your results."
    theirs = next((o for o in live_offers if o.by != role), None)
    if theirs is not None:
        return f"accept {theirs.offer_id}, reject it, make_offer or wait_for_opponent."
    return "wait_for_opponent, or make_offer to move."


def news(events: Iterable[Event], role: Role) -> list[Event]:
    """The events a result reports: all but the seat's own moves, which the model wrote
    itself (its offer's id and price stay on the ``live offers`` line; get_state lists all)."""
    return [e for e in events if e.by != role]


SHOWN_TEXT = 4_000
"""Most characters of the other side's messages one result shows (two messages of the default
longest): what a client makes a model seat read at each wake is bounded (12 messages of 2,000
characters in one wait made an ``llm:`` house seat read 98,027 input tokens over a negotiation
instead of 26,298). The newest messages are shown first; older ones are cut, saying how much
was left out (the structured result, for programs, holds every message whole)."""


def event_lines(events: Iterable[Event], role: Role, currency: str) -> list[str]:
    """One line per event: ``[t s] what happened`` (the seat's own moves read "you"), the other
    side's messages within ``SHOWN_TEXT`` characters in all."""
    listed = list(events)
    limits: list[int | None] = [None] * len(listed)
    left = SHOWN_TEXT
    for i in reversed(range(len(listed))):
        event = listed[i]
        if event.by is not None and event.by != role:
            limits[i] = left
            left = max(left - len(event_text(event) or ""), 0)
    return [
        f"[{seconds(e.t)} s] {describe_event(e, currency, viewer=role, limit=limit)}"
        for e, limit in zip(listed, limits, strict=True)
    ]


def _offers(live: Sequence[LiveOffer], role: Role, currency: str) -> str:
    if not live:
        return "live offers: none."
    parts = [
        f"{'you' if o.by == role else o.by} {o.offer_id} at {money(o.price, currency)}"
        for o in live
    ]
    return f"live offers: {'; '.join(parts)}."


def _outcome(outcome: SeatOutcome, currency: str) -> str:
    surplus = money(outcome.surplus, currency)
    if outcome.price is None:
        return f"outcome: no deal ({outcome.end_reason}); your surplus {surplus}."
    return f"outcome: deal at {money(outcome.price, currency)}; your surplus {surplus}."


def _body(
    events: Sequence[Event],
    now: float,
    time_left: float,
    live: Sequence[LiveOffer],
    outcome: SeatOutcome | None,
    role: Role,
    currency: str,
) -> list[str]:
    lines = event_lines(events, role, currency)
    lines.append(f"clock: {seconds(now)} s, {seconds(max(time_left, 0.0))} s left.")
    lines.append(_offers(live, role, currency))
    if outcome is not None:
        lines.append(_outcome(outcome, currency))
    return lines


def _head(result: ActionResult | WaitResult) -> str:
    match result:
        case ActionResult():
            if result.ok or result.error is None:
                return "ok"
            return error_text(result.error)
        case WaitResult():
            match result.woke:
                case "news":
                    return "woke: news"
                case "timeout":
                    return "woke: timeout"
                case "ended":
                    return "woke: ended"
                case "pending":
                    return "woke: pending (they are still deciding: wait again)"
                case _:
                    assert_never(result.woke)
        case _:
            assert_never(result)


def update_text(result: ActionResult | WaitResult, role: Role, currency: str) -> str:
    """The text of an action's or a wait's result, for the ``role`` seat."""
    body = _body(
        news(result.events, role),
        result.now,
        result.time_left,
        result.live_offers,
        result.outcome,
        role,
        currency,
    )
    return "\n".join([_head(result), *body])


def state_text(state: SeatState) -> str:
    """The text of get_state (and new_negotiation): the seat's whole view of the negotiation."""
    series = None
    if state.negotiation > 1:  # a series past its first negotiation (the MCP house mode)
        cur = state.observation.scenario.currency
        series = series_line(
            "negotiation", state.negotiation, state.finished, state.total_surplus, cur
        )
    return _state(state.observation, series)


def series_line(noun: str, number: int, finished: int, total: Decimal, currency: str) -> str:
    """The series line of get_state past a series' first negotiation (``noun``: a bilateral
    room's ``negotiation``, a market room's ``market``)."""
    return (
        f"series: {noun} {number}; {finished} finished, your total surplus "
        f"{money(total, currency)}."
    )


def observation_state_text(observation: Observation) -> str:
    """get_state's text for a seat seen in process (one negotiation, no series): what the
    training opponent's model reads when it calls get_state."""
    return _state(observation, None)


def view_text(observation: Observation, since: int = 0) -> str:
    """A tool result's body for a seat seen in process: the other side's events after the
    first ``since``, the clock, the live offers and the outcome once it ended. The training
    opponent's model reads it at each wake; the Gymnasium environment renders it."""
    o = observation
    events = news(o.events[since:], o.role)
    body = _body(events, o.now, o.time_left, o.live_offers, o.outcome, o.role, o.scenario.currency)
    return "\n".join(body)


def _state(o: Observation, series: str | None) -> str:
    s = o.scenario
    cur = s.currency
    head = (
        f"you: the {o.role}; item: {s.item.name}; list price {money(s.list_price, cur)}; your "
        f"private value {money(o.private_value, cur)}; deadline {seconds(s.deadline)} s."
    )
    lines = [head] if series is None else [head, series]
    if not o.events:
        lines.append("no events yet.")
    body = _body(o.events, o.now, o.time_left, o.live_offers, o.outcome, o.role, cur)
    return "\n".join([*lines, *body])


def error_text(error: ToolErrorPayload) -> str:
    """A refusal as every surface writes it: ``code: sentence. hint.``"""
    return error.text()

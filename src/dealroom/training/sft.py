"""Chat transcripts for supervised fine-tuning, rebuilt from stored negotiation records.

One seat's view of one negotiation in the OpenAI messages format, with the same tools and the
same text as :class:`~dealroom.training.trl.BargainToolEnv`, so SFT and RL see one interface:

- ``system``: the seat's briefing (the only place its private value appears);
- ``user``: what the seat saw before its first move;
- then, per turn of the seat: an ``assistant`` message whose ``tool_calls`` are its actions,
  and one ``tool`` message per call (matching ``tool_call_id``) with what happened, up to the
  seat's next turn; the last one ends with the outcome (the seat's own surplus only).

Records keep events, not turns, so turns are inferred: consecutive actions of the seat belong
to one turn when the second took effect exactly its clock cost after the first (a queued batch
runs on whatever the other side does meanwhile; a new turn costs thinking time first). A
turn's wake time is estimated as its first action's time minus that action's cost and one
thinking step. Refused actions are not stored, so they never appear.
"""

from __future__ import annotations

import json
from typing import Any

from dealroom.protocol import (
    DEFAULT_RULES,
    ActionType,
    Event,
    MessageSent,
    OfferAccepted,
    OfferMade,
    OfferRejected,
    Role,
    Rules,
    WalkedAway,
    seat_outcome,
    seat_view,
)
from dealroom.protocol.briefing import briefing
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.tools import function_schemas
from dealroom.training import _text

TOOLS: list[dict[str, Any]] = function_schemas(DEFAULT_RULES)
"""The seat's tools as OpenAI function schemas under the default rules: exactly what TRL builds
from BargainToolEnv's methods (``dealroom.protocol.tools.function_schemas``)."""


def _call(event: Event) -> tuple[ActionType, dict[str, Any]] | None:
    """The tool call behind one of the seat's own events; None for other events."""
    match event:
        case OfferMade():
            args: dict[str, Any] = {"price": float(event.price)}
            if event.message is not None:
                args["message"] = event.message
            return "make_offer", args
        case OfferAccepted():
            return "accept", {"offer_id": event.offer_id}
        case OfferRejected():
            args = {"offer_id": event.offer_id}
            if event.message is not None:
                args["message"] = event.message
            return "reject", args
        case MessageSent():
            return "send_message", {"text": event.text}
        case WalkedAway():
            return "walk_away", {} if event.message is None else {"message": event.message}
        case _:
            return None


def _turns(events: tuple[Event, ...], role: Role, rules: Rules) -> list[list[int]]:
    """Indices of the seat's action events, grouped by inferred turn."""
    turns: list[list[int]] = []
    for i, event in enumerate(events):
        call = _call(event) if event.by == role else None
        if call is None:
            continue
        # A queued action takes effect exactly its cost after the previous one, whatever the
        # other side does meanwhile; a new turn costs thinking time first.
        if turns and abs(event.t - events[turns[-1][-1]].t - rules.costs.of(call[0])) < 1e-6:
            turns[-1].append(i)
        else:
            turns.append([i])
    return turns


def sft_example(
    record: NegotiationRecord,
    role: Role,
    *,
    rules: Rules = DEFAULT_RULES,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """One seat's transcript as ``{"messages", "tools", "metadata"}``; None if it never acted."""
    events, scenario = record.events, record.scenario
    turns = _turns(events, role, rules)
    if not turns:
        return None
    currency, deadline = scenario.currency, scenario.deadline

    def wake_time(turn: int) -> float:
        first = events[turns[turn][0]]
        call = _call(first)
        assert call is not None
        estimate = first.t - rules.costs.of(call[0]) - rules.thinking.per_wake
        previous = events[turns[turn - 1][-1]].t if turn > 0 else 0.0
        return max(estimate, previous, 0.0)

    def cut(turn: int) -> int:
        """Index of the first event the seat had not seen when it woke for ``turn``."""
        first, woke = turns[turn][0], wake_time(turn)
        return next((i for i in range(first) if events[i].t > woke and i >= shown), first)

    def seen(upto: int) -> list[str]:
        return _text.events_text(events[shown:upto], role, currency)

    def state(turn: int) -> str:
        live = _text.live_offers(events[:shown])
        return _text.state_text(role, wake_time(turn), deadline, live, currency)

    shown = 0
    upto = cut(0)
    opening = ["The negotiation has started.", *seen(upto)]
    shown = upto
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": briefing(seat_view(scenario, role), rules)},
        {"role": "user", "content": "\n".join([*opening, state(0)])},
    ]
    n = 0
    for turn, indices in enumerate(turns):
        calls, results = [], []
        for position, index in enumerate(indices):
            call = _call(events[index])
            assert call is not None
            n += 1
            call_id = f"call_{n}"
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call[0], "arguments": json.dumps(call[1])},
                }
            )
            last = position == len(indices) - 1
            upto = index + 1 if not last else (cut(turn + 1) if turn + 1 < len(turns) else None)
            lines = seen(len(events) if upto is None else upto)
            shown = len(events) if upto is None else upto
            if last and upto is None:
                lines.append(_text.outcome_text(seat_outcome(record.outcome, role), currency))
            elif last:
                lines.append(state(turn + 1))
            results.append({"role": "tool", "tool_call_id": call_id, "content": "\n".join(lines)})
        messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        messages.extend(results)
    return {
        "messages": messages,
        "tools": function_schemas(rules),
        "metadata": _metadata(record, role, metadata),
    }


def conversation_example(
    record: NegotiationRecord,
    role: Role,
    conversation: dict[str, Any],
    *,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """A seat whose model's own conversation was stored with the negotiation (LLM seats):
    exactly the messages it read and wrote and the tools it was given, instead of a
    transcript rebuilt from the events. None if the model never got a message."""
    messages = list(conversation.get("messages") or [])
    if len(messages) < 2:
        return None
    tools = list(conversation.get("tools") or TOOLS)
    meta = _metadata(record, role, {"source": "conversation", **(metadata or {})})
    return {"messages": messages, "tools": tools, "metadata": meta}


def _metadata(
    record: NegotiationRecord, role: Role, metadata: dict[str, Any] | None
) -> dict[str, Any]:
    return {
        "role": role,
        "agent": record.buyer if role == "buyer" else record.seller,
        "opponent": record.seller if role == "buyer" else record.buyer,
        "scenario_id": record.scenario.id,
        "tier": record.scenario.tier,
        "status": record.outcome.status,
        "end_reason": record.outcome.end_reason,
        **(metadata or {}),
    }

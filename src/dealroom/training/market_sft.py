"""Chat transcripts of a scripted market seller, for supervised fine-tuning and for GRPO's lengths.

A scripted market seller (any ``MarketAgent``: ``auctioneer``, ``sequential``, a bilateral spec
per thread) plays a market through the seller's model seat, one tool call at a time
(``dealroom.engine.market_calls.MarketSellerCalls``, what ``MarketSellerEnv``'s tools do): on
each wake it decides from its view; each of its actions becomes the tool call that makes it (the
buyer named), and its wait a ``wait_for_opponent`` (its timeout, at most ``MAX_WAIT_S``, which
then wakes it to decide again). Each call and the text it returned are written down, so a row is
what a model in ``MarketSellerEnv`` reads and would have written to play that market:

- the first message is ``user``: the market briefing, exactly as ``MarketSellerEnv.reset`` and
  the ``llm:`` market seller give it;
- then one ``assistant`` message per tool call and one ``tool`` message with its result;
- ``tools`` is ``market_tools(rules)``, what TRL builds from the environment's methods.

A model seller's market was stored with the conversation its model read and wrote
(``markets.extra``: ``{"seller": {"conversation": ...}}``); ``market_conversation_example``
writes that conversation in the same shapes (its assistant messages may hold several calls, and
a last one in text), so rows of scripted and model sellers mix in one file.

Played through the seat, a market is not the market its seller plays in place (``play_market``):
each action after the first of a wake costs the clock's least step (1 ms) more, as for every
model seat, so the row comes with its own record (the metadata holds its outcome).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dealroom.engine.market import MarketRoom, buyer_agents, market_record, market_view
from dealroom.engine.market_calls import MarketSellerCalls
from dealroom.engine.match import seat_rng
from dealroom.protocol import AgentFactory, model_seat
from dealroom.protocol.arguments import MAX_WAIT_S, arguments_of
from dealroom.protocol.market import (
    DEFAULT_MARKET_RULES,
    MarketAgentFactory,
    MarketRules,
    MarketScenario,
    pool_name,
)
from dealroom.protocol.market_referee import MarketRecord
from dealroom.protocol.market_seat import market_tools
from dealroom.protocol.market_text import market_briefing
from dealroom.protocol.model_seat import ArgumentsForm, Bound, call_messages, with_arguments
from dealroom.protocol.secret import Seed
from dealroom.protocol.tools import ToolName
from dealroom.training.sft import ANOTHER_SURFACE as SURFACE
from dealroom.training.sft import NotReplayable

MAX_CALLS = 2_000
"""Calls after which a seller that never lets the clock run is stopped (it then sits out)."""


@dataclass(frozen=True, slots=True)
class MarketCall:
    """One call of the seller's seat: the tool, its arguments and the text it returned."""

    name: ToolName
    arguments: dict[str, Any]
    text: str


def seller_calls(
    market: MarketScenario,
    seller: MarketAgentFactory,
    buyers: Sequence[AgentFactory],
    *,
    names: tuple[str, Sequence[str]] | None = None,
    seed: Seed = 0,
    rules: MarketRules = DEFAULT_MARKET_RULES,
) -> tuple[list[MarketCall], MarketRecord]:
    """Play ``market`` with the scripted ``seller`` through the seller's model seat against
    ``buyers`` (each seeded as in ``play_market``): its calls, and the market's record."""
    room = MarketRoom(market, rules, buyers=buyer_agents(market, buyers, seed))
    seat = MarketSellerCalls(room)
    agent = seller(market_view(market, rules), seat_rng(seed, market.id, "seller"))
    calls: list[MarketCall] = []

    def call(name: ToolName, arguments: dict[str, Any]) -> None:
        calls.append(MarketCall(name, arguments, seat.call(Bound(name, arguments)).text))

    while not seat.over and len(calls) < MAX_CALLS:
        decision = agent.act(seat.observation())
        for item in decision.actions:
            buyer = {} if item.buyer is None else {"buyer": item.buyer}
            call(item.action.type, {**buyer, **arguments_of(item.action)})
            if seat.over:
                break
        if not seat.over:
            wait = MAX_WAIT_S if decision.wait is None else min(decision.wait, MAX_WAIT_S)
            call("wait_for_opponent", {"timeout_s": wait})
    seat.sit_out()
    return calls, market_record(room, names)


def market_sft_example(
    market: MarketScenario,
    seller: MarketAgentFactory,
    buyers: Sequence[AgentFactory],
    *,
    names: tuple[str, Sequence[str]],
    seed: Seed = 0,
    rules: MarketRules = DEFAULT_MARKET_RULES,
    arguments: ArgumentsForm = "object",
) -> dict[str, Any]:
    """The scripted seller's conversation of one market as ``{"messages", "tools",
    "metadata"}`` (``names``: the seller's spec and each buyer's)."""
    calls, record = seller_calls(market, seller, buyers, names=names, seed=seed, rules=rules)
    messages = model_seat.opening(market_briefing(market_view(market, rules)))
    for n, made in enumerate(calls, start=1):
        asked, answered = call_messages(f"call_{n}", made.name, dict(made.arguments), made.text)
        messages += [with_arguments(asked, arguments), answered]
    return {"messages": messages, "tools": market_tools(rules.rules), "metadata": _metadata(record)}


def market_conversation_example(
    record: MarketRecord,
    conversation: Mapping[str, Any],
    *,
    rules: MarketRules = DEFAULT_MARKET_RULES,
    arguments: ArgumentsForm = "object",
) -> dict[str, Any] | None:
    """A model seller's stored conversation of one market as ``{"messages", "tools",
    "metadata"}`` in ``market_sft_example``'s shapes: the briefing, each assistant message as
    the model wrote it (its text, ``""`` if none, and its calls with their arguments in the
    ``arguments`` form), each tool result with the name of the tool it answers. Nothing is
    added that the model did not read; ``tools`` are those stored with it (a market room's
    rules need not be its run's), else ``market_tools(rules)``. None if the model made no
    call. Raises NotReplayable
    (``another surface``) for a conversation not in the one model seat's form (a system
    message, a user message after the briefing, a tool result answering no call)."""
    stored = list(conversation.get("messages") or [])
    if len(stored) < 2:
        return None
    first = stored[0]
    if first.get("role") != "user" or not isinstance(first.get("content"), str):
        raise NotReplayable(SURFACE, f"{record.scenario.id} seller: no briefing first")
    messages = model_seat.opening(first["content"])
    called: dict[str, str] = {}
    for message in stored[1:]:
        match message.get("role"):
            case "assistant":
                calls = list(message.get("tool_calls") or [])
                called |= {call["id"]: call["function"]["name"] for call in calls}
                asked: dict[str, Any] = {
                    "role": "assistant",
                    "content": message.get("content") or "",
                }
                if calls:
                    asked["tool_calls"] = calls
                messages.append(with_arguments(asked, arguments))
            case "tool" if message.get("tool_call_id") in called:
                call_id = message["tool_call_id"]
                name, text = called[call_id], message.get("content") or ""
                messages.append(
                    {"role": "tool", "tool_call_id": call_id, "name": name, "content": text}
                )
            case role:
                raise NotReplayable(SURFACE, f"{record.scenario.id} seller: a {role} message")
    tools = list(conversation.get("tools") or market_tools(rules.rules))  # what it was offered
    return {"messages": messages, "tools": tools, "metadata": _metadata(record)}


def _metadata(record: MarketRecord) -> dict[str, Any]:
    outcome = record.outcome
    return {
        "role": "seller",
        "agent": record.seller,
        "opponent": pool_name(record.buyers),
        "buyers": len(record.scenario.buyers),
        "scenario_id": record.scenario.id,
        "tier": record.scenario.base.tier,
        "status": outcome.status,
        "end_reason": outcome.end_reason,
        "seller_share": outcome.seller_share,
    }


__all__ = [
    "MAX_CALLS",
    "MarketCall",
    "market_conversation_example",
    "market_sft_example",
    "seller_calls",
]

"""Forking a negotiation: rebuild the room as it stood after event K, then let new agents play on.

Only the record is needed, not the agents that made it, so any stored negotiation can be forked
(an LLM's as well as a scripted one). ``rebuild`` replays the actions behind the first K events
into a fresh ``VirtualRoom``: each time a seat is woken it queues its next batch of actions
with just the thinking time that makes them take effect at the very clock times they did
originally. The rebuilt events must equal the prefix or ``ForkError`` is raised. After the
prefix both seats are due at once, at the time of event K.

What the record does not hold is not rebuilt: refused actions left no event, so the invalid
action counts restart at zero, and the agents' own memories are not restored (the seat that
continues gets a fresh agent that sees the whole history in its first observation).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import assert_never

from dealroom.engine.match import record_of, seat_agents
from dealroom.engine.virtual import VirtualRoom
from dealroom.protocol import (
    DEFAULT_RULES,
    Accept,
    Action,
    AgentFactory,
    Decision,
    Event,
    MakeOffer,
    MessageSent,
    NegotiationEnded,
    OfferAccepted,
    OfferMade,
    OfferRejected,
    OfferWithdrawn,
    Reject,
    Role,
    Rules,
    Scenario,
    SendMessage,
    WalkAway,
    WalkedAway,
    offer_of,
)
from dealroom.protocol.errors import DealroomError
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Seed

_EPS = 1e-6


class ForkError(DealroomError):
    """The prefix cannot be rebuilt: K is out of range, inside one action, or after the end."""

    kind = "fork"


def action_of_event(event: Event) -> Action | None:
    """The action that caused an event; None for consequences (withdrawals, the end)."""
    match event:
        case OfferMade():
            return MakeOffer(price=event.price, message=event.message)
        case OfferAccepted():
            return Accept(offer_id=event.offer_id)
        case OfferRejected():
            return Reject(offer_id=event.offer_id, message=event.message)
        case MessageSent():
            return SendMessage(text=event.text)
        case WalkedAway():
            return WalkAway(message=event.message)
        case OfferWithdrawn() | NegotiationEnded():
            return None
        case _:
            assert_never(event)


@dataclass(slots=True)
class Batch:
    """One decision of a seat, read back from the events it caused."""

    start_at: float
    """When the seat's thinking must end for its first action to land at its original time."""
    actions: list[Action] = field(default_factory=list[Action])
    last_t: float = 0.0


def batches(prefix: tuple[Event, ...], rules: Rules) -> dict[Role, deque[Batch]]:
    """Each seat's actions, grouped into decisions: an action that lands exactly one action cost
    after the seat's previous one was queued with it (a seat is never woken in between)."""
    plan: dict[Role, deque[Batch]] = {"buyer": deque(), "seller": deque()}
    for event in prefix:
        action = action_of_event(event)
        if action is None or event.by is None:
            continue
        cost = rules.costs.of(action.type)
        seat = plan[event.by]
        last = seat[-1] if seat else None
        if last is not None and abs(round(last.last_t + cost, 3) - event.t) < _EPS:
            last.actions.append(action)
        else:
            seat.append(Batch(start_at=round(event.t - cost, 3), actions=[action]))
        seat[-1].last_t = event.t
    return plan


def _check_prefix(events: tuple[Event, ...], at: int) -> None:
    if not 0 <= at < len(events):
        raise ForkError(f"event {at} is out of range: the negotiation has {len(events)} events")
    following = events[at]
    if isinstance(following, NegotiationEnded) and following.reason != "deadline":
        raise ForkError(
            f"event {at} ends the negotiation ({following.reason}): fork at {at - 1} or earlier"
        )
    if offer_of(following) is not None and at > 0 and isinstance(events[at - 1], OfferWithdrawn):
        raise ForkError(
            f"event {at} withdraws an offer that event {at + 1} replaces: fork at {at - 1} "
            f"or {at + 1}"
        )


def rebuild(
    scenario: Scenario, events: tuple[Event, ...], at: int, rules: Rules = DEFAULT_RULES
) -> VirtualRoom:
    """A room holding exactly the first ``at`` events of ``events`` (0: none), no seat awake."""
    _check_prefix(events, at)
    prefix = events[:at]
    plan = batches(prefix, rules)
    room = VirtualRoom(scenario, rules)
    while room.referee.event_count < at:
        wake = room.next_wake()
        if wake is None:
            break
        role, now = wake.role, wake.observation.now
        queue = plan[role]
        if not queue:
            room.decide(role, Decision(), thinking=0.0)  # sleep until the other side acts
            continue
        # Queue the next batch now, thinking until it is due; wake again as soon as it is done.
        batch = queue.popleft()
        thinking = round(batch.start_at - now, 3)
        if thinking < 0:
            raise ForkError(f"the {role}'s actions at {batch.start_at:g} s cannot be rebuilt")
        room.decide(role, Decision(actions=tuple(batch.actions), wait=0.0), thinking=thinking)
    rebuilt = room.referee.events
    if rebuilt != prefix:
        first = next(
            (i + 1 for i, (a, b) in enumerate(zip(rebuilt, prefix, strict=False)) if a != b),
            min(len(rebuilt), len(prefix)) + 1,
        )
        raise ForkError(f"could not rebuild the first {at} events (they differ from event {first})")
    return room


def fork(
    record: NegotiationRecord,
    at: int,
    buyer: AgentFactory,
    seller: AgentFactory,
    *,
    names: tuple[str, str],
    rules: Rules = DEFAULT_RULES,
    seed: Seed = 0,
) -> NegotiationRecord:
    """Continue ``record`` after its first ``at`` events with fresh agents in both seats."""
    scenario = record.scenario
    room = rebuild(scenario, record.events, at, rules)
    for role, agent in seat_agents(scenario, buyer, seller, seed).items():
        room.assign(role, agent)
    room.run()
    return record_of(room, names)

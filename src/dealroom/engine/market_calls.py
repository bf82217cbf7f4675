"""A market's driven seat played one tool call at a time, on the virtual clock. Pure.

Either seat kind of a ``MarketRoom`` can be driven from outside with the bilateral remote
seat's turn semantics (``dealroom.engine.calls``): an action is decided alone and returns once it
has taken effect (the seat wakes at that moment), with what the seat had not been shown yet; a
refusal raises the referee's ``RuleViolation``; if the market ended first, it says so. Thinking
costs ``per_wake`` on the first action after each wait. ``wait_for_opponent`` sleeps until the
other side moves, ``timeout_s`` passes on the clock or the market ends; a seat with news it has
not been shown does not sleep.

- ``MarketSellerCalls``: the seller, with the market seller's texts
  (``dealroom.protocol.market_text``): the LLM market seller (``dealroom.agents.llm_market``)
  and a served room's seller client (``dealroom.server.market_seats``) play through it;
- ``MarketBuyerCalls``: one buyer, with the bilateral results (``ActionResult``,
  ``WaitResult``) built from its own thread only, so that a buyer's client reads what a
  bilateral buyer reads and never another buyer's thread.

Every other seat must be in place (an agent): the clock never waits for anyone else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, assert_never

from dealroom.engine.market import BuyerWake, MarketRoom
from dealroom.protocol import (
    Action,
    ActionResult,
    Decision,
    ErrorCode,
    Observation,
    RuleViolation,
    ToolErrorPayload,
    WaitResult,
    WakeReason,
    WalkAway,
    seat_text,
)
from dealroom.protocol.market import Addressed, MarketDecision, MarketObservation
from dealroom.protocol.market_seat import GetState, Move, Wait, move_of
from dealroom.protocol.market_text import (
    WakeHead,
    market_state_text,
    market_update_text,
    wake_head,
)
from dealroom.protocol.model_seat import Bound
from dealroom.protocol.seat_text import error_payload
from dealroom.protocol.tools import ArgumentError


@dataclass(frozen=True, slots=True)
class MarketReply:
    """What one call returned: the text the model reads, and whether it was refused (by its
    arguments' check or by the referee)."""

    text: str
    refused: bool = False


class MarketSellerCalls:
    """The driven seller of a ``MarketRoom`` whose buyers are all in place: ``move`` makes one
    call and returns the text the seller reads, and whether it was refused."""

    def __init__(self, room: MarketRoom) -> None:
        self.room = room
        self.per_wake = room.rules.rules.thinking.per_wake
        self.seen: dict[str, int] = dict.fromkeys(room.referee.market.buyers, 0)
        """Events of each thread the seller has been shown."""
        self.fresh = True
        """The next action is the first after a wait (it costs the per-wake thinking)."""
        self.wake = room.next_wake()

    @property
    def over(self) -> bool:
        """True once the market has ended."""
        return self.wake is None

    def observation(self) -> MarketObservation:
        """What the seller sees now (the market's end once it is over)."""
        if self.wake is not None:
            return self.wake.observation
        return self.room.referee.observe_seller(self.room.now)

    def call(self, bound: Bound) -> MarketReply:
        """One call that fits its tool's signature (``market_seat.bind_market``): what the
        model reads back."""
        try:
            move = move_of(bound)
        except ArgumentError as refused:
            return MarketReply(refused.payload.text(), refused=True)
        text, refused = self.move(move)
        return MarketReply(text, refused)

    def move(self, move: Move) -> tuple[str, bool]:
        """One call: the text the seller reads, and True if it was refused (nothing changed,
        except that the referee counts a refused action)."""
        match move:
            case Addressed():
                return self._act(move)
            case Wait():
                return self._wait(move.timeout_s), False
            case GetState():
                text = market_state_text(self.observation())
                self._shown()
                return text, False
            case _:
                assert_never(move)

    def sit_out(self) -> None:
        """Stay silent until the market ends (woken by buyers' moves, deciding nothing)."""
        while self.wake is not None:
            self.room.decide(MarketDecision())
            self.wake = self.room.next_wake()

    def leave(self) -> None:
        """Walk away from the whole market, then sit out."""
        if self.wake is not None:
            self.room.decide(MarketDecision((Addressed(None, WalkAway()),)))
            self.wake = self.room.next_wake()
        self.sit_out()

    def _act(self, item: Addressed) -> tuple[str, bool]:
        room = self.room
        if self.wake is None:
            return _error(ErrorCode.NEGOTIATION_CLOSED, "The market has ended."), True
        start = len(room.referee.log)
        room.decide(MarketDecision((item,), wait=0.0), self.per_wake if self.fresh else 0.0)
        self.fresh = False
        self.wake = room.next_wake()
        errors = room.seller.errors if self.wake is None else self.wake.errors
        if errors:
            violation = errors[-1]
            return _error(violation.code, violation.message), True
        took_effect = any(
            entry.event.by == "seller" and item.buyer in (None, entry.buyer)
            for entry in room.referee.log[start:]
        )
        if took_effect:
            return self._update("ok"), False
        return self._update(_too_late(room).text()), False

    def _wait(self, timeout_s: float) -> str:
        head: WakeHead
        if self.wake is None:
            head = "ended"
        elif self._news():
            head = "news"  # a seller with news it has not been shown does not sleep
        else:
            self.room.decide(MarketDecision(wait=timeout_s), 0.0)
            self.fresh = True
            self.wake = self.room.next_wake()
            head = "ended" if self.wake is None else ("news" if self._news() else "timeout")
        return self._update(wake_head(head))

    def _news(self) -> bool:
        return any(
            event.by != "seller"
            for thread in self.observation().threads
            for event in thread.events[self.seen[thread.buyer] :]
        )

    def _update(self, head: str) -> str:
        text = market_update_text(head, self.observation(), self.seen)
        self._shown()
        return text

    def _shown(self) -> None:
        for thread in self.observation().threads:
            self.seen[thread.buyer] = len(thread.events)


class MarketBuyerCalls:
    """One driven buyer of a ``MarketRoom`` whose other seats are all in place, played with the
    bilateral buyer's calls and results, from its own thread only."""

    def __init__(self, room: MarketRoom, buyer: str) -> None:
        self.room = room
        self.buyer = buyer
        self.per_wake = room.rules.rules.thinking.per_wake
        self.seen = 0
        """Events of its thread it has been shown."""
        self.fresh = True
        self.wake = self._next()

    def observation(self) -> Observation:
        """What the buyer sees now: its own thread (its end once the thread is over)."""
        referee = self.room.referee
        if self.wake is not None and referee.threads[self.buyer].is_open:
            return self.wake.observation
        return referee.observe_buyer(self.buyer, self.room.now)

    def observe(self, *, deliver: bool) -> Observation:
        """``observation``; ``deliver`` marks its events as shown."""
        observation = self.observation()
        if deliver:
            self.seen = len(observation.events)
        return observation

    def hint(self) -> str:
        """What the buyer can usefully do next."""
        o = self.observation()
        return seat_text.hint("buyer", o.live_offers, o.outcome)

    def act(self, action: Action) -> ActionResult:
        """One action; returns once it has taken effect. Raises RuleViolation if refused."""
        room = self.room
        if self.wake is None or not room.referee.threads[self.buyer].is_open:
            if self.seen >= len(self.observation().events):
                raise RuleViolation(ErrorCode.NEGOTIATION_CLOSED, "The negotiation has ended.")
            return ActionResult(ok=False, error=_too_late(room), **self._update())
        before = len(self.wake.observation.events)
        room.decide_buyer(
            self.buyer, Decision(actions=(action,), wait=0.0), self.per_wake if self.fresh else 0
        )
        self.fresh = False
        self.wake = self._next()
        errors = self.wake.errors if self.wake is not None else room.buyers[self.buyer].errors
        if errors:
            raise errors[-1]
        events = self.observation().events[before:]
        if any(event.by == "buyer" for event in events):
            return ActionResult(ok=True, **self._update())
        return ActionResult(ok=False, error=_too_late(room), **self._update())

    def wait(self, timeout_s: float) -> WaitResult:
        """Sleep until the seller moves in this thread, ``timeout_s`` on the clock, or the
        end."""
        reason: WakeReason
        if self.wake is None or not self.room.referee.threads[self.buyer].is_open:
            reason = "ended"
        elif self._news():
            reason = "news"
        else:
            self.room.decide_buyer(self.buyer, Decision(wait=max(timeout_s, 0.0)), 0.0)
            self.fresh = True
            self.wake = self._next()
            if self.wake is None or not self.room.referee.threads[self.buyer].is_open:
                reason = "ended"
            else:
                reason = "news" if self._news() else "timeout"
        return WaitResult(woke=reason, **self._update())

    def sit_out(self) -> None:
        """Stay silent until the market ends."""
        while self.wake is not None:
            self.room.decide_buyer(self.buyer, Decision())
            self.wake = self._next()

    def _next(self) -> BuyerWake | None:
        wake = self.room.next_any_wake()
        if wake is not None and not (isinstance(wake, BuyerWake) and wake.buyer == self.buyer):
            raise RuntimeError("another driven seat woke: one driven seat per market")
        return wake

    def _news(self) -> bool:
        return any(event.by == "seller" for event in self.observation().events[self.seen :])

    def _update(self) -> dict[str, Any]:
        o = self.observation()
        events, self.seen = o.events[self.seen :], max(self.seen, len(o.events))
        return {
            "events": events,
            "live_offers": o.live_offers,
            "now": o.now,
            "time_left": o.time_left,
            "outcome": o.outcome,
            "hint": seat_text.hint("buyer", o.live_offers, o.outcome),
        }


def _too_late(room: MarketRoom) -> ToolErrorPayload:
    outcome = room.referee.outcome
    if outcome is not None and outcome.end_reason == "deadline":
        return error_payload(
            ErrorCode.DEADLINE_PASSED, "The deadline came before your action could take effect."
        )
    return error_payload(
        ErrorCode.NEGOTIATION_CLOSED, "The market ended before your action could take effect."
    )


def _error(code: str, message: str) -> str:
    return error_payload(code, message).text()


__all__ = ["MarketBuyerCalls", "MarketSellerCalls"]

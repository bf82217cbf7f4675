"""A market's driven seats played one tool call at a time, on the virtual clock. Pure.

Any seat of a ``MarketRoom`` can be driven from outside with the bilateral remote seat's turn
semantics (``dealroom.engine.calls``): an action is decided alone and returns once it
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

Several seats may be driven at once; they take turns (``dealroom.engine.market_turns``). A call
that changes the schedule comes in two halves: ``begin_*`` decides at the seat's turn and runs
the clock to the next turn, and the function it returns builds the reply once it is this seat's
turn again (or it is closed). With one driven seat that is at once (``act``, ``wait``, ``move``
do both); with several, a served room awaits the seat's turn in between
(``dealroom.server.market_room``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, assert_never

from dealroom.engine.market import BuyerWake, MarketRoom, MarketWake
from dealroom.engine.market_turns import SELLER, MarketTurns
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

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class MarketReply:
    """What one call returned: the text the model reads, and whether it was refused (by its
    arguments' check or by the referee)."""

    text: str
    refused: bool = False


class MarketSellerCalls:
    """The driven seller of a ``MarketRoom``: ``move`` makes one call and returns the text the
    seller reads, and whether it was refused."""

    def __init__(self, room: MarketRoom | MarketTurns) -> None:
        self.turns = room if isinstance(room, MarketTurns) else MarketTurns(room)
        self.room = self.turns.room
        self.per_wake = self.room.rules.rules.thinking.per_wake
        self.seen: dict[str, int] = dict.fromkeys(self.room.referee.market.buyers, 0)
        """Events of each thread the seller has been shown."""
        self.fresh = True
        """The next action is the first after a wait (it costs the per-wake thinking)."""

    @property
    def over(self) -> bool:
        """True once the market has ended."""
        return self.turns.over

    @property
    def wake(self) -> MarketWake | None:
        """The seller's latest wake; None once the market is over."""
        wake = self.turns.wakes[SELLER]
        return None if self.over or not isinstance(wake, MarketWake) else wake

    def observation(self) -> MarketObservation:
        """What the seller sees now: at its latest wake (the market's end once it is over)."""
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
        except that the referee counts a refused action). Only when no other seat is driven."""
        return _settled(self.turns, SELLER, self.begin(move))

    def begin(self, move: Move) -> Callable[[], tuple[str, bool]]:
        """Make the call at the seller's turn (or once the market is over); the function
        returned gives ``move``'s reply once it is the seller's turn again."""
        match move:
            case Addressed():
                return self._act(move)
            case Wait():
                return self._wait(move.timeout_s)
            case GetState():
                text = market_state_text(self.observation())
                self._shown()
                return lambda: (text, False)
            case _:
                assert_never(move)

    def sit_out(self) -> None:
        """Stay silent until the market ends (woken by buyers' moves, deciding nothing)."""
        while not self.over:
            self.turns.decide_seller(MarketDecision())
            self._check_turn()

    def leave(self) -> None:
        """Walk away from the whole market, then sit out."""
        if not self.over:
            self.turns.decide_seller(MarketDecision((Addressed(None, WalkAway()),)))
            self._check_turn()
        self.sit_out()

    def _check_turn(self) -> None:
        if not self.turns.ready(SELLER):
            raise RuntimeError("another driven seat woke: take turns (MarketTurns)")

    def _act(self, item: Addressed) -> Callable[[], tuple[str, bool]]:
        room = self.room
        if self.over:
            text = _error(ErrorCode.NEGOTIATION_CLOSED, "The market has ended.")
            return lambda: (text, True)
        start = len(room.referee.log)
        self.turns.decide_seller(
            MarketDecision((item,), wait=0.0), self.per_wake if self.fresh else 0.0
        )
        self.fresh = False

        def reply() -> tuple[str, bool]:
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

        return reply

    def _wait(self, timeout_s: float) -> Callable[[], tuple[str, bool]]:
        head: WakeHead
        if self.wake is None:
            head = "ended"
        elif self._news():
            head = "news"  # a seller with news it has not been shown does not sleep
        else:
            self.turns.decide_seller(MarketDecision(wait=timeout_s), 0.0)
            self.fresh = True

            def woken() -> tuple[str, bool]:
                if self.wake is None:
                    return self._update(wake_head("ended")), False
                return self._update(wake_head("news" if self._news() else "timeout")), False

            return woken
        text = self._update(wake_head(head))
        return lambda: (text, False)

    def pending(self) -> str:
        """The reply to a wait that is still asleep when the caller stops waiting."""
        return self._update(wake_head("pending"))

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
    """One driven buyer of a ``MarketRoom``, played with the bilateral buyer's calls and
    results, from its own thread only."""

    def __init__(self, room: MarketRoom | MarketTurns, buyer: str) -> None:
        self.turns = room if isinstance(room, MarketTurns) else MarketTurns(room)
        self.room = self.turns.room
        self.buyer = buyer
        self.per_wake = self.room.rules.rules.thinking.per_wake
        self.seen = 0
        """Events of its thread it has been shown."""
        self.fresh = True

    @property
    def closed(self) -> bool:
        """True once its thread (or the market) has ended."""
        return self.turns.closed(self.buyer)

    def observation(self) -> Observation:
        """What the buyer sees now: its own thread at its latest wake (its end once the thread
        is over)."""
        if not self.closed:
            return self._wake().observation
        return self.room.referee.observe_buyer(self.buyer, self.room.now)

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
        """One action; returns once it has taken effect. Raises RuleViolation if refused. Only
        when no other seat is driven."""
        return _settled(self.turns, self.buyer, self.begin_act(action))

    def wait(self, timeout_s: float) -> WaitResult:
        """Sleep until the seller moves in this thread, ``timeout_s`` on the clock, or the
        end. Only when no other seat is driven."""
        return _settled(self.turns, self.buyer, self.begin_wait(timeout_s))

    def begin_act(self, action: Action) -> Callable[[], ActionResult]:
        """Decide ``action`` at the buyer's turn (or once closed: then it is refused at once,
        ``negotiation_closed``, if it has been shown the end); the function returned gives the
        result once it is the buyer's turn again, raising the referee's RuleViolation if the
        action was refused."""
        room = self.room
        if self.closed:
            if self.seen >= len(self.observation().events):
                raise RuleViolation(ErrorCode.NEGOTIATION_CLOSED, "The negotiation has ended.")
            late = ActionResult(ok=False, error=_too_late(room), **self._update())
            return lambda: late
        before = len(self._wake().observation.events)
        self.turns.decide_buyer(
            self.buyer, Decision(actions=(action,), wait=0.0), self.per_wake if self.fresh else 0
        )
        self.fresh = False

        def result() -> ActionResult:
            errors = room.buyers[self.buyer].errors if self.closed else self._wake().errors
            if errors:
                raise errors[-1]
            events = self.observation().events[before:]
            if any(event.by == "buyer" for event in events):
                return ActionResult(ok=True, **self._update())
            return ActionResult(ok=False, error=_too_late(room), **self._update())

        return result

    def begin_wait(self, timeout_s: float) -> Callable[[], WaitResult]:
        """Go to sleep at the buyer's turn (none with news it has not been shown, or once
        closed); the function returned gives the result once it is the buyer's turn again."""
        reason: WakeReason
        if self.closed:
            reason = "ended"
        elif self._news():
            reason = "news"
        else:
            self.turns.decide_buyer(self.buyer, Decision(wait=max(timeout_s, 0.0)), 0.0)
            self.fresh = True

            def woken() -> WaitResult:
                woke: WakeReason = "ended" if self.closed else "news" if self._news() else "timeout"
                return WaitResult(woke=woke, **self._update())

            return woken
        result = WaitResult(woke=reason, **self._update())
        return lambda: result

    def pending(self) -> WaitResult:
        """The reply to a wait that is still asleep when the caller stops waiting."""
        return WaitResult(woke="pending", **self._update())

    def sit_out(self) -> None:
        """Stay silent until the market ends."""
        while not self.closed:
            self.turns.decide_buyer(self.buyer, Decision())
            if not self.turns.ready(self.buyer):
                raise RuntimeError("another driven seat woke: take turns (MarketTurns)")

    def _wake(self) -> BuyerWake:
        wake = self.turns.wakes[self.buyer]
        assert isinstance(wake, BuyerWake)
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


def _settled(turns: MarketTurns, seat: str, reply: Callable[[], _T]) -> _T:
    """``reply()`` right away: with one driven seat, its call has brought its next turn."""
    if not turns.ready(seat):
        raise RuntimeError("another driven seat woke: take turns (MarketTurns)")
    return reply()


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

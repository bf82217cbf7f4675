"""What the market seller's tool calls do and return, one call at a time: one turn semantics for
every surface that drives a market's seller as a model seat (the ``llm:`` seller of ``dealroom
match --buyers N``, the TRL environment, the SFT export).

The seller of a ``MarketRoom`` is driven from outside (``next_wake`` / ``decide``) with the
bilateral remote seat's turn semantics (``dealroom.engine.calls``):

- an action (``make_offer``, ``accept``, ``reject``, ``send_message``, ``walk_away``, each
  addressed to a buyer) is decided alone and returns once it has taken effect (the seller wakes
  at that moment): ``ok`` and what the seller had not seen yet; a refusal (the referee's, e.g.
  ``unknown_buyer``) reads ``code: sentence. hint.`` and is counted by the referee; if the market
  ended first, it says so. Thinking costs ``per_wake`` on the first action after each wait (the
  market room's clock adds its least step, ``MIN_STEP``, to the others);
- ``wait_for_opponent`` sleeps until any buyer moves (``woke: news``), ``timeout_s`` passes on
  the clock (``woke: timeout``) or the market ends (``woke: ended``); a seller with news it has
  not been shown does not sleep;
- ``get_state`` shows every thread and costs no clock time.

What a call reads is ``dealroom.protocol.market_text``; which calls fit is
``dealroom.protocol.market_seat``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from dealroom.engine.market import MarketRoom
from dealroom.protocol import ErrorCode, WalkAway
from dealroom.protocol.market import Addressed, MarketDecision, MarketObservation
from dealroom.protocol.market_seat import GetState, Wait, move_of
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
    """The driven seller of a ``MarketRoom``, played one tool call at a time: ``call`` makes
    one bound call (``market_seat.bind_market``) and returns what the model reads (see the
    module's docstring)."""

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
        """One call that fits its tool's signature: what the model reads back."""
        try:
            move = move_of(bound)
        except ArgumentError as refused:
            return MarketReply(refused.payload.text(), refused=True)
        match move:
            case Addressed():
                return self._act(move)
            case Wait():
                return MarketReply(self._wait(move.timeout_s))
            case GetState():
                text = market_state_text(self.observation())
                self._shown()
                return MarketReply(text)
            case _:
                assert_never(move)

    def sit_out(self) -> None:
        """Stay silent until the market ends (woken by buyers' moves, deciding nothing)."""
        while self.wake is not None:
            self.room.decide(MarketDecision())
            self.wake = self.room.next_wake()

    def leave(self) -> None:
        """Walk away from the whole market (the seat's model failed), then sit out."""
        if self.wake is not None:
            self.room.decide(MarketDecision((Addressed(None, WalkAway()),)))
            self.wake = self.room.next_wake()
        self.sit_out()

    # -- the calls -------------------------------------------------------------------------

    def _act(self, item: Addressed) -> MarketReply:
        room = self.room
        if self.wake is None:
            return _refused(ErrorCode.NEGOTIATION_CLOSED, "The market has ended.")
        start = len(room.referee.log)
        room.decide(MarketDecision((item,), wait=0.0), self.per_wake if self.fresh else 0.0)
        self.fresh = False
        self.wake = room.next_wake()
        errors = room.seller.errors if self.wake is None else self.wake.errors
        if errors:
            return _refused(errors[-1].code, errors[-1].message)
        took_effect = any(
            entry.event.by == "seller" and item.buyer in (None, entry.buyer)
            for entry in room.referee.log[start:]
        )
        return MarketReply(self._update("ok" if took_effect else self._too_late()))

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

    # -- helpers ---------------------------------------------------------------------------

    def _too_late(self) -> str:
        outcome = self.room.referee.outcome
        if outcome is not None and outcome.end_reason == "deadline":
            return _error(
                ErrorCode.DEADLINE_PASSED,
                "The deadline came before your action could take effect.",
            )
        return _error(
            ErrorCode.NEGOTIATION_CLOSED,
            "The market ended before your action could take effect.",
        )

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


def _error(code: str, message: str) -> str:
    return error_payload(code, message).text()


def _refused(code: str, message: str) -> MarketReply:
    return MarketReply(_error(code, message), refused=True)


__all__ = ["MarketReply", "MarketSellerCalls"]

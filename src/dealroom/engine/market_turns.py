"""Whose turn it is in a market with several driven seats. Pure.

A ``MarketRoom`` stops its clock at a driven seat's wake until that seat decides. ``MarketTurns``
keeps that one rule for any number of driven seats (the seller's and any buyers'): the clock runs
to the next driven seat's wake and waits there for its decision, so the driven seats take their
turns one at a time, in the schedule's order. What happens on the clock therefore depends on
each seat's decisions only, never on the order in which they arrive from outside (a served
room's clients call in whatever wall-time order they like: each call waits for its seat's turn).

A seat marked ``absent`` (a client silent while others wait on it) sits out its wakes, deciding
nothing and sleeping until news, so it holds nobody up; ``back`` ends its absence and wakes it
as soon as the clock allows (no earlier than the last item run: from then on the market depends
on when it came back, as a bilateral room's absent seat does).
"""

from __future__ import annotations

from dealroom.engine.market import BuyerWake, MarketRoom, MarketWake
from dealroom.protocol import Decision
from dealroom.protocol.market import MarketDecision

SELLER = "seller"
"""The seller's seat name (the buyers': their ids, ``b1`` .. ``bN``)."""


class MarketTurns:
    """The driven seats of one ``MarketRoom`` and the one whose decision the clock waits for."""

    def __init__(self, room: MarketRoom) -> None:
        self.room = room
        referee = room.referee
        self.seats: tuple[str, ...] = (
            *((SELLER,) if room.seller.agent is None else ()),
            *(b for b in referee.market.buyers if room.buyers[b].agent is None),
        )
        """The driven seats, the seller first."""
        self.wakes: dict[str, MarketWake | BuyerWake] = {}
        """Each driven seat's latest wake; before its first, what it sees at the start."""
        for seat in self.seats:
            self.wakes[seat] = (
                MarketWake(referee.observe_seller(0.0), ())
                if seat == SELLER
                else BuyerWake(seat, referee.observe_buyer(seat, 0.0), ())
            )
        self.turn: str | None = None
        """The driven seat the clock waits for; None once the market is over."""
        self.absent: set[str] = set()
        """Seats that sit out their wakes (``set_absent``)."""
        self.advance()

    @property
    def over(self) -> bool:
        """True once the market has ended."""
        return not self.room.referee.is_open

    def closed(self, seat: str) -> bool:
        """True once ``seat`` will never wake again: the market is over, or a buyer's thread."""
        if self.over:
            return True
        return seat != SELLER and not self.room.referee.threads[seat].is_open

    def ready(self, seat: str) -> bool:
        """True when a call of ``seat`` can be served now: its turn, or it is closed."""
        return self.turn == seat or self.closed(seat)

    def stamp(self) -> tuple[float, ...]:
        """What dates an input given now, journaled with it: nothing on the virtual clock (the
        order of the inputs is enough; ``WallTurns``: the wall time)."""
        return ()

    def called(self, seat: str) -> bool:
        """A call of ``seat`` begins: it is back if it was absent (True if it was)."""
        if seat not in self.absent:
            return False
        self.back(seat)
        return True

    def advance(self) -> None:
        """Run the clock to the next driven seat's wake (nothing while one is awake); an absent
        seat sits out its wakes."""
        room = self.room
        while self.turn is None:
            wake = room.next_any_wake()
            if wake is None:
                return
            seat = SELLER if isinstance(wake, MarketWake) else wake.buyer
            if seat in self.absent:
                self._sit(seat)
                continue
            self.wakes[seat] = wake
            self.turn = seat

    def decide_seller(self, decision: MarketDecision, thinking: float | None = None) -> None:
        """The seller's decision at its turn, then the clock runs to the next turn."""
        self._taken(SELLER)
        self.room.decide(decision, thinking)
        self.advance()

    def decide_buyer(self, buyer: str, decision: Decision, thinking: float | None = None) -> None:
        """A driven buyer's decision at its turn, then the clock runs to the next turn."""
        self._taken(buyer)
        self.room.decide_buyer(buyer, decision, thinking)
        self.advance()

    def set_absent(self, seat: str) -> None:
        """``seat`` sits out its wakes from now on (at once if it is its turn)."""
        if seat in self.absent or self.closed(seat):
            return
        self.absent.add(seat)
        if self.turn == seat:
            self.turn = None
            self._sit(seat)
            self.advance()

    def back(self, seat: str) -> None:
        """``seat`` is no longer absent: it wakes as soon as the clock allows."""
        if seat not in self.absent:
            return
        self.absent.discard(seat)
        if self.closed(seat):
            return
        self.room.rouse(None if seat == SELLER else seat)
        self.advance()  # only runs when no seat was awake: every other one was absent

    def _taken(self, seat: str) -> None:
        if self.turn != seat:
            raise RuntimeError(f"it is not the turn of {seat!r} (it is {self.turn!r}'s)")
        self.turn = None

    def _sit(self, seat: str) -> None:
        if seat == SELLER:
            self.room.decide(MarketDecision())
        else:
            self.room.decide_buyer(seat, Decision())


__all__ = ["SELLER", "MarketTurns"]

"""A market's driven seats on the wall clock: no turns. Pure.

On the wall clock (``MarketRoom(clock="wall")``) a driven seat is not on the schedule: its
action takes effect at the wall time its call arrives, never waiting for another seat's turn,
and its waits end at news in its thread(s), at its timeout on the wall, or at the end. House
seats keep the bilateral wall clock's rules (``engine.seats.WALL_COSTS``, ``answer_to``): each
wake costs its thinking, its actions take effect one clock step apart, every new offer from the
other side is answered, and each item runs once the wall passes its due time. The deadline
ends the market once the wall reaches it. The referee is the virtual clock's: the seller's turn
budget, the first accepted offer ending every thread and a buyer's walk-away ending its own.

``WallTurns`` keeps ``MarketTurns``' interface, so that the driven seats' calls
(``dealroom.engine.market_calls``) are the same on both clocks: ``ready`` is true unless the
seat sleeps, and ``at_wall`` brings the market up to a wall time given from outside (no clock
is read here). What happens depends on the order in which the calls arrive and their wall
times: given both (a served room journals them), it is the same market byte for byte.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dealroom.engine.market import BuyerWake, MarketRoom, MarketWake
from dealroom.engine.market_turns import SELLER, MarketTurns
from dealroom.protocol import Decision, RuleViolation
from dealroom.protocol._base import round_ms
from dealroom.protocol.market import MarketDecision
from dealroom.protocol.market_referee import MarketEntry


@dataclass(frozen=True, slots=True)
class Sleep:
    """A driven seat's wait: when it times out on the wall, and how much of the market's log
    its view held when it fell asleep (news is what comes after)."""

    until: float
    since: int


class WallTurns(MarketTurns):
    """The driven seats of one ``MarketRoom`` on the wall clock: every seat acts when its call
    arrives (``turn`` is always None); a sleeping seat is not ``ready`` until it wakes."""

    def __init__(self, room: MarketRoom) -> None:
        if room.clock != "wall":
            raise ValueError("WallTurns drives a market on the wall clock")
        self.wall = 0.0
        """The wall time the market has been brought up to (seconds since its start)."""
        self.asleep: dict[str, Sleep] = {}
        """The driven seats asleep, by seat."""
        self.version = 0
        """Bumped on every change (the room wakes its waiting calls)."""
        self.viewed: dict[str, int] = {}
        """How much of the market's log each driven seat's latest view holds (news is what
        comes after); 0 before its first."""
        super().__init__(room)

    def ready(self, seat: str) -> bool:
        """True unless ``seat`` sleeps (a closed seat is always ready)."""
        return seat not in self.asleep or self.closed(seat)

    def stamp(self) -> tuple[float, ...]:
        """The wall time of an input given now (journaled with it)."""
        return (self.wall,)

    def at_wall(self, wall: float) -> None:
        """Bring the market up to ``wall`` seconds since its start: house items due by then
        run, the deadline ends the market, sleeping seats wake. Never moves back."""
        wall = round_ms(wall)
        if wall > self.wall:
            self.wall = wall
        self.advance()

    def advance(self) -> None:
        """Run the house seats up to the wall, then wake the sleepers with news or timed out."""
        room, before = self.room, self.progress()
        room.advance(self.wall)
        if self.progress() != before:
            self.version += 1
        self._rouse()

    def next_time(self) -> float:
        """The wall time at which the market next changes by itself: a house item, a sleeper's
        timeout or the deadline (inf once it is over)."""
        if self.over:
            return math.inf
        timeouts = (sleep.until for sleep in self.asleep.values())
        return min(self.room.next_due(), self.room.deadline, *timeouts)

    def decide_seller(self, decision: MarketDecision, thinking: float | None = None) -> None:
        """The seller's call at the wall time: its actions take effect now (``thinking`` plays
        no part: the wall has passed while it thought), or it sleeps (``wait``)."""
        room, at = self.room, self.wall
        seat = room.seller
        for item in decision.actions:
            self._refused(seat.errors, room.act_seller(item, at))
        self._after(SELLER, decision.wait, bool(decision.actions))

    def decide_buyer(self, buyer: str, decision: Decision, thinking: float | None = None) -> None:
        """A driven buyer's call at the wall time (as ``decide_seller``)."""
        room, at = self.room, self.wall
        seat = room.buyers[buyer]
        for action in decision.actions:
            self._refused(seat.errors, room.act_buyer(buyer, action, at))
        self._after(buyer, decision.wait, bool(decision.actions))

    def called(self, seat: str) -> bool:
        """A call of ``seat`` begins: the seat sees the market as it stands at the wall's
        present, ending its sleep (a wait that replied ``pending``) and its absence (True if it
        was absent)."""
        self._wake(seat, self.wall)
        return super().called(seat)

    def set_absent(self, seat: str) -> None:
        """Noted only: an absent seat holds nobody up on the wall clock (nobody waits for a
        turn), and the deadline ends the market."""
        if not self.closed(seat):
            self.absent.add(seat)

    def back(self, seat: str) -> None:
        """``seat`` is no longer absent."""
        self.absent.discard(seat)

    # -- internals ---------------------------------------------------------------------------

    def progress(self) -> tuple[int, bool]:
        """How far the market has got: its events so far, and whether it is open."""
        referee = self.room.referee
        return len(referee.log), referee.is_open

    @staticmethod
    def _refused(errors: list[RuleViolation], violation: RuleViolation | None) -> None:
        errors.clear()
        if violation is not None:
            errors.append(violation)

    def _after(self, seat: str, wait: float | None, acted: bool) -> None:
        self.version += 1
        if acted:
            self._wake(seat, self.wall)
        else:
            self._errors_of(seat).clear()
            until = math.inf if wait is None else round_ms(self.wall + max(wait, 0.0))
            self.asleep[seat] = Sleep(until, self.viewed.get(seat, 0))
        self.advance()

    def _rouse(self) -> None:
        log = self.room.referee.log
        for seat, sleep in list(self.asleep.items()):
            news = next((e.event.t for e in log[sleep.since :] if _news_for(seat, e)), math.inf)
            at = min(news, sleep.until)
            if at <= self.wall or self.closed(seat):
                self._wake(seat, min(at, self.wall))

    def _wake(self, seat: str, at: float) -> None:
        self.asleep.pop(seat, None)
        self.version += 1
        if self.closed(seat):
            return
        referee, errors = self.room.referee, tuple(self._errors_of(seat))
        self.viewed[seat] = len(referee.log)
        self.wakes[seat] = (
            MarketWake(referee.observe_seller(at), errors)
            if seat == SELLER
            else BuyerWake(seat, referee.observe_buyer(seat, at), errors)
        )

    def _errors_of(self, seat: str) -> list[RuleViolation]:
        room = self.room
        return room.seller.errors if seat == SELLER else room.buyers[seat].errors


def _news_for(seat: str, entry: MarketEntry) -> bool:
    """The entry is news to ``seat``: the other side moved in its thread (any buyer, for the
    seller)."""
    if seat == SELLER:
        return entry.event.by == "buyer"
    return entry.buyer == seat and entry.event.by == "seller"


__all__ = ["Sleep", "WallTurns"]

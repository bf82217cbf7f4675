"""A market room's journal: the room survives a restart of its server.

A served market is fully determined by its room's request and, in order, what its client seats
gave the clock (``dealroom.engine.market_turns``): each decision at a seat's turn (and the
thinking it was charged), each seat counted absent and each seat back; house agents decide
exactly as they did. What each seat's calls have shown it (``seen``, and whether its next action
pays the per-wake thinking) is journaled as each call ends. The journal is the bilateral rooms'
(``dealroom.server.journal``: one file per room, a header line with the request and the token
digests, one ``{"n": 1, "op": [...]}`` line per input, written through before the call that
made the input returns; a failed write sets it aside and the room plays on unrestorable).
``RoomRegistry.restore`` replays it into a fresh room; clients reconnect with their tokens and
go on. A message budget starts again after a restart, as a bilateral room's does.

Ops: ``["seller", decision, thinking]``, ``["buyer", name, decision, thinking]``, ``["absent",
seat]``, ``["back", seat]`` and ``["shown", seat, seen, fresh]``.

On the wall clock (``JournaledWallTurns``) there are no turns: a market is determined by the
order in which its client seats' calls arrived and their wall times, so each decision carries
the wall time it took effect at (``["seller", decision, thinking, wall]``, ``["buyer", name,
decision, thinking, wall]``), the wall-clock steps that changed the market are journaled as
``["advance", wall]``, and the room journals when its clock started (``["start",
epoch_seconds]``, as a bilateral wall room does: ``dealroom.server.market_wall``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dealroom.engine.market import MarketRoom
from dealroom.engine.market_calls import MarketBuyerCalls, MarketSellerCalls
from dealroom.engine.market_turns import MarketTurns
from dealroom.engine.market_wall import WallTurns
from dealroom.protocol import ACTION_ADAPTER, Decision
from dealroom.protocol.market import Addressed, MarketDecision
from dealroom.server.journal import Op


class JournaledTurns(MarketTurns):
    """``MarketTurns`` that hands every input it is given to ``journal`` as it is made."""

    def __init__(self, room: MarketRoom, journal: Callable[[Op], None]) -> None:
        self._journal = journal
        self.replaying = False
        """True while the journal is replayed into it (nothing is journaled twice)."""
        super().__init__(room)

    def note(self, op: Op) -> None:
        """Journal one input (not while replaying)."""
        if not self.replaying:
            self._journal(op)

    def decide_seller(self, decision: MarketDecision, thinking: float | None = None) -> None:
        super().decide_seller(decision, thinking)
        actions = [[a.buyer, a.action.model_dump(mode="json")] for a in decision.actions]
        self.note(["seller", {"actions": actions, "wait": decision.wait}, thinking, *self.stamp()])

    def decide_buyer(self, buyer: str, decision: Decision, thinking: float | None = None) -> None:
        super().decide_buyer(buyer, decision, thinking)
        actions = [a.model_dump(mode="json") for a in decision.actions]
        payload = {"actions": actions, "wait": decision.wait}
        self.note(["buyer", buyer, payload, thinking, *self.stamp()])

    def set_absent(self, seat: str) -> None:
        if seat not in self.absent and not self.closed(seat):
            self.note(["absent", seat])
        super().set_absent(seat)

    def back(self, seat: str) -> None:
        if seat in self.absent:
            self.note(["back", seat])
        super().back(seat)


class JournaledWallTurns(JournaledTurns, WallTurns):
    """``WallTurns`` journaled: each decision with its wall time, and each wall-clock step that
    changed the market (``["advance", wall]``; one that did not need not be replayed)."""

    def at_wall(self, wall: float) -> None:
        before = self.progress()
        super().at_wall(wall)
        if self.progress() != before:
            self.note(["advance", self.wall])


MarketSeatCalls = MarketSellerCalls | MarketBuyerCalls


def seen_by(calls: MarketSeatCalls) -> tuple[Any, bool]:
    """What a seat's calls have shown it, and whether its next action pays per-wake thinking."""
    seen = dict(calls.seen) if isinstance(calls, MarketSellerCalls) else calls.seen
    return seen, calls.fresh


def replay_op(turns: MarketTurns, calls: dict[str, MarketSeatCalls], op: Sequence[Any]) -> None:
    """Give the market one journaled input (``start`` is the room's); raises ValueError for a
    line that is none."""
    match op:
        case ["seller", {"actions": actions, "wait": wait}, thinking, *stamp]:
            _at(turns, stamp)
            items = tuple(Addressed(b, ACTION_ADAPTER.validate_python(a)) for b, a in actions)
            turns.decide_seller(MarketDecision(items, wait=wait), thinking)
        case ["buyer", str(buyer), {"actions": actions, "wait": wait}, thinking, *stamp]:
            _at(turns, stamp)
            moves = tuple(ACTION_ADAPTER.validate_python(a) for a in actions)
            turns.decide_buyer(buyer, Decision(actions=moves, wait=wait), thinking)
        case ["absent", str(seat)]:
            turns.set_absent(seat)
        case ["back", str(seat)]:
            turns.back(seat)
        case ["shown", str(seat), seen, bool(fresh)]:
            seat_calls = calls[seat]
            if isinstance(seat_calls, MarketSellerCalls):
                seat_calls.seen.update({str(b): int(n) for b, n in dict(seen).items()})
            else:
                seat_calls.seen = int(seen)
            seat_calls.fresh = fresh
        case ["advance", int() | float() as wall]:
            _at(turns, [wall])
        case _:
            raise ValueError(f"not a market journal entry: {op!r}")


def _at(turns: MarketTurns, stamp: Sequence[Any]) -> None:
    """Bring a wall-clock market to an input's wall time (a virtual one's inputs carry none)."""
    if not stamp:
        return
    if not isinstance(turns, WallTurns) or len(stamp) != 1:
        raise ValueError(f"not a market journal entry's time: {list(stamp)!r}")
    turns.at_wall(float(stamp[0]))


__all__ = ["JournaledTurns", "JournaledWallTurns", "MarketSeatCalls", "replay_op", "seen_by"]

"""The house agent's pace on the wall clock: wall seconds from a person's action to the house's
next action, over simulated wall-clock negotiations (no real seconds pass).

    python benchmarks/house_pace.py [--house boulware] [--negotiations 10] [--deadline 300]

Each negotiation is a served room (``dealroom.server.room.Room``, the wall clock, the house agent
in the seller seat) driven by an injected timer: the server's reaper ticks once a wall second,
as ``dealroom serve`` does (``RoomRegistry.reap``). The buyer is a scripted person: it opens at
10 s with half the list price, and after each of the house's actions (or ``--patience``
seconds without one, 20 s) thinks 8 s, then accepts the house's offer if it is no dearer than
its own next bid, else bids 4% of the list price higher (never past its value). A response time
is the wall time from one of the person's actions to the first tick that shows a house action
after it; an action the person made again before any answer counts as unanswered (its wait is
in the figures too). Each line also says how the person fared: deals (of negotiations with a
gain from trade), the wall seconds left when the deal was struck, and the person's share of the
gains (what a study pays for): a house agent that concedes in the last seconds (boulware on a
90 s deadline) leaves a person no deal to take.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass
from decimal import Decimal

import anyio

from dealroom._logging import configure_logging
from dealroom.agents import resolve
from dealroom.protocol import Accept, MakeOffer
from dealroom.protocol.generator import DEFAULT_SPEC, scenario_at
from dealroom.server.room import Room
from dealroom.server.room_settings import House, RoomSettings

THINK_S = 8.0


@dataclass
class Played:
    """What one negotiation measured."""

    times: list[float]
    """Response times, the opening offer's first."""
    unanswered: int
    left: float | None
    """Wall seconds left at the deal; None without one."""
    share: float | None
    """The person's share of the gains at the deal; None without one (or without gains)."""
    gains: bool


async def negotiate(house: str, index: int, deadline: float, patience: float) -> Played:
    """One negotiation against the house, on an injected wall clock."""
    spec = DEFAULT_SPEC.model_copy(update={"deadline": deadline})
    now = [0.0]
    room = Room(
        "pace",
        RoomSettings(
            scenarios=lambda i: scenario_at(0, index + i, "mid", spec),
            occupants={"seller": House(house, resolve(house))},
            clock="wall",
            seed=0,
        ),
        timer=lambda: now[0],
    )
    negotiation = room.current
    scenario = negotiation.scenario
    state = await negotiation.observe("buyer", deliver=True)  # the page opens: t = 0
    step = scenario.list_price * Decimal("0.04")
    bid = (scenario.list_price / 2).quantize(Decimal("0.01"))
    acted_at, next_at, answered = None, 10.0, True
    times: list[float] = []
    unanswered = 0
    seen = len(state.events)
    while negotiation.is_open and now[0] < deadline:
        now[0] += 1.0
        await negotiation.tick()  # the reaper
        if not negotiation.is_open:
            break
        events = negotiation.referee.events
        house_moved = any(e.by == "seller" for e in events[seen:])
        seen = len(events)
        if house_moved and acted_at is not None and not answered:
            times.append(now[0] - acted_at)
            answered = True
            next_at = now[0] + THINK_S
        if now[0] < next_at:
            continue
        if not answered:
            unanswered += 1
            times.append(now[0] - (acted_at or 0.0))
        theirs = negotiation.referee.observe("seller", now[0]).my_offer
        value = scenario.buyer_value
        if theirs is not None and theirs.price <= min(bid, value):
            await negotiation.act("buyer", Accept(offer_id=theirs.offer_id))
        else:
            await negotiation.act("buyer", MakeOffer(price=min(bid, value)))
            bid += step
        seen = len(negotiation.referee.events)
        acted_at, answered, next_at = now[0], False, now[0] + patience
    outcome = negotiation.referee.outcome
    deal = outcome is not None and outcome.status == "deal"
    left = deadline - outcome.time if outcome is not None and deal else None
    share = outcome.buyer_share if outcome is not None else None
    return Played(times, unanswered, left, share, scenario.gains > 0)


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--house", default="boulware")
    parser.add_argument("--negotiations", type=int, default=10)
    parser.add_argument("--deadline", type=float, default=300.0)
    parser.add_argument("--patience", type=float, default=20.0)
    args = parser.parse_args()
    configure_logging()
    played = [
        await negotiate(args.house, index, args.deadline, args.patience)
        for index in range(args.negotiations)
    ]
    times = sorted(t for p in played for t in p.times)
    openings = [p.times[0] for p in played if p.times]
    unanswered = sum(p.unanswered for p in played)
    p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
    print(
        f"{args.house}, wall clock, deadline {args.deadline:g} s, {args.negotiations} "
        f"negotiations: {len(times)} person actions, {unanswered} unanswered for "
        f"{args.patience:g} s; response s: median {statistics.median(times):.1f}, "
        f"mean {statistics.fmean(times):.1f}, p90 {p90:.1f}, max {times[-1]:.1f}; to the "
        f"opening offer: median {statistics.median(openings):.1f}, max {max(openings):.1f}"
    )
    print(outcome_line(played))


def outcome_line(played: list[Played]) -> str:
    """Deals, time left at them and the person's share, as one line."""
    left = [p.left for p in played if p.left is not None]
    shares = [p.share for p in played if p.share is not None]
    with_gains = sum(p.gains for p in played)
    line = f"the person: {len(left)} deals of {with_gains} with gains"
    if left:
        line += (
            f"; s left at the deal: median {statistics.median(left):.0f}, min {min(left):.0f}; "
            f"person's share: median {statistics.median(shares):.2f}"
        )
    return line


if __name__ == "__main__":
    anyio.run(main)

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
in the figures too).
"""

from __future__ import annotations

import argparse
import statistics
from decimal import Decimal

import anyio

from dealroom.agents import resolve
from dealroom.protocol import Accept, MakeOffer
from dealroom.protocol.generator import DEFAULT_SPEC, scenario_at
from dealroom.server.room import Room
from dealroom.server.room_settings import House, RoomSettings

THINK_S = 8.0


async def negotiate(
    house: str, index: int, deadline: float, patience: float
) -> tuple[list[float], int]:
    """One negotiation: the response times (the opening offer's first) and how many actions
    went unanswered."""
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
    return times, unanswered


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--house", default="boulware")
    parser.add_argument("--negotiations", type=int, default=10)
    parser.add_argument("--deadline", type=float, default=300.0)
    parser.add_argument("--patience", type=float, default=20.0)
    args = parser.parse_args()
    times: list[float] = []
    openings: list[float] = []
    unanswered = 0
    for index in range(args.negotiations):
        got, missed = await negotiate(args.house, index, args.deadline, args.patience)
        times += got
        openings += got[:1]
        unanswered += missed
    times.sort()
    p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
    print(
        f"{args.house}, wall clock, deadline {args.deadline:g} s, {args.negotiations} "
        f"negotiations: {len(times)} person actions, {unanswered} unanswered for "
        f"{args.patience:g} s; response s: median {statistics.median(times):.1f}, "
        f"mean {statistics.fmean(times):.1f}, p90 {p90:.1f}, max {times[-1]:.1f}; to the "
        f"opening offer: median {statistics.median(openings):.1f}, max {max(openings):.1f}"
    )


if __name__ == "__main__":
    anyio.run(main)

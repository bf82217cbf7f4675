"""A house agent on the wall clock answers in people's time (issue 26): within a few wall seconds
of the other side's move, with its wait ended by that move, on an injected timer (no real
seconds pass). The virtual clock is untouched (the golden records pin it)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from mcp_support import acts, scenario, scripted

from benchmark_support import load_benchmark
from dealroom.agents import resolve
from dealroom.protocol import Decision, MakeOffer, Reject, SendMessage
from dealroom.server.room import Room
from dealroom.server.room_settings import House, RoomSettings

OPEN_AT = 10.0


def wall_room(house: House, now: list[float], deadline: float = 300.0) -> Room:
    return Room(
        "room-test",
        RoomSettings(
            scenarios=lambda i: scenario(0, index=i, deadline=deadline),
            occupants={"seller": house},
            clock="wall",
            seed=0,
        ),
        timer=lambda: now[0],
    )


async def opening_then_ticks(room: Room, now: list[float], until: float) -> None:
    """The buyer's page opens at 0 and offers half the list price at 10 s; the reaper ticks
    every half second until ``until``."""
    negotiation = room.current
    await negotiation.observe("buyer", deliver=True)
    while now[0] < until:
        now[0] += 0.5
        await negotiation.tick()
        if now[0] == OPEN_AT:
            price = (negotiation.scenario.list_price / 2).quantize(Decimal("0.01"))
            await negotiation.act("buyer", MakeOffer(price=price))


def seller_events_after(room: Room, t: float) -> list[tuple[float, str]]:
    return [(e.t, e.type) for e in room.current.referee.events if e.by == "seller" and e.t > t]


@pytest.mark.anyio
async def test_a_boulware_house_answers_the_persons_opening_offer_within_a_few_seconds() -> None:
    # Boulware holds its opening price for about a third of a 300 s deadline (its curve moves
    # less than its least move): it used to sit silent for 83 to 94 s.
    now = [0.0]
    room = wall_room(House("boulware", resolve("boulware")), now)
    await opening_then_ticks(room, now, until=OPEN_AT + 5)
    answers = seller_events_after(room, OPEN_AT)
    assert answers and answers[0][1] == "offer_rejected"
    assert answers[0][0] - OPEN_AT <= 3.0
    # It still stands by its own opening offer, which the person can accept.
    assert room.current.referee.live_offers()[0].by == "seller"


@pytest.mark.anyio
async def test_a_house_seat_sleeping_until_news_is_woken_by_the_persons_offer() -> None:
    # The scripted seller opens, then sleeps with no timer: only the buyer's offer wakes it,
    # and its counter takes effect a thinking time later, not after the virtual offer cost.
    now = [0.0]
    counter = MakeOffer(price=Decimal(9000))
    house = scripted(
        Decision(actions=(MakeOffer(price=Decimal(9999)),), wait=None),
        Decision(actions=(counter,), wait=None),
    )
    room = wall_room(house, now)
    await opening_then_ticks(room, now, until=OPEN_AT + 5)
    made = [(e.t, e.price) for e in room.current.referee.events if e.type == "offer_made"]
    opening, buyer, answer = made
    assert opening[0] <= 2.0 and buyer[0] == OPEN_AT
    assert answer[1] == Decimal(9000) and 0 < answer[0] - OPEN_AT <= 2.0


@pytest.mark.anyio
async def test_an_offer_the_agent_answered_itself_is_never_answered_again() -> None:
    # The seller answers the offer with a message, then holds with a timer: the offer stays
    # live, and later wakes that leave it alone reject nothing.
    now = [0.0]
    house = scripted(
        Decision(actions=(MakeOffer(price=Decimal(9999)),), wait=None),
        Decision(actions=(SendMessage(text="Too low."),), wait=2.0),
        *(Decision(wait=2.0) for _ in range(10)),
    )
    room = wall_room(house, now)
    await opening_then_ticks(room, now, until=OPEN_AT + 20)
    events = room.current.referee.events
    assert [e.type for e in events if e.by == "seller"] == ["offer_made", "message_sent"]
    assert {o.by for o in room.current.referee.live_offers()} == {"buyer", "seller"}


@pytest.mark.anyio
async def test_a_stale_answer_is_dropped_without_an_invalid_action() -> None:
    # The person replaces the offer before the house's answer takes effect: the answer to
    # the old offer is dropped (never refused, never counted), and the new one is answered.
    now = [0.0]
    room = wall_room(acts(MakeOffer(price=Decimal(9999)), wait=None), now)
    negotiation = room.current
    await negotiation.observe("buyer", deliver=True)
    now[0] = OPEN_AT
    await negotiation.act("buyer", MakeOffer(price=Decimal(5000)))
    now[0] = OPEN_AT + 0.5
    await negotiation.act("buyer", MakeOffer(price=Decimal(5100)))
    for _ in range(10):
        now[0] += 0.5
        await negotiation.tick()
    rejections = [e for e in negotiation.referee.events if e.type == "offer_rejected"]
    assert [r.by for r in rejections] == ["seller"]
    assert negotiation.referee.invalid_count("seller") == 0
    assert all(o.by == "seller" for o in negotiation.referee.live_offers())
    assert not any(isinstance(a, Reject) for a in negotiation.sched.house("seller").pending)


@pytest.mark.anyio
async def test_paced_leaves_a_person_time_to_take_its_deals_where_boulware_leaves_none() -> None:
    """benchmarks/house_pace.py's person (thinks 8 s, bids up 4% of the list price) against a
    house seller on a 90 s deadline: boulware's acceptable prices come in the last seconds, so
    no deal; paced ends its curve at 0.7 of the deadline and deals with time left."""
    pace = load_benchmark("house_pace")
    boulware = [await pace.negotiate("boulware", i, 90.0, 20.0) for i in range(8)]
    paced = [await pace.negotiate("paced", i, 90.0, 20.0) for i in range(8)]
    assert sum(p.gains for p in paced) >= 7
    assert all(p.left is None for p in boulware)
    left = [p.left for p in paced if p.left is not None]
    assert len(left) >= 4 and min(left) >= 9

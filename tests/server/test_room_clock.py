"""The room's clocks: house seats as in VirtualRoom, conservative sync, idle seats, cancels."""

from __future__ import annotations

import contextlib
import random
from decimal import Decimal
from pathlib import Path

import anyio
import pytest
from mcp_support import acts, house_room, scenario, scripted

from dealroom.agents import entries, resolve
from dealroom.engine.match import play, seat_rng
from dealroom.engine.schedule import Scheduler
from dealroom.engine.virtual import VirtualRoom
from dealroom.protocol import (
    ROLES,
    Accept,
    ActionCosts,
    Agent,
    MakeOffer,
    Referee,
    Role,
    Rules,
    RuleViolation,
    SendMessage,
    ThinkingCosts,
    WalkAway,
    seat_view,
)
from dealroom.protocol.generator import generate
from dealroom.server.negotiation import RoomLimits
from dealroom.server.room import Room
from dealroom.server.room_settings import House, RoomSettings
from dealroom.store.results import ResultsStore
from dealroom.store.writer import ResultWriter
from store_faults import Disk, FailingStore

FAST = RoomLimits(idle_s=0.2, abandon_s=0.3)


def two_seat_room(seed: int = 1, *, limits: RoomLimits = FAST) -> Room:
    return Room("pair", RoomSettings(scenarios=lambda i: scenario(seed, index=i), limits=limits))


def test_agents_in_place_driven_from_outside_or_mixed_play_the_same_negotiation() -> None:
    # One schedule runs every way of playing: agents called in place (a match, a room's house
    # seats), seats driven one wake at a time (training, tests), or one of each.
    names = [entry.name for entry in entries()]
    for sc in generate(1, seed=11):
        for buyer in names:
            for seller in names:
                record = play(sc, resolve(buyer), resolve(seller), seed=2)
                for driven in (("buyer", "seller"), ("buyer",), ("seller",)):
                    agents: dict[Role, Agent] = {
                        role: resolve(spec)(seat_view(sc, role), seat_rng(2, sc.id, role))
                        for role, spec in zip(ROLES, (buyer, seller), strict=True)
                    }
                    room = VirtualRoom(
                        sc, agents={r: a for r, a in agents.items() if r not in driven}
                    )
                    while (wake := room.next_wake()) is not None:
                        assert wake.role in driven
                        room.decide(wake.role, agents[wake.role].act(wake.observation))
                    assert room.referee.events == record.events, (sc.id, buyer, seller, driven)
                referee = Referee(sc)
                agents: dict[Role, Agent] = {
                    role: resolve(spec)(seat_view(sc, role), seat_rng(2, sc.id, role))
                    for role, spec in zip(ROLES, (buyer, seller), strict=True)
                }
                Scheduler(referee, agents).advance()  # a room's house seats
                assert referee.events == record.events, (sc.id, buyer, seller)


@pytest.mark.anyio
async def test_a_remote_seat_pays_thinking_once_per_wake_and_each_actions_cost() -> None:
    room = house_room(opponent=scripted())
    negotiation = room.current
    first = await negotiation.act("buyer", SendMessage(text="Hi"))
    second = await negotiation.act("buyer", MakeOffer(price=Decimal(500)))
    waited = await negotiation.wait("buyer", 10)
    third = await negotiation.act("buyer", MakeOffer(price=Decimal(510)))
    assert [first.events[0].t, second.events[0].t] == [4.0, 9.0]
    assert waited.woke == "timeout" and waited.now == 19.0
    assert third.events[-1].t == 25.0  # 19 + 1 thinking + 5


@pytest.mark.anyio
async def test_a_held_action_waits_until_the_other_remote_seat_cannot_act_earlier() -> None:
    room = two_seat_room(limits=RoomLimits(idle_s=30))
    negotiation = room.current
    order: list[str] = []

    async def seller() -> None:
        result = await negotiation.act("seller", MakeOffer(price=Decimal(2000)))  # due at 6
        order.append(f"seller@{result.events[-1].t}")

    async with anyio.create_task_group() as group:
        group.start_soon(seller)
        await anyio.sleep(0.05)
        assert order == [], "held: the buyer (clock 0) could still act before 6"
        result = await negotiation.act("buyer", SendMessage(text="Hello"))  # due at 4
        order.append(f"buyer@{result.events[-1].t}")
        with anyio.fail_after(5):
            await negotiation.wait("buyer", 20)
    assert order == ["buyer@4.0", "seller@6.0"]


async def _play_pair(room: Room, delays: dict[Role, float], rng: random.Random) -> list[str]:
    """Two scripted remote seats haggling, each pausing in real time between calls."""
    negotiation = room.current
    value = {r: negotiation.scenario.private_value(r) for r in ("buyer", "seller")}
    seen: dict[Role, list[str]] = {}

    async def seat(role: Role) -> None:
        price = value[role] * Decimal("0.7" if role == "buyer" else "1.3")
        step = Decimal("1.04" if role == "buyer" else "0.96")
        while negotiation.is_open:
            await anyio.sleep(delays[role] * rng.random())
            result = await negotiation.act(role, MakeOffer(price=price.quantize(Decimal("0.01"))))
            assert all(e.t <= result.now for e in result.events), "nothing from the future"
            if not result.ok or result.outcome is not None:
                return
            update = await negotiation.wait(role, 15)
            while update.woke == "pending":
                update = await negotiation.wait(role, 15)
            assert all(e.t <= update.now for e in update.events), "nothing from the future"
            seen.setdefault(role, []).append(update.model_dump_json())
            theirs = next((o for o in update.live_offers if o.by != role), None)
            good = theirs is not None and (
                theirs.price <= price if role == "buyer" else theirs.price >= price
            )
            if theirs is not None and good and negotiation.is_open:
                with contextlib.suppress(RuleViolation):
                    await negotiation.act(role, Accept(offer_id=theirs.offer_id))
                return
            price *= step

    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            group.start_soon(seat, "buyer")
            group.start_soon(seat, "seller")
    events = [e.model_dump_json() for e in negotiation.referee.events]
    return events + seen["buyer"] + seen["seller"]


@pytest.mark.anyio
async def test_two_remote_seats_get_the_same_negotiation_whatever_their_real_speed() -> None:
    for seed in [s for s in range(30) if scenario(s).gains > 0][:3]:
        logs = []
        for buyer, seller in [(0.0, 0.0), (0.01, 0.0), (0.0, 0.015)]:
            delays: dict[Role, float] = {"buyer": buyer, "seller": seller}
            room = two_seat_room(seed, limits=RoomLimits(idle_s=30))
            logs.append(await _play_pair(room, delays, random.Random(seed)))
        assert logs[0] == logs[1] == logs[2], "the log, and what each seat saw, agree"
        assert any('"negotiation_ended"' in line for line in logs[0])


@pytest.mark.anyio
async def test_a_silent_seat_counts_as_waiting_after_the_idle_limit_and_the_deadline_ends_it(
    tmp_path: Path,
) -> None:
    with ResultsStore(tmp_path / "r.db") as store:
        room = Room(
            "pair",
            RoomSettings(scenarios=lambda i: scenario(1, index=i, deadline=30), limits=FAST),
            writer=ResultWriter(store),
        )
        negotiation = room.current
        with anyio.fail_after(5):
            result = await negotiation.act("buyer", MakeOffer(price=Decimal(100)))
            assert result.ok and result.events[-1].t == 6.0
            update = await negotiation.wait("buyer", 60)
        assert update.woke == "ended" and update.outcome is not None
        assert update.outcome.end_reason == "deadline"
        await room.records.save()
        assert "pair/1" in store


@pytest.mark.anyio
async def test_thinking_charged_to_a_seat_releases_what_it_held_and_replaces_its_wake_cost() -> (
    None
):
    room = two_seat_room(limits=RoomLimits(idle_s=30))
    negotiation = room.current
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(negotiation.act, "seller", MakeOffer(price=Decimal(2000)))  # at 6
            await anyio.sleep(0.05)
            assert negotiation.referee.event_count == 0, "held by the buyer (clock 0)"
            negotiation.think("buyer", 10.0)  # the buyer's clock passes 6: the offer runs
    assert [e.t for e in negotiation.referee.events] == [6.0]
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(negotiation.wait, "seller", 30.0)
            result = await negotiation.act("buyer", SendMessage(text="Hello"))
    assert result.events[-1].t == 13.0  # 10 thought + 3, no per-wake cost on top
    negotiation.think("buyer", -1.0)
    assert negotiation.sched.remote("buyer").ready_at == 13.0
    with anyio.fail_after(5):
        await negotiation.act("buyer", WalkAway())
    negotiation.think("seller", 5.0)  # ended: nothing changes
    assert negotiation.sched.remote("seller").ready_at == 13.0


@pytest.mark.anyio
async def test_wait_says_pending_while_the_other_remote_seat_is_still_deciding() -> None:
    room = two_seat_room(limits=RoomLimits(idle_s=30, max_wait_s=0.1))
    negotiation = room.current
    await negotiation.observe("seller", deliver=True)  # the seller is here, and thinking
    with anyio.fail_after(5):
        update = await negotiation.wait("buyer", 20)
    assert update.woke == "pending" and update.events == ()
    # The buyer is still asleep on the schedule: the seller's offer wakes it.
    await negotiation.act("seller", MakeOffer(price=Decimal(3000)))
    with anyio.fail_after(5):
        update = await negotiation.wait("buyer", 5)
    assert update.woke == "news" and update.events[-1].type == "offer_made"


@pytest.mark.anyio
async def test_a_cancelled_wait_changes_nothing_and_the_next_call_gets_the_news() -> None:
    room = two_seat_room()
    negotiation = room.current
    await negotiation.observe("seller", deliver=True)
    with anyio.move_on_after(0.1):
        await negotiation.wait("buyer", 20)  # cancelled, as by a client-side timeout
    before = negotiation.referee.events
    assert before == ()
    await negotiation.act("seller", MakeOffer(price=Decimal(3000)))
    with anyio.fail_after(5):
        update = await negotiation.wait("buyer", 20)
    assert update.woke == "news" and [e.type for e in update.events] == ["offer_made"]
    result = await negotiation.act("buyer", Accept(offer_id="o1"))
    assert result.outcome is not None and result.outcome.status == "deal"


@pytest.mark.anyio
async def test_a_cancelled_held_action_is_withdrawn_and_never_happens() -> None:
    room = two_seat_room(limits=RoomLimits(idle_s=0.6))
    negotiation = room.current
    await negotiation.observe("buyer", deliver=True)
    with anyio.move_on_after(0.05):
        await negotiation.act("seller", MakeOffer(price=Decimal(3000)))  # held by the buyer
    assert negotiation.sched.remote("seller").state == "thinking"
    result = await negotiation.act("buyer", WalkAway())
    assert [e.type for e in result.events] == ["walked_away", "negotiation_ended"]
    assert all(e.type != "offer_made" for e in negotiation.referee.events)


@pytest.mark.anyio
async def test_a_wall_clock_negotiation_ends_at_its_deadline_and_is_recorded(
    tmp_path: Path,
) -> None:
    with ResultsStore(tmp_path / "r.db") as store:
        room = house_room(opponent=scripted(), clock="wall", deadline=0.3, store=store)
        negotiation = room.current
        state = await negotiation.observe("buyer", deliver=True)
        assert state.now < 0.3
        with anyio.fail_after(5):
            update = await negotiation.wait("buyer", 5)
        assert update.woke == "ended" and update.outcome is not None
        assert update.outcome.end_reason == "deadline" and update.now == 0.3
        await room.records.save()
        assert "room-test/1" in store


@pytest.mark.anyio
async def test_a_wall_clock_house_agent_acts_in_real_time() -> None:
    # Its thinking passes in wall seconds; its action costs none (people's time).
    rules = Rules(thinking=ThinkingCosts(per_wake=0.2), costs=ActionCosts(make_offer=30.0))
    house = acts(MakeOffer(price=Decimal(999)))
    room = house_room(opponent=house, clock="wall", deadline=60, rules=rules)
    negotiation = room.current
    await negotiation.observe("buyer", deliver=True)
    with anyio.fail_after(5):
        update = await negotiation.wait("buyer", 5)
    assert update.woke == "news"
    assert 0.2 <= update.events[0].t < 1.0
    result = await negotiation.act("buyer", Accept(offer_id="o1"))
    assert result.outcome is not None and result.outcome.price == Decimal("999.00")


@pytest.mark.anyio
async def test_an_abandoned_negotiation_is_run_to_its_end_by_the_reaper(tmp_path: Path) -> None:
    now = [0.0]
    with ResultsStore(tmp_path / "r.db") as store:
        room = Room(
            "room-test",
            RoomSettings(
                scenarios=lambda i: scenario(0, index=i),
                occupants={"seller": House("boulware", resolve("boulware"))},
                limits=RoomLimits(abandon_s=600),
            ),
            writer=ResultWriter(store),
            timer=lambda: now[0],
        )
        negotiation = room.current
        await negotiation.act("buyer", MakeOffer(price=Decimal(100)))
        now[0] = 599.0
        await negotiation.tick()
        assert negotiation.is_open, "not abandoned yet"
        now[0] = 601.0
        await negotiation.tick()
        assert not negotiation.is_open
        assert negotiation.referee.outcome is not None
        assert negotiation.referee.outcome.end_reason in ("deadline", "accepted")
        await room.records.save()
        assert "room-test/1" in store


@pytest.mark.anyio
async def test_a_finished_negotiation_is_written_once_however_many_calls_see_its_end(
    tmp_path: Path,
) -> None:
    store = FailingStore(tmp_path / "r.db", Disk())
    room = house_room(opponent=scripted(), store=store)
    negotiation = room.current
    await negotiation.act("buyer", WalkAway())
    await negotiation.tick()
    await negotiation.wait("buyer", 5)
    await negotiation.observe("buyer", deliver=True)
    with pytest.raises(RuleViolation):
        await negotiation.act("buyer", WalkAway())
    for _ in range(3):
        await room.records.save()
    assert (store.attempts, dict(store.inserts)) == (1, {"room-test/1": 1})
    assert room.series.finished == 1 and len(room.seats["buyer"].results()) == 1

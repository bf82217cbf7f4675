"""The virtual clock: who acts when, what each action costs, and what wakes a seat.

Scripted seats replay fixed decisions, so every time stamp below is worked out by hand from the
costs in ``Rules`` (thinking 1 s per wake; offer 5, accept 1, reject 2, message 3, walk away 1).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pytest

from dealroom.agents import entries, resolve
from dealroom.engine import VirtualRoom, Wake
from dealroom.engine.match import play
from dealroom.engine.schedule import Scheduler
from dealroom.protocol import (
    ROLES,
    Accept,
    ActionCosts,
    Agent,
    AgentFactory,
    Decision,
    ErrorCode,
    Item,
    MakeOffer,
    NegotiationEnded,
    Observation,
    OfferMade,
    Referee,
    Role,
    Rules,
    Scenario,
    SeatView,
    SendMessage,
    ThinkingCosts,
    other,
    seat_view,
)
from dealroom.protocol.agent import DecisionError
from dealroom.protocol.generator import generate

D = Decimal
MAX_WAKES = 1_000


def make_scenario(deadline: float = 120.0) -> Scenario:
    return Scenario(
        id="v1",
        item=Item(name="Bike", category="sports", description="A bike."),
        list_price=D("1000.00"),
        tier="mid",
        currency="USD",
        deadline=deadline,
        buyer_value=D("950.00"),
        seller_cost=D("700.00"),
    )


def run(
    room: VirtualRoom,
    *,
    buyer: Sequence[Decision] = (),
    seller: Sequence[Decision] = (),
) -> list[Wake]:
    """Play scripted decisions in order; once a script runs out the seat sleeps for good."""
    scripts: dict[Role, list[Decision]] = {"buyer": list(buyer), "seller": list(seller)}
    wakes: list[Wake] = []
    while (wake := room.next_wake()) is not None:
        assert len(wakes) < MAX_WAKES, "the room never ended"
        wakes.append(wake)
        script = scripts[wake.role]
        room.decide(wake.role, script.pop(0) if script else Decision())
    return wakes


def times(wakes: list[Wake], role: Role | None = None) -> list[tuple[Role, float]]:
    return [(w.role, w.observation.now) for w in wakes if role in (None, w.role)]


def event_times(room: VirtualRoom) -> list[tuple[str, float]]:
    return [(e.type, e.t) for e in room.referee.events]


def offer(price: int, wait: float | None = None) -> Decision:
    return Decision(actions=(MakeOffer(price=D(price)),), wait=wait)


# -- order -------------------------------------------------------------------------------


def test_both_seats_wake_at_the_start_and_the_first_mover_goes_first() -> None:
    wakes = run(VirtualRoom(make_scenario()))
    assert times(wakes) == [("seller", 0.0), ("buyer", 0.0)]
    assert [w.observation.role for w in wakes] == ["seller", "buyer"]


def test_the_rules_choose_the_first_mover() -> None:
    wakes = run(VirtualRoom(make_scenario(), Rules(first_mover="buyer")))
    assert times(wakes) == [("buyer", 0.0), ("seller", 0.0)]


def test_the_seat_with_the_earliest_due_time_acts_first() -> None:
    room = VirtualRoom(make_scenario(deadline=10.0))
    wakes = run(room, seller=[Decision(wait=3)], buyer=[Decision(wait=2)])
    # Buyer: 0 + 1 thinking + 2 = 3; seller: 0 + 1 + 3 = 4.
    assert times(wakes) == [("seller", 0), ("buyer", 0), ("buyer", 3), ("seller", 4)]


@pytest.mark.parametrize("first_mover", ROLES)
def test_a_tie_later_on_goes_to_the_first_mover(first_mover: Role) -> None:
    room = VirtualRoom(make_scenario(deadline=10.0), Rules(first_mover=first_mover))
    wakes = run(room, seller=[Decision(wait=4)], buyer=[Decision(wait=4)])
    later = [(first_mover, 5.0), (other(first_mover), 5.0)]
    assert times(wakes)[2:] == later


# -- costs -------------------------------------------------------------------------------


def test_an_action_takes_effect_after_thinking_plus_its_cost() -> None:
    room = VirtualRoom(make_scenario())
    wakes = run(
        room, seller=[offer(900)], buyer=[Decision(), Decision(actions=(Accept(offer_id="o1"),))]
    )
    # Offer: 0 + 1 thinking + 5 = 6. The buyer, woken by it at 6, accepts at 6 + 1 + 1 = 8.
    assert event_times(room) == [
        ("offer_made", 6.0),
        ("offer_accepted", 8.0),
        ("negotiation_ended", 8.0),
    ]
    assert times(wakes) == [("seller", 0), ("buyer", 0), ("buyer", 6)]
    outcome = room.referee.outcome
    assert outcome is not None
    assert (outcome.status, outcome.price, outcome.time) == ("deal", D("900.00"), 8.0)


def test_a_batch_runs_back_to_back_each_action_after_the_last() -> None:
    room = VirtualRoom(make_scenario())
    batch = (SendMessage(text="hi"), MakeOffer(price=D(990)), SendMessage(text="well?"))
    run(room, seller=[Decision(actions=batch)])
    assert event_times(room)[:3] == [
        ("message_sent", 4.0),
        ("offer_made", 9.0),
        ("message_sent", 12.0),
    ]


def test_the_rules_set_action_and_thinking_costs() -> None:
    rules = Rules(costs=ActionCosts(make_offer=2.5), thinking=ThinkingCosts(per_wake=0.25))
    room = VirtualRoom(make_scenario(), rules)
    run(room, seller=[offer(900)])
    assert event_times(room)[0] == ("offer_made", 2.75)


def test_deciding_with_explicit_thinking_time_overrides_the_per_wake_cost() -> None:
    room = VirtualRoom(make_scenario())
    wake = room.next_wake()
    assert wake is not None and wake.role == "seller"
    room.decide("seller", offer(900), thinking=4.25)
    run(room)
    assert event_times(room)[0] == ("offer_made", 9.25)


def test_clock_times_are_rounded_to_milliseconds() -> None:
    room = VirtualRoom(make_scenario(deadline=1.0), Rules(thinking=ThinkingCosts(per_wake=0.1)))
    wakes = run(room, buyer=[Decision(wait=0.2)] * 10)
    assert [now for _, now in times(wakes, "buyer")] == [0.0, 0.3, 0.6, 0.9]


# -- what wakes a seat -------------------------------------------------------------------


def test_a_seat_sleeps_until_its_wait_timer() -> None:
    room = VirtualRoom(make_scenario(deadline=40.0))
    wakes = run(room, buyer=[Decision(wait=10)] * 10)
    assert times(wakes, "buyer") == [("buyer", t) for t in (0.0, 11.0, 22.0, 33.0)]
    assert times(wakes, "seller") == [("seller", 0.0)]


def test_the_other_sides_event_wakes_a_seat_before_its_timer() -> None:
    room = VirtualRoom(make_scenario(deadline=30.0))
    wakes = run(room, seller=[offer(900)], buyer=[Decision(wait=100)])
    assert times(wakes, "buyer") == [("buyer", 0.0), ("buyer", 6.0)]
    seen = wakes[-1].observation
    assert seen.their_offer is not None and seen.their_offer.price == D("900.00")


def test_a_seats_own_events_do_not_wake_it() -> None:
    room = VirtualRoom(make_scenario(deadline=60.0))
    wakes = run(room, seller=[Decision(actions=(SendMessage(text="a"), MakeOffer(price=D(900))))])
    assert times(wakes, "seller") == [("seller", 0.0)]
    assert [t for t, _ in event_times(room)] == ["message_sent", "offer_made", "negotiation_ended"]


def test_a_wait_shorter_than_the_batch_wakes_the_seat_when_its_batch_is_done() -> None:
    # The timer counts from the end of thinking (t = 1), but a batch is never interrupted.
    room = VirtualRoom(make_scenario(deadline=20.0))
    wakes = run(room, seller=[offer(900, wait=2), Decision()])
    assert times(wakes, "seller") == [("seller", 0.0), ("seller", 6.0)]


def test_news_during_a_batch_wakes_the_seat_only_after_the_batch() -> None:
    room = VirtualRoom(make_scenario(deadline=30.0))
    chatter = Decision(actions=(SendMessage(text="one"), SendMessage(text="two")))
    wakes = run(room, seller=[offer(900)], buyer=[chatter])
    # Buyer's messages at 4 and 7; the seller's offer lands at 6, between them.
    assert event_times(room)[:3] == [
        ("message_sent", 4.0),
        ("offer_made", 6.0),
        ("message_sent", 7.0),
    ]
    # The seller heard the buyer at 4 while busy: woken once its offer is out, at 6. At 7 both
    # are due (the buyer's batch is done, the seller has news and has thought): seller first.
    assert times(wakes) == [
        ("seller", 0),
        ("buyer", 0),
        ("seller", 6),
        ("seller", 7),
        ("buyer", 7),
    ]


def test_a_wake_shows_the_seat_its_own_view_at_that_moment() -> None:
    room = VirtualRoom(make_scenario())
    wakes = run(room, seller=[offer(900)])
    last = wakes[-1]
    assert (last.role, last.observation.role, last.observation.now) == ("buyer", "buyer", 6.0)
    assert last.observation.private_value == D("950.00")
    assert last.observation.time_left == 114.0


# -- refusals ----------------------------------------------------------------------------


def test_a_refused_action_is_reported_at_the_next_wake_and_drops_the_rest_of_the_batch() -> None:
    room = VirtualRoom(make_scenario(deadline=30.0))
    batch = Decision(actions=(Accept(offer_id="o9"), MakeOffer(price=D(900))))
    wakes = run(room, seller=[batch, Decision(wait=5)])
    seller = [w for w in wakes if w.role == "seller"]
    # Accept due at 0 + 1 + 1 = 2, refused; the seller is woken at once.
    assert [w.observation.now for w in seller] == [0.0, 2.0, 8.0]
    assert [[e.code for e in w.errors] for w in seller] == [[], [ErrorCode.OFFER_NOT_FOUND], []]
    assert not any(isinstance(e, OfferMade) for e in room.referee.events)
    assert room.referee.invalid_count("seller") == 1
    assert times(wakes, "buyer") == [("buyer", 0.0)]  # a refusal is no news for the other side


def test_refusals_of_several_wakes_are_each_reported_once() -> None:
    room = VirtualRoom(make_scenario(deadline=30.0))
    bad = Decision(actions=(SendMessage(text=" "),))
    wakes = run(room, buyer=[bad, bad, Decision()])
    buyer = [w for w in wakes if w.role == "buyer"]
    assert [len(w.errors) for w in buyer] == [0, 1, 1]
    assert buyer[1].errors[0].code == ErrorCode.MESSAGE_EMPTY


def test_forfeiting_ends_the_run() -> None:
    room = VirtualRoom(make_scenario(), Rules(max_invalid_actions=2))
    bad = Decision(actions=(MakeOffer(price=D(-1)),))
    wakes = run(room, buyer=[bad, bad, bad])
    assert len([w for w in wakes if w.role == "buyer"]) == 2
    outcome = room.referee.outcome
    assert outcome is not None
    assert (outcome.end_reason, outcome.ended_by) == ("forfeit", "buyer")


# -- the end -----------------------------------------------------------------------------


def test_both_seats_waiting_forever_ends_at_the_deadline() -> None:
    room = VirtualRoom(make_scenario(deadline=45.0))
    run(room)
    assert room.referee.events == (
        NegotiationEnded(seq=1, t=45.0, by=None, reason="deadline", price=None),
    )
    assert room.next_wake() is None


def test_an_action_due_at_the_deadline_is_not_applied() -> None:
    room = VirtualRoom(make_scenario(deadline=6.0))
    run(room, seller=[offer(900)])  # due at exactly 6
    assert event_times(room) == [("negotiation_ended", 6.0)]


def test_a_timer_due_after_the_deadline_is_not_kept() -> None:
    room = VirtualRoom(make_scenario(deadline=10.0))
    wakes = run(room, buyer=[Decision(wait=9)])
    assert times(wakes, "buyer") == [("buyer", 0.0)]
    assert event_times(room) == [("negotiation_ended", 10.0)]


def test_an_accepted_deal_ends_the_run() -> None:
    room = VirtualRoom(make_scenario())
    buyer = [Decision(), Decision(actions=(Accept(offer_id="o1"),), wait=1)]
    run(room, seller=[offer(900, wait=1)] + [Decision(wait=1)] * 20, buyer=buyer)
    assert not room.referee.is_open
    assert room.next_wake() is None


def test_next_wake_before_decide_raises() -> None:
    room = VirtualRoom(make_scenario())
    wake = room.next_wake()
    assert wake is not None
    with pytest.raises(RuntimeError, match="not decided"):
        room.next_wake()


def test_deciding_for_a_seat_that_is_not_awake_raises() -> None:
    room = VirtualRoom(make_scenario())
    with pytest.raises(RuntimeError, match="not awake"):
        room.decide("seller", Decision())
    wake = room.next_wake()
    assert wake is not None
    with pytest.raises(RuntimeError, match="not awake"):
        room.decide(other(wake.role), Decision())
    room.decide(wake.role, Decision())
    with pytest.raises(RuntimeError, match="not awake"):
        room.decide(wake.role, Decision())


# -- private information with the registered agents ----------------------------------------

# Fields whose numbers are public choices (prices a seat offered; a seat may offer exactly its
# own value) or the clock's; the other side's value in any other field would be a leak.
PUBLIC_NUMBERS = frozenset({"price", "t", "now", "time_left", "time", "seq"})


def _without_public_numbers(node: object) -> object:
    if isinstance(node, dict):
        return {k: _without_public_numbers(v) for k, v in node.items() if k not in PUBLIC_NUMBERS}
    if isinstance(node, list):
        return [_without_public_numbers(v) for v in node]
    return node


def _shows(text: str, amount: Decimal) -> bool:
    """True if ``amount`` appears in ``text`` as a number (not part of a longer one)."""
    forms = {str(amount), repr(float(amount))}
    if not any(form in text for form in forms):  # the common case, and fast
        return False
    return any(re.search(rf"(?<![\d.]){re.escape(f)}(?!\d)", text) for f in forms)


def _leaks(observation: Observation, secret: Decimal) -> bool:
    text = observation.model_dump_json()
    if not _shows(text, secret):
        return False
    return _shows(json.dumps(_without_public_numbers(json.loads(text))), secret)


class _Spy:
    def __init__(self, agent: Agent, seen: list[Observation]) -> None:
        self.agent, self.seen = agent, seen

    def act(self, observation: Observation, /) -> Decision:
        self.seen.append(observation)
        return self.agent.act(observation)


def _spying(factory: AgentFactory, views: list[SeatView], seen: list[Observation]) -> AgentFactory:
    def build(view: SeatView, rng: random.Random) -> Agent:
        views.append(view)
        return _Spy(factory(view, rng), seen)

    return build


def test_no_seat_ever_observes_the_other_sides_value() -> None:
    names = [entry.name for entry in entries()]
    pairs = [(b, s) for b in names for s in names]
    scenarios = generate(100, seed=17)
    checked = 0
    for number, scenario in enumerate(scenarios):
        buyer_name, seller_name = pairs[number % len(pairs)]
        views: list[SeatView] = []
        seen: dict[Role, list[Observation]] = {"buyer": [], "seller": []}
        play(
            scenario,
            _spying(resolve(buyer_name), views, seen["buyer"]),
            _spying(resolve(seller_name), views, seen["seller"]),
            seed=number,
        )
        for view in views:
            assert not _shows(view.model_dump_json(), scenario.private_value(other(view.role)))
        for role in ROLES:
            secret = scenario.private_value(other(role))
            assert secret != scenario.list_price  # else the check below would be moot
            assert seen[role], f"{role} was never woken"
            for observation in seen[role]:
                assert observation.role == role
                assert observation.private_value == scenario.private_value(role)
                assert not _leaks(observation, secret), (scenario.id, role, observation)
                checked += 1
    assert len(scenarios) == 300 and checked > 600


def test_run_refuses_a_seat_without_an_agent_and_assign_hands_it_one() -> None:
    scenario = make_scenario()
    room = VirtualRoom(
        scenario,
        agents={"buyer": resolve("linear")(seat_view(scenario, "buyer"), random.Random(0))},
    )
    with pytest.raises(RuntimeError, match="without an agent"):
        room.run()
    with pytest.raises(RuntimeError, match="awake"):
        room.assign("seller", resolve("boulware")(seat_view(scenario, "seller"), random.Random(0)))
    room.decide("seller", Decision())
    room.assign("seller", resolve("boulware")(seat_view(scenario, "seller"), random.Random(0)))
    room.run()
    assert room.referee.outcome is not None
    assert not room.referee.is_open


def test_next_wake_refuses_a_schedule_that_waits_for_a_remote_seat() -> None:
    scenario = make_scenario()
    schedule = Scheduler(Referee(scenario), {}, driven=("seller",))
    wake = schedule.next_wake()
    assert wake is not None and wake.role == "seller"
    schedule.decide("seller", offer(900))
    with pytest.raises(RuntimeError, match="remote seat"):
        schedule.next_wake()


# -- the passive check of an agent's decisions ---------------------------------------------


class _Returns:
    """An agent whose decisions are the given objects, in turn (then empty decisions)."""

    def __init__(self, *decisions: object) -> None:
        self.decisions = list(decisions)

    def act(self, observation: object) -> Any:
        del observation
        return self.decisions.pop(0) if self.decisions else Decision()


@pytest.mark.parametrize(
    ("returned", "said"),
    [
        (None, "the buyer's agent returned NoneType from act(), not a Decision"),
        ([offer(900)], "the buyer's agent returned list from act(), not a Decision"),
        (Decision(actions=("make_offer",)), "decided an action of type str"),  # type: ignore[arg-type]
    ],
)
def test_an_agent_that_returns_no_decision_gets_one_line_naming_its_seat(
    returned: object, said: str
) -> None:
    buyer = _Returns(returned)
    seller = _Returns()
    with pytest.raises(DecisionError, match=re.escape(said)) as info:
        play(make_scenario(), lambda view, rng: buyer, lambda view, rng: seller)
    assert "\n" not in str(info.value) and info.value.code == "bad_decision"


def test_a_later_decision_of_the_wrong_type_is_caught_too() -> None:
    buyer = _Returns(*[Decision(wait=1.0)] * 5, None)
    with pytest.raises(DecisionError, match="returned NoneType"):
        play(make_scenario(), lambda view, rng: buyer, lambda view, rng: _Returns())

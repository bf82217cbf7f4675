"""Fork rebuilds a seat's actions from the events they caused: every action type must round-trip.

``action_of_event`` reads the action back from its event. An action type whose events read back
as other actions (a "counter" emitting a rejection and an offer) would rebuild with other clock
costs and silently mistime a fork; this test fails for it instead, and for an action type that
has no example here.
"""

from decimal import Decimal
from typing import get_args

import pytest

from dealroom.engine.fork import action_of_event
from dealroom.protocol import (
    Accept,
    Action,
    ActionType,
    MakeOffer,
    Referee,
    Reject,
    SendMessage,
    WalkAway,
)
from dealroom.protocol.generator import scenario_at

EXAMPLES: dict[ActionType, Action] = {
    "make_offer": MakeOffer(price=Decimal("900.00"), message="fair"),
    "accept": Accept(offer_id="o1"),
    "reject": Reject(offer_id="o1", message="too high"),
    "send_message": SendMessage(text="hello"),
    "walk_away": WalkAway(message="bye"),
}
"""One valid action of each type for the buyer, after the seller's offer o1."""


def test_every_action_type_has_an_example() -> None:
    assert set(EXAMPLES) == set(get_args(ActionType))


@pytest.mark.parametrize("action_type", sorted(EXAMPLES))
def test_the_events_of_each_action_read_back_as_that_action(action_type: ActionType) -> None:
    referee = Referee(scenario_at(0, 0, "mid"))
    referee.apply("seller", MakeOffer(price=referee.scenario.list_price), 1.0)
    action = EXAMPLES[action_type]
    events = referee.apply("buyer", action, 2.0)
    rebuilt = [a for a in map(action_of_event, events) if a is not None]
    assert rebuilt == [action]

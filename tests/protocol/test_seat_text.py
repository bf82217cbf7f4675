"""The one model-facing text: an in-process view renders as the served results do."""

from decimal import Decimal

from dealroom.engine.calls import LocalSeat
from dealroom.protocol import DEFAULT_RULES, MakeOffer, seat_text
from dealroom.protocol.generator import scenario_at
from dealroom.testing import ScriptedAgent


def _seat() -> LocalSeat:
    house = ScriptedAgent.of(MakeOffer(price=Decimal("2500.00"), message="firm"), wait=5)
    return LocalSeat(scenario_at(0, 1, "mid"), "buyer", house, DEFAULT_RULES)


def test_an_observations_state_text_is_get_states_text() -> None:
    seat = _seat()
    seat.act(MakeOffer(price=Decimal("900.00")))
    state = seat.state()
    assert seat_text.observation_state_text(state.observation) == seat_text.state_text(state)


def test_a_view_is_a_results_body_from_the_given_event_on() -> None:
    seat = _seat()
    result = seat.act(MakeOffer(price=Decimal("900.00")))
    observation = seat.state().observation
    assert result.events
    since = len(observation.events) - len(result.events)
    body = seat_text.update_text(result, "buyer", observation.scenario.currency).split("\n")[1:]
    view = seat_text.view_text(observation, since).split("\n")
    assert view[: len(result.events)] == body[: len(result.events)]
    assert view[-1].startswith("next: ") and any(line.startswith("clock: ") for line in view)

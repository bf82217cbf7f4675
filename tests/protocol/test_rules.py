"""The rules as data: every action type has its own clock cost."""

from typing import get_args

import pytest

from dealroom.protocol import ActionCosts, ActionType


@pytest.mark.parametrize("action_type", get_args(ActionType))
def test_each_action_type_reads_its_own_cost_field(action_type: ActionType) -> None:
    costs = ActionCosts.model_validate({action_type: 7.25})
    assert costs.of(action_type) == 7.25
    others = [t for t in get_args(ActionType) if t != action_type]
    assert all(costs.of(t) == ActionCosts().of(t) for t in others)


def test_the_cost_fields_are_exactly_the_action_types() -> None:
    assert set(ActionCosts.model_fields) == set(get_args(ActionType))

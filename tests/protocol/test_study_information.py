"""A treatment's information condition: ``value_range`` tells a participant, in their briefing,
the range the scenario generator draws the other side's number from (true of every draw, and a
function of public facts and their own number only); ``own_value`` tells them no range."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from dealroom.protocol import ROLES, Role
from dealroom.protocol.generator import (
    DEFAULT_SPEC,
    ScenarioSpec,
    scenario_at,
    value_bounds,
    value_range,
)
from dealroom.protocol.people_text import person_briefing, value_range_rule
from dealroom.protocol.rules import Rules
from dealroom.protocol.scenario import TIERS, seat_view
from dealroom.protocol.secret import Secret
from dealroom.protocol.study import StudyRequest
from dealroom.protocol.study_design import Treatment
from dealroom.protocol.study_quiz import quiz_questions
from leaks import stated_range


def other(role: Role) -> Role:
    return ROLES[1 - ROLES.index(role)]


@settings(max_examples=300, deadline=None)
@given(
    key=st.binary(min_size=16, max_size=32),
    index=st.integers(min_value=0, max_value=10**7),
    tier=st.sampled_from(TIERS),
    role=st.sampled_from(ROLES),
)
def test_the_stated_range_holds_the_other_sides_number_and_says_nothing_more(
    key: bytes, index: int, tier: str, role: Role
) -> None:
    """Across secrets: the range a ``value_range`` briefing states holds the other side's
    actual number; the ``own_value`` briefing states no range; and the briefing is the same
    whatever the other side's number (so nothing in it can tell it)."""
    scenario = scenario_at(Secret.from_hex(key.hex()), index, tier)  # type: ignore[arg-type]
    view = seat_view(scenario, role)
    rules = Rules()
    told = person_briefing(view, rules, "wall", "web", information=value_range_rule(view))
    low, high = stated_range(told)
    actual = scenario.private_value(other(role))
    assert low <= actual <= high
    plain = person_briefing(view, rules, "wall", "web")
    assert "drawn" not in plain and not re.search(r"between \$", plain)
    assert told.replace(value_range_rule(view) + "\n", "") == plain
    elsewhere = scenario.model_copy(
        update={
            "buyer_value" if role == "seller" else "seller_cost": (low + high) / 2,
        }
    )
    assert person_briefing(
        seat_view(elsewhere, role), rules, "wall", "web", information=value_range_rule(view)
    ) == told and value_range_rule(seat_view(elsewhere, role)) == value_range_rule(view)


@st.composite
def specs(draw: st.DrawFn) -> ScenarioSpec:
    zone = sorted(draw(st.floats(min_value=0.01, max_value=0.6)) for _ in range(2))
    mid = sorted(draw(st.floats(min_value=0.31, max_value=1.5)) for _ in range(2))
    share = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    try:
        return ScenarioSpec(
            zone_min=zone[0],
            zone_max=zone[1],
            midpoint_min=mid[0],
            midpoint_max=mid[1],
            no_zone_share=share,
        )
    except ValidationError:
        assume(False)
        raise


@settings(max_examples=200, deadline=None)
@given(
    spec=specs(),
    key=st.binary(min_size=16, max_size=16),
    index=st.integers(min_value=0, max_value=10**6),
    tier=st.sampled_from(TIERS),
)
def test_the_range_is_the_generators_own_under_any_spec(
    spec: ScenarioSpec, key: bytes, index: int, tier: str
) -> None:
    scenario = scenario_at(Secret.from_hex(key.hex()), index, tier, spec)  # type: ignore[arg-type]
    for role in ROLES:
        low, high = value_range(scenario.list_price, role, spec)
        assert low <= scenario.private_value(role) <= high


def test_the_default_ranges_are_the_specs_formula() -> None:
    """v = L (m + g/2), c = L (m - g/2), m in [0.70, 0.95], g in [0.05, 0.30] or negated with
    probability 0.1: either number lies in [m_min - g_max/2, m_max + g_max/2] = [55%, 110%]."""
    for role in ROLES:
        assert value_bounds(role) == pytest.approx((0.55, 1.10))
    always_a_zone = DEFAULT_SPEC.model_copy(update={"no_zone_share": 0.0})
    assert value_bounds("buyer", always_a_zone) == pytest.approx((0.725, 1.10))
    assert value_bounds("seller", always_a_zone) == pytest.approx((0.55, 0.925))
    view = seat_view(scenario_at(Secret.from_hex("ab" * 16), 0, "mid"), "buyer")
    text = value_range_rule(view)
    assert text.startswith("The seller's private cost was drawn at random for this negotiation")
    assert "it lies between 55% and 110% of the list price, that is between $" in text


def test_a_value_range_treatment_asks_about_it_in_the_quiz_and_own_value_does_not() -> None:
    request = StudyRequest.model_validate(
        {
            "id": "info",
            "participants": ["a"],
            "house": "boulware",
            "secret": "5f0c2a9e7d13b84f6a21c9e0d57b3a18",
            "design": {
                "quiz": {},
                "treatments": [{"name": "own"}, {"name": "range", "information": "value_range"}],
            },
        }
    )
    asked = "What are you told about the other side's private number in each negotiation?"
    ranged = {q.text: q for q in quiz_questions(request, "range")}
    assert asked in ranged and asked not in {q.text for q in quiz_questions(request, "own")}
    question = ranged[asked]
    assert question.choices[question.answer].startswith("The range it was drawn from")
    assert Treatment(name="t").information == "own_value"  # today's condition by default
    with pytest.raises(ValidationError):
        Treatment.model_validate({"name": "t", "information": "both_values"})

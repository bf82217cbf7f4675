"""The registry names every scripted agent, builds it from a spec, and refuses bad specs."""

import random

import pytest

from dealroom.agents import AgentSpecError, entries, parse_spec, resolve
from dealroom.protocol import seat_view
from dealroom.protocol.generator import scenario_at

SCRIPTED = (
    "boulware",
    "conceder",
    "hardliner",
    "linear",
    "micro",
    "nice_tft",
    "tit_for_tat",
    "zic",
)


def test_every_scripted_agent_is_listed_by_entries() -> None:
    names = [entry.name for entry in entries()]
    assert set(SCRIPTED) <= set(names)
    assert names == sorted(names)


@pytest.mark.parametrize("entry", entries(), ids=lambda entry: entry.name)
def test_every_registered_agent_builds_from_its_defaults_in_both_seats(entry) -> None:
    factory = resolve(entry.name)
    scenario = scenario_at(0, 0, "mid")
    for role in ("buyer", "seller"):
        agent = factory(seat_view(scenario, role), random.Random(0))
        assert callable(agent.act)
    assert entry.summary


@pytest.mark.parametrize(
    "spec",
    [
        "tit_for_tat:floor_e=0.5,margin=0",
        "micro:steps=8",
        "zic:seller_high=2,buyer_low=0.2",
        "nice_tft:floor_e=1,seller_open=1.5,buyer_open=0.4,step=5",
    ],
)
def test_a_spec_overrides_the_defaults(spec: str) -> None:
    entry, params = parse_spec(spec)
    for pair in spec.partition(":")[2].split(","):
        key, _, value = pair.partition("=")
        assert params[key] == float(value)
    assert resolve(spec) is not None
    assert entry.name == spec.partition(":")[0]


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("nosuch", "unknown agent"),
        ("micro:grid=0.1", "no parameter 'grid'"),
        ("boulware:e=0.2,e=0.3", "parameter 'e' of 'boulware' is given twice"),
        ("linear:step=5, step =5", "parameter 'step' of 'linear' is given twice"),
        ("zic:seller_high=lots", "must be a number"),
        ("tit_for_tat:floor_e=inf", "must be finite"),
        ("tit_for_tat:floor_e=-1", "'floor_e' must be at least 0"),
        ("nice_tft:floor_e=-0.5", "'floor_e' must be at least 0"),
        ("micro:steps=0", "'steps' must be a whole number"),
        ("micro:steps=2.5", "'steps' must be a whole number"),
        ("zic:seller_high=0", "'seller_high' must be a positive fraction"),
        ("zic:buyer_low=-1", "'buyer_low' must be a positive fraction"),
        ("nice_tft:seller_open=0", "'seller_open' must be a positive fraction"),
        ("micro:buyer_open=-0.1", "'buyer_open' must be a positive fraction"),
        ("tit_for_tat:step=0", "'step' must be positive"),
        ("nice_tft:margin=-1", "'margin' must be at least 0"),
        # Upper bounds: a spec that resolves always gives a playable agent (issue 13 item 17).
        ("hardliner:seller_open=1e308", "'seller_open' must be a positive fraction of the list "),
        ("boulware:buyer_open=11", "at most 10"),
        ("zic:seller_high=1e20", "at most 10"),
        ("linear:step=1e9", "'step' must be positive, at most 3600 seconds"),
        ("tit_for_tat:margin=1e9", "at most 3600"),
        ("conceder:e=1e300", "'e' must be at least 0 and at most 100"),
        ("nice_tft:floor_e=1e9", "'floor_e' must be at most 100"),
    ],
)
def test_a_bad_spec_raises_agent_spec_error_with_one_sentence(spec: str, fragment: str) -> None:
    with pytest.raises(AgentSpecError, match=fragment) as error:
        resolve(spec)
    assert "\n" not in str(error.value)

"""Seeded scenario generation and the JSONL scenario file format."""

from __future__ import annotations

import json
from decimal import Decimal

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from dealroom.protocol import TIERS, Item, Tier
from dealroom.protocol.catalog import CATALOG, TIER_RANGES
from dealroom.protocol.generator import (
    ScenarioFileError,
    ScenarioSpec,
    dumps_jsonl,
    generate,
    loads_jsonl,
    scenario_at,
)
from dealroom.protocol.secret import Secret, Seed

D = Decimal


def test_the_same_seed_gives_the_same_scenarios() -> None:
    first, second = generate(20, seed=11), generate(20, seed=11)
    assert first == second
    assert dumps_jsonl(first) == dumps_jsonl(second)


def test_another_seed_gives_other_scenarios() -> None:
    assert generate(5, seed=1) != generate(5, seed=2)


@pytest.mark.parametrize(
    ("seed", "index", "tier", "pinned"),
    [
        (0, 0, "low", ("low-f4595b317386ad5f", "Houseplant in ceramic pot", "44.00", "38.43",
                       "42.22")),
        (7, 3, "mid", ("mid-7dc785402b72f98e", "Sofa", "1250.00", "1204.43", "898.93")),
        (42, 11, "high", ("high-bf8a5380a9fc8450", "Sailing yacht", "215000.00", "187203.29",
                          "152826.58")),
        # Under a secret: HMAC-SHA256 keyed with it (these bytes stand for a real secret).
        (Secret(bytes(range(16))), 3, "mid", ("mid-039513337db7f2c5", "Electric scooter",
                                              "1150.00", "901.78", "973.85")),
    ],
)  # fmt: skip
def test_scenarios_are_the_same_on_every_machine(
    seed: Seed, index: int, tier: Tier, pinned: tuple[str, str, str, str, str]
) -> None:
    # Pinned values: a change of algorithm, float arithmetic or catalog order shows up here.
    # Public int seeds keep their values from before ids became opaque; only the ids changed.
    scenario = scenario_at(seed, index, tier)
    assert (
        scenario.id,
        scenario.item.name,
        str(scenario.list_price),
        str(scenario.buyer_value),
        str(scenario.seller_cost),
    ) == pinned


def test_generate_gives_n_scenarios_per_tier_in_tier_order() -> None:
    scenarios = generate(4, seed=5, tiers=["high", "low"])
    assert [s.id for s in scenarios] == [
        *(scenario_at(5, i, "high").id for i in range(4)),
        *(scenario_at(5, i, "low").id for i in range(4)),
    ]
    assert [s.tier for s in scenarios] == ["high"] * 4 + ["low"] * 4
    assert scenarios[0] == scenario_at(5, 0, "high")
    assert len({s.id for s in scenarios}) == 8


@pytest.mark.parametrize("tier", TIERS)
def test_list_prices_lie_in_their_tiers_range_and_items_come_from_its_catalog(tier: Tier) -> None:
    low, high = TIER_RANGES[tier]
    items = {item for item, _ in CATALOG[tier]}  # pyright: ignore[reportUnhashable]
    for scenario in generate(300, seed=9, tiers=[tier]):
        assert scenario.tier == tier
        assert low <= scenario.list_price <= high
        assert scenario.list_price == scenario.list_price.quantize(D(1))  # a round price
        assert scenario.item in items


def test_gains_and_midpoints_are_within_the_spec() -> None:
    spec = ScenarioSpec()
    for scenario in generate(400, seed=4):
        lp = scenario.list_price
        # Each value is rounded to cents: allow a cent on the difference, half on the midpoint.
        slack = float(D("0.01") / lp)
        gains = float(abs(scenario.gains) / lp)
        assert spec.zone_min - slack <= gains <= spec.zone_max + slack, scenario
        midpoint = float((scenario.buyer_value + scenario.seller_cost) / 2 / lp)
        assert spec.midpoint_min - slack <= midpoint <= spec.midpoint_max + slack, scenario
        assert scenario.buyer_value > 0 and scenario.seller_cost > 0
        assert scenario.buyer_value == scenario.buyer_value.quantize(D("0.01"))


def test_a_custom_spec_narrows_the_draws() -> None:
    spec = ScenarioSpec(
        zone_min=0.2, zone_max=0.2, midpoint_min=0.5, midpoint_max=0.5, deadline=30.0,
        currency="EUR",
    )  # fmt: skip
    for scenario in generate(50, seed=8, tiers=["high"], spec=spec):
        assert abs(abs(scenario.gains) / scenario.list_price - D("0.2")) < D("0.0001")
        assert (scenario.deadline, scenario.currency) == (30.0, "EUR")


@pytest.mark.parametrize("share", [0.1, 0.4])
def test_the_share_of_scenarios_without_a_zone_is_near_the_configured_value(share: float) -> None:
    scenarios = generate(4000, seed=21, tiers=["mid"], spec=ScenarioSpec(no_zone_share=share))
    observed = sum(s.gains < 0 for s in scenarios) / len(scenarios)
    assert abs(observed - share) < 0.03  # four standard errors at 4,000 independent draws


@pytest.mark.parametrize(("share", "expected"), [(0.0, 0), (1.0, 200)])
def test_a_share_of_zero_or_one_is_exact(share: float, expected: int) -> None:
    scenarios = generate(200, seed=3, tiers=["low"], spec=ScenarioSpec(no_zone_share=share))
    assert sum(s.gains < 0 for s in scenarios) == expected


# -- JSONL ------------------------------------------------------------------------------


def test_scenarios_round_trip_through_jsonl() -> None:
    scenarios = generate(10, seed=6)
    text = dumps_jsonl(scenarios)
    assert text.count("\n") == len(scenarios) and text.endswith("\n")
    assert list(loads_jsonl(text)) == scenarios


@settings(max_examples=50, deadline=None)
@given(name=st.text(max_size=30), description=st.text(max_size=60))
def test_any_item_text_round_trips_through_jsonl(name: str, description: str) -> None:
    # Includes U+2028, U+0085 and friends, which JSON leaves unescaped inside strings.
    scenario = scenario_at(0, 0, "low").model_copy(
        update={"item": Item(name=name, category="misc", description=description)}
    )
    assert list(loads_jsonl(dumps_jsonl([scenario, scenario]))) == [scenario, scenario]


def test_a_line_separator_inside_a_string_does_not_split_the_line() -> None:
    scenario = scenario_at(0, 0, "low").model_copy(
        update={"item": Item(name="a\u2028b\x85c\x1cd", category="misc", description="e")}
    )
    assert list(loads_jsonl(dumps_jsonl([scenario]))) == [scenario]


def test_blank_lines_and_windows_line_ends_are_accepted() -> None:
    scenarios = generate(2, seed=1, tiers=["mid"])
    text = "\r\n".join(s.model_dump_json() for s in scenarios)
    assert list(loads_jsonl("\n  \n" + text + "\r\n\r\n")) == scenarios


def _lines_with(bad: str, at: int) -> str:
    lines = [s.model_dump_json() for s in generate(3, seed=2, tiers=["low"])]
    lines[at - 1] = bad
    return "\n".join(lines) + "\n"


def _with(field: str, value: object) -> str:
    data = json.loads(scenario_at(2, 0, "low").model_dump_json())
    data[field] = value
    return json.dumps(data)


@pytest.mark.parametrize(
    ("bad", "mentions"),
    [
        ("{not json", "line 2: "),
        ("[]", "line 2: "),
        (_with("buyer_value", -3), "line 2: buyer_value"),
        (_with("tier", "luxury"), "line 2: tier"),
        (_with("surprise", 1), "line 2: surprise"),
        (_with("deadline", "soon"), "line 2: deadline"),
    ],
)
def test_a_bad_line_gives_scenario_file_error_naming_the_line(bad: str, mentions: str) -> None:
    with pytest.raises(ScenarioFileError) as caught:
        list(loads_jsonl(_lines_with(bad, at=2)))
    assert str(caught.value).startswith(mentions)
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_an_item_error_names_the_nested_field() -> None:
    data = json.loads(scenario_at(2, 0, "low").model_dump_json())
    del data["item"]["name"]
    with pytest.raises(ScenarioFileError, match=r"^line 1: item\.name: "):
        list(loads_jsonl(json.dumps(data)))

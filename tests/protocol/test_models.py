"""Wire models: money, actions, events, scenarios, rules, observations, the public API."""

from __future__ import annotations

import ast
import json
import math
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import Field, ValidationError

import dealroom.protocol as protocol
from dealroom.protocol import (
    ACTION_ADAPTER,
    EVENTS_ADAPTER,
    Accept,
    ActionCosts,
    Item,
    LiveOffer,
    MakeOffer,
    Observation,
    OfferMade,
    PerRole,
    Referee,
    Reject,
    Rules,
    Scenario,
    SendMessage,
    WalkAway,
    other,
    score,
    seat_outcome,
    seat_view,
    to_cents,
)
from dealroom.protocol._base import Model

D = Decimal
PROTOCOL_DIR = Path(protocol.__file__).parent


def make_scenario(**changes: object) -> Scenario:
    fields: dict[str, object] = {
        "id": "s1",
        "item": Item(name="Piano", category="music", description="An upright piano."),
        "list_price": D("4500.00"),
        "tier": "mid",
        "currency": "USD",
        "deadline": 120.0,
        "buyer_value": D("4321.07"),
        "seller_cost": D("3987.13"),
    }
    return Scenario.model_validate({**fields, **changes})


# -- money -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "cents"),
    [
        (D("1.005"), "1.01"),
        (D("1.0049"), "1.00"),
        (2.675, "2.68"),
        (0.1 + 0.2, "0.30"),
        ("19.999", "20.00"),
        (3, "3.00"),
        (D("-1.005"), "-1.01"),
        (D("1e-30"), "0.00"),
        (D("99999999999999999999999999.994"), "99999999999999999999999999.99"),
    ],
)
def test_amounts_are_quantised_to_cents_half_up(given: object, cents: str) -> None:
    assert str(to_cents(given)) == cents  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "given", [math.nan, math.inf, D("-Infinity"), D("sNaN"), "abc", "", D("1e30"), 1e300]
)
def test_to_cents_refuses_what_is_not_a_finite_amount_with_value_error(given: object) -> None:
    with pytest.raises(ValueError):
        to_cents(given)  # type: ignore[arg-type]


def test_money_is_a_json_number_and_a_decimal_in_python() -> None:
    offer = LiveOffer(offer_id="o1", by="seller", price=D("1234.50"), t=3.0)
    assert offer.model_dump()["price"] == D("1234.50")
    assert json.loads(offer.model_dump_json())["price"] == 1234.5
    assert '"price":1234.5' in offer.model_dump_json()


def test_money_json_prints_exactly_the_recorded_cents_up_to_a_trillion() -> None:
    for text in ("0.01", "0.07", "10.10", "999999.99", "123456789012.34", "9999999999999.99"):
        offer = LiveOffer(offer_id="o", by="buyer", price=D(text), t=0)
        written = offer.model_dump_json().split('"price":')[1].split(",")[0]
        assert D(written) == D(text)


# -- the base model ----------------------------------------------------------------------


def test_models_are_frozen() -> None:
    offer = MakeOffer(price=D("10"))
    with pytest.raises(ValidationError):
        offer.price = D("11")  # type: ignore[misc]


def test_models_refuse_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        Accept.model_validate({"offer_id": "o1", "price": 3})


def test_field_docstrings_become_schema_descriptions() -> None:
    schema = MakeOffer.model_json_schema()
    assert "rounded to cents" in schema["properties"]["price"]["description"]


class _Documented(Model):
    plain: int
    """The plain field."""
    explicit: int = Field(0, description="Said by Field.")
    """Not this one."""


class _Inherits(_Documented):
    more: str = ""
    """Added by the subclass."""


def test_inherited_field_docstrings_describe_and_an_explicit_description_wins() -> None:
    properties = _Inherits.model_json_schema()["properties"]
    assert properties["plain"]["description"] == "The plain field."
    assert properties["explicit"]["description"] == "Said by Field."
    assert properties["more"]["description"] == "Added by the subclass."


def test_other_is_the_seat_across_the_table() -> None:
    assert (other("buyer"), other("seller")) == ("seller", "buyer")


# -- actions and events ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "kind"),
    [
        ({"type": "make_offer", "price": 12.5, "message": "hi"}, MakeOffer),
        ({"type": "accept", "offer_id": "o2"}, Accept),
        ({"type": "reject", "offer_id": "o2"}, Reject),
        ({"type": "send_message", "text": "hello"}, SendMessage),
        ({"type": "walk_away"}, WalkAway),
    ],
)
def test_an_action_is_parsed_by_its_type(payload: dict[str, object], kind: type) -> None:
    action = ACTION_ADAPTER.validate_json(json.dumps(payload))
    assert isinstance(action, kind)
    assert ACTION_ADAPTER.validate_json(ACTION_ADAPTER.dump_json(action)) == action


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "haggle"},
        {"offer_id": "o1"},
        {"type": "accept"},
        {"type": "make_offer", "price": "cheap"},
        {"type": "send_message", "text": "x", "extra": 1},
    ],
)
def test_a_malformed_action_is_refused_by_the_parser(payload: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ACTION_ADAPTER.validate_python(payload)


@pytest.mark.parametrize("price", ["NaN", "Infinity", "-Infinity", 1e400])
def test_an_offer_that_is_not_finite_parses_so_the_referee_can_refuse_it(price: object) -> None:
    action = ACTION_ADAPTER.validate_json(json.dumps({"type": "make_offer", "price": price}))
    assert isinstance(action, MakeOffer)
    assert not action.price.is_finite()


def test_the_referees_events_round_trip_through_json() -> None:
    referee = Referee(make_scenario())
    referee.apply("seller", MakeOffer(price=D("4999.99"), message="firm"), 1.0)
    referee.apply("seller", MakeOffer(price=Decimal(4800)), 2.0)
    referee.apply("buyer", Reject(offer_id="o2", message="no"), 3.5)
    referee.apply("buyer", SendMessage(text="4000?"), 4.0)
    referee.apply("buyer", MakeOffer(price=Decimal(4100)), 5.0)
    referee.apply("seller", Accept(offer_id="o3"), 9.0)
    events = list(referee.events)
    assert len(events) == 8
    assert EVENTS_ADAPTER.validate_json(EVENTS_ADAPTER.dump_json(events)) == events


def test_an_offer_event_built_without_validation_equals_a_validated_one() -> None:
    referee = Referee(make_scenario())
    (made,) = referee.apply("buyer", MakeOffer(price=Decimal(4000)), 1.0)
    assert made == OfferMade.model_validate(made.model_dump())
    assert made.model_dump_json() == OfferMade.model_validate(made.model_dump()).model_dump_json()


# -- scenarios ---------------------------------------------------------------------------


def test_the_public_scenario_has_neither_private_value() -> None:
    scenario = make_scenario()
    public = scenario.public()
    assert "buyer_value" not in public.model_dump()
    assert "seller_cost" not in public.model_dump()
    text = public.model_dump_json()
    assert "4321.07" not in text and "3987.13" not in text
    assert public.list_price == scenario.list_price


def test_a_seat_view_holds_only_its_own_value() -> None:
    scenario = make_scenario()
    buyer, seller = seat_view(scenario, "buyer"), seat_view(scenario, "seller")
    assert (buyer.private_value, seller.private_value) == (D("4321.07"), D("3987.13"))
    assert "3987.13" not in buyer.model_dump_json()
    assert "4321.07" not in seller.model_dump_json()


def test_gains_are_the_buyers_value_less_the_sellers_cost() -> None:
    assert make_scenario().gains == D("333.94")
    assert make_scenario(buyer_value="3000.00").gains == D("-987.13")


def test_scaling_multiplies_every_price() -> None:
    scaled = make_scenario().scaled(100)
    assert (scaled.list_price, scaled.buyer_value, scaled.seller_cost) == (
        D("450000.00"),
        D("432107.00"),
        D("398713.00"),
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"list_price": "0"},
        {"list_price": "-5"},
        {"list_price": "1e12"},  # amounts stay below a trillion
        {"seller_cost": "1e30"},
        {"buyer_value": "0"},
        {"seller_cost": "-1"},
        {"buyer_value": "NaN"},
        {"deadline": 0},
        {"deadline": -1},
        {"deadline": math.nan},
        {"deadline": math.inf},
        {"tier": "luxury"},
    ],
)
def test_a_scenario_with_an_impossible_value_is_refused(changes: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        make_scenario(**changes)


# -- rules -------------------------------------------------------------------------------


def test_each_action_type_has_its_documented_cost() -> None:
    costs = ActionCosts()
    assert {t: costs.of(t) for t in ("make_offer", "accept", "reject", "send_message")} == {
        "make_offer": 5.0,
        "accept": 1.0,
        "reject": 2.0,
        "send_message": 3.0,
    }
    assert costs.of("walk_away") == 1.0


def test_the_default_rules_are_the_documented_ones() -> None:
    rules = Rules()
    assert (rules.max_price_multiple, rules.max_message_chars) == (10.0, 2000)
    assert (rules.max_actions, rules.max_invalid_actions, rules.first_mover) == (100, 10, "seller")
    assert rules.thinking.per_wake == 1.0


@pytest.mark.parametrize(
    "changes",
    [
        {"max_price_multiple": 0},
        {"max_message_chars": 0},
        {"max_message_chars": 10**9},  # a message no wire carries, and a briefing that lies
        {"max_actions": 0},
        {"max_invalid_actions": 0},
        {"costs": {"make_offer": -1}},
        {"first_mover": "clock"},
    ],
)
def test_rules_refuse_impossible_limits(changes: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Rules.model_validate(changes)


# -- observations and outcomes -----------------------------------------------------------


def test_an_observation_tells_my_offer_from_theirs() -> None:
    mine = LiveOffer(offer_id="o2", by="buyer", price=D("90"), t=2.0)
    theirs = LiveOffer(offer_id="o1", by="seller", price=D("110"), t=1.0)
    seen = Observation(
        role="buyer",
        scenario=make_scenario().public(),
        private_value=D("100"),
        now=3.0,
        time_left=117.0,
        live_offers=(theirs, mine),
        events=(),
    )
    assert (seen.my_offer, seen.their_offer, seen.is_over) == (mine, theirs, False)


def test_a_seat_sees_only_its_own_surplus() -> None:
    outcome = score(
        make_scenario(),
        end_reason="accepted",
        ended_by="buyer",
        price=D("4100.00"),
        time=9.0,
        offers=PerRole(),
        messages=PerRole(),
        invalid_actions=PerRole(),
    )
    buyer, seller = seat_outcome(outcome, "buyer"), seat_outcome(outcome, "seller")
    assert (buyer.surplus, seller.surplus) == (D("221.07"), D("112.87"))
    assert set(buyer.model_dump()) == {"status", "end_reason", "price", "time", "surplus"}


# -- the package -------------------------------------------------------------------------


PUBLIC_API = [
    "ACTION_ADAPTER",
    "CENT",
    "DEFAULT_RULES",
    "EVENTS_ADAPTER",
    "ROLES",
    "TIERS",
    "Accept",
    "Action",
    "ActionCosts",
    "ActionResult",
    "ActionType",
    "Agent",
    "AgentFactory",
    "ClockKind",
    "DealroomError",
    "Decision",
    "EndReason",
    "ErrorCode",
    "Event",
    "Item",
    "LiveOffer",
    "MadeOffer",
    "MakeOffer",
    "MessageSent",
    "Model",
    "Money",
    "NegotiationEnded",
    "Observation",
    "OfferAccepted",
    "OfferMade",
    "OfferRejected",
    "OfferWithdrawn",
    "Outcome",
    "PerRole",
    "PublicScenario",
    "Referee",
    "Refusal",
    "Reject",
    "Role",
    "RoomCreated",
    "RoomRequest",
    "RuleViolation",
    "Rules",
    "Scenario",
    "SeatOutcome",
    "SeatState",
    "SeatView",
    "SendMessage",
    "SeriesResult",
    "SessionErrorCode",
    "Status",
    "ThinkingCosts",
    "Tier",
    "ToolErrorPayload",
    "WaitResult",
    "WakeReason",
    "WalkAway",
    "WalkedAway",
    "offer_of",
    "other",
    "score",
    "seat_outcome",
    "seat_view",
    "to_cents",
]


def test_the_public_api_is_pinned() -> None:
    assert protocol.__all__ == PUBLIC_API
    for name in PUBLIC_API:
        assert getattr(protocol, name) is not None


def test_the_protocol_imports_only_the_stdlib_pydantic_and_itself() -> None:
    # pydantic_core is pydantic's own core, installed with it.
    allowed = set(sys.stdlib_module_names) | {"pydantic", "pydantic_core", "dealroom"}
    for path in PROTOCOL_DIR.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in allowed, f"{path.name} imports {name}"
                if top == "dealroom":
                    assert name.startswith("dealroom.protocol"), f"{path.name} imports {name}"


def test_trusted_instances_share_a_fields_set_that_copies_never_change() -> None:
    from dealroom.protocol import OfferWithdrawn
    from dealroom.protocol._base import trusted

    values = {"seq": 1, "t": 1.0, "by": "buyer", "type": "offer_withdrawn", "offer_id": "o1"}
    first, second = trusted(OfferWithdrawn, **values), trusted(OfferWithdrawn, **values)
    assert first.model_fields_set == set(OfferWithdrawn.model_fields)
    assert first == OfferWithdrawn.model_validate(values)
    copied = first.model_copy(update={"offer_id": "o2"})
    assert copied.offer_id == "o2" and first.offer_id == "o1"
    assert second.model_fields_set == set(OfferWithdrawn.model_fields)
    with pytest.raises(ValidationError):
        first.offer_id = "o3"  # type: ignore[misc]
    assert second.model_fields_set == set(OfferWithdrawn.model_fields)


def test_a_trusted_builder_builds_what_validation_builds() -> None:
    from decimal import Decimal

    from dealroom.protocol import OfferMade
    from dealroom.protocol._base import trusted_builder

    build = trusted_builder(OfferMade)
    values = {
        "seq": 2,
        "t": 1.5,
        "by": "seller",
        "type": "offer_made",
        "offer_id": "o1",
        "price": Decimal("12.30"),
        "message": None,
    }
    made = build(dict(values))
    assert made == OfferMade.model_validate(values)
    assert made.model_dump_json() == OfferMade.model_validate(values).model_dump_json()
    assert made.model_fields_set == set(OfferMade.model_fields)
    assert build(dict(values)).model_fields_set is made.model_fields_set
    with pytest.raises(ValidationError):
        made.price = Decimal(1)  # type: ignore[misc]

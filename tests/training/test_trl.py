"""BargainToolEnv follows TRL's environment_factory contract (tested without TRL; the schema
TRL reads is checked against transformers' own get_json_schema in test_tool_surface.py)."""

import inspect
import re
import typing
from decimal import Decimal

import pytest

from dealroom.protocol import Decision, MakeOffer, Observation, Rules, SeatView
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.rules import ActionCosts
from dealroom.protocol.tools import seat_tools
from dealroom.training import BargainToolEnv, RewardSpec
from dealroom.training.sft import TOOL_SCHEMAS
from dealroom.training.trl import with_rules

TOOL_NAMES = {tool.name for tool in seat_tools(series=False)}


def public_methods(env: BargainToolEnv) -> dict[str, typing.Any]:
    return {
        name: member
        for name, member in inspect.getmembers(env, callable)
        if not name.startswith("_")
    }


def their_offer_id(text: str) -> str:
    found = re.findall(r"(?:seller|buyer) (o\d+) at", text)
    assert found, text
    return found[-1]


def money_forms(amount: Decimal) -> list[str]:
    return [f"{amount:,.2f}", f"{amount:.2f}", str(amount)]


def test_public_methods_are_reset_get_reward_and_the_tools() -> None:
    assert set(public_methods(BargainToolEnv())) == {"reset", "get_reward", *TOOL_NAMES}


@pytest.mark.parametrize("name", sorted(TOOL_NAMES))
def test_every_tool_has_typed_arguments_and_a_google_style_docstring(name: str) -> None:
    method = getattr(BargainToolEnv, name)
    hints = typing.get_type_hints(method)
    params = [p for p in inspect.signature(method).parameters if p != "self"]
    assert "return" not in hints  # no "return" key in the schema: APIs do not take one
    doc = inspect.getdoc(method) or ""
    assert doc.splitlines()[0].endswith(".")
    for param in params:
        assert param in hints
        assert re.search(rf"^\s+{param}: \S", doc.split("Args:")[-1], re.M), (name, param)
    if params:
        assert "Args:" in doc


def test_sft_tool_schemas_match_the_environment_tools() -> None:
    for tool in TOOL_SCHEMAS:
        fn = tool["function"]
        sig = inspect.signature(getattr(BargainToolEnv, fn["name"]))
        params = {p for p in sig.parameters if p != "self"}
        required = {p for p, v in sig.parameters.items() if p != "self" and v.default is v.empty}
        assert list(fn["parameters"]["properties"]) == [p for p in sig.parameters if p != "self"]
        assert set(fn["parameters"].get("required", [])) == required
        assert set(fn["parameters"]["properties"]) == params
    assert {tool["function"]["name"] for tool in TOOL_SCHEMAS} == TOOL_NAMES


def test_sft_tools_are_in_the_order_trl_lists_the_environment_methods() -> None:
    """GRPOTrainer offers an environment's public methods in ``inspect.getmembers`` order; the
    chat template renders tools in the order given, so SFT rows must list them the same way."""
    offered = [
        name
        for name, _ in inspect.getmembers(BargainToolEnv, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]
    assert [tool["function"]["name"] for tool in TOOL_SCHEMAS] == offered


def test_reset_returns_the_briefing_only() -> None:
    env = BargainToolEnv()
    text = env.reset(index=3, prompt=[{"role": "user", "content": ""}])
    view_value = scenario_at(0, 3, "mid").buyer_value
    assert text.startswith("You are the buyer in a one-item negotiation.")
    assert f"${view_value:,.2f}" in text
    assert env.get_state().splitlines()[1:3] == ["no events yet.", "clock: 0 s, 120 s left."]


def test_reset_puts_a_blank_line_after_a_prompt_with_text() -> None:
    env = BargainToolEnv()
    assert env.reset(prompt=[{"role": "user", "content": "Negotiate."}]).startswith("\n\nYou")
    assert env.reset(prompt=[{"role": "user", "content": "Negotiate.\n"}]).startswith("You")
    assert env.reset().startswith("You")


def test_an_action_returns_once_it_took_effect_as_over_mcp() -> None:
    env = BargainToolEnv()
    env.reset(index=3)
    text = env.make_offer(1000)
    # 1 s of thinking and 5 s for the offer: the result stops there, not at the next turn.
    assert "clock: 6 s, 114 s left." in text, text
    waited = env.wait_for_opponent(timeout_s=5)
    assert waited.startswith("woke: "), waited


def test_tool_docstrings_follow_the_environments_rules() -> None:
    rules = Rules(costs=ActionCosts(make_offer=7.5), max_price_multiple=3)
    env = BargainToolEnv(rules=rules)
    assert isinstance(env, BargainToolEnv) and type(env) is with_rules(rules)
    assert "at most 3 times the list price" in (type(env).make_offer.__doc__ or "")
    assert "at most 10 times the list price" in (BargainToolEnv.make_offer.__doc__ or "")
    assert "offer 7.5 s" in env.reset(index=3)  # the clock costs: in the briefing, said once
    assert "clock: 8.5 s" in env.make_offer(1000)


@pytest.mark.parametrize("tool", seat_tools(series=False), ids=lambda t: t.name)
def test_method_signatures_are_the_tool_specs(tool: typing.Any) -> None:
    sig = inspect.signature(getattr(BargainToolEnv, tool.name))
    params = [p for p in sig.parameters.values() if p.name != "self"]
    hints = typing.get_type_hints(getattr(BargainToolEnv, tool.name))
    fields = tool.args.model_fields
    assert [p.name for p in params] == list(fields)
    for p in params:
        info = fields[p.name]
        assert hints[p.name] == info.annotation
        assert (p.default is p.empty) == info.is_required()
        if not info.is_required():
            assert p.default == info.default


def test_reset_row_chooses_seed_tier_index_role_and_opponent() -> None:
    env = BargainToolEnv()
    text = env.reset(seed=7, tier="low", index=2, role="seller", opponent="linear")
    cost = scenario_at(7, 2, "low").seller_cost
    assert text.startswith("You are the seller")
    assert f"${cost:,.2f}" in text


def test_reset_refuses_an_unknown_role() -> None:
    with pytest.raises(ValueError, match="role"):
        BargainToolEnv().reset(role="broker")


def test_make_offer_returns_the_offer_and_the_reply() -> None:
    env = BargainToolEnv()
    env.reset(index=3)
    text = env.make_offer(1000, message="Cash today.")
    assert "seller offered" in text
    assert "you o2 at $1,000.00" in text
    assert "Cash today." not in text  # its own words: the model wrote them
    assert 'you offered $1,000.00 (o2): "Cash today."' in env.get_state()


def test_accept_closes_the_deal_and_get_reward_scores_it() -> None:
    env = BargainToolEnv(reward=RewardSpec(share=0.0, deal=1.0, ir_violation=0.0))
    offer = their_offer_id(env.reset(index=3) + env.wait_for_opponent())
    text = env.accept(offer)
    assert "outcome: deal at" in text
    assert f"you accepted {offer}" in env.get_state()
    assert env.get_reward() == 1.0


def test_accepting_a_losing_price_is_penalised_by_the_default_reward() -> None:
    env = BargainToolEnv()
    offer = their_offer_id(env.reset(index=3) + env.wait_for_opponent())
    env.accept(offer)  # the seller opens at 1.3 times the list price, above the buyer's value
    assert env.get_reward() < -1.0


def test_reject_send_message_and_get_state() -> None:
    env = BargainToolEnv()
    offer = their_offer_id(env.reset(index=3) + env.wait_for_opponent())
    rejected = env.reject(offer, message="Too high.")
    assert rejected.startswith("ok\n") and "live offers: none." in rejected
    assert env.send_message("Can you do better?").startswith("ok\n")
    state = env.get_state()
    assert f'you rejected {offer}: "Too high."' in state
    assert 'you said: "Can you do better?"' in state
    assert state.startswith("you: the buyer") and state == env.get_state()  # no time passes


def test_walk_away_ends_without_a_deal_and_scores_zero() -> None:
    env = BargainToolEnv()
    env.reset(index=3)
    text = env.walk_away("Not for me.")
    assert "outcome: no deal (walk_away)" in text
    assert 'you walked away: "Not for me."' in env.get_state()
    assert env.get_reward() == 0.0


def test_refused_actions_come_back_as_text_with_their_code() -> None:
    env = BargainToolEnv()
    env.reset(index=3)
    assert env.accept("o99").startswith("offer_not_found: There is no offer 'o99'.")
    assert env.make_offer(1e9).startswith("price_out_of_range: ")
    assert env.send_message("   ").startswith("message_empty: ")
    bad_type = env.make_offer("lots")  # type: ignore[arg-type]
    assert bad_type.startswith("invalid_arguments: price must be a JSON number"), bad_type
    assert env.make_offer(True).startswith("invalid_arguments: ")
    assert env.make_offer(-5).startswith("invalid_arguments: price must be above 0")


def test_too_many_invalid_actions_forfeit_and_say_so() -> None:
    env = BargainToolEnv()
    env.reset(index=3)
    texts = [env.accept("o99") for _ in range(10)]
    assert texts[-1].startswith("offer_not_found: ") and "you forfeited" in texts[-1]
    assert "forfeit" not in texts[-2]
    assert "outcome: no deal (forfeit)" in env.get_state()
    assert env.accept("o99").startswith("negotiation_closed: ")


def test_tools_after_the_end_say_the_negotiation_is_closed() -> None:
    env = BargainToolEnv()
    env.reset(index=3)
    env.walk_away()
    for text in (env.make_offer(100), env.reject("o1")):
        assert text.startswith("negotiation_closed: The negotiation has ended."), text
    assert env.wait_for_opponent().startswith("woke: ended")


def test_get_reward_plays_an_unfinished_negotiation_out() -> None:
    env = BargainToolEnv()
    env.reset(index=3)
    env.make_offer(float(scenario_at(0, 3, "mid").list_price) / 100)
    assert env.get_reward() == 0.0  # no seller comes down to 1% of the list price
    assert "outcome: no deal (deadline)" in env.get_state()


def test_a_factory_can_be_the_opponent() -> None:
    class Generous:
        def __init__(self, view: SeatView) -> None:
            self.price = view.scenario.list_price / 2

        def act(self, observation: Observation) -> Decision:
            if observation.my_offer is None:
                return Decision(actions=(MakeOffer(price=self.price),))
            return Decision()

    env = BargainToolEnv(opponent=lambda view, rng: Generous(view))
    offer = their_offer_id(env.reset(index=3) + env.wait_for_opponent())
    env.accept(offer)
    assert env.get_reward() > 0.5


@pytest.mark.parametrize("role", ["buyer", "seller"])
def test_no_returned_string_mentions_the_other_sides_value(role: str) -> None:
    env = BargainToolEnv(role=role)  # type: ignore[arg-type]
    scenario = scenario_at(0, 5, "mid")
    hidden = scenario.seller_cost if role == "buyer" else scenario.buyer_value
    texts = [env.reset(index=5)]
    texts.append(env.make_offer(float(scenario.list_price)))
    texts.append(env.send_message("What is your best price?"))
    texts += [env.wait_for_opponent() for _ in range(3)]
    texts.append(env.reject(their_offer_id("\n".join(texts))))
    texts.append(env.get_state())
    texts.append(env.make_offer(float(scenario.list_price) * 0.9))
    texts.append(env.walk_away())
    texts.append(str(env.get_reward()))
    blob = "\n".join(texts)
    for form in money_forms(hidden):
        assert form not in blob

"""dealroom/Bargain-v0 passes Gymnasium's checker and plays by the rules."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dealroom.training
from dealroom.protocol.generator import scenario_at
from dealroom.training import BargainEnv, RewardSpec
from dealroom.training.spaces import ACCEPT, OFFER, WAIT, action


def run_episode(env: BargainEnv, policy, **reset: object) -> tuple[float, dict]:
    obs, info = env.reset(**reset)  # type: ignore[arg-type]
    total, done = 0.0, False
    while not done:
        obs, reward, done, truncated, info = env.step(policy(obs))
        assert not truncated
        total += reward
    return total, info


def test_importing_the_package_registers_bargain_v0() -> None:
    env = gymnasium.make(dealroom.training.ENV_ID, opponent="linear")
    assert isinstance(env.unwrapped, BargainEnv)
    env.close()


@pytest.mark.parametrize("role", ["buyer", "seller"])
def test_bargain_env_passes_check_env(role: str) -> None:
    check_env(gymnasium.make(dealroom.training.ENV_ID, role=role).unwrapped)


def test_ansi_rendering_passes_check_env_and_shows_the_seats_view() -> None:
    check_env(gymnasium.make(dealroom.training.ENV_ID, render_mode="ansi").unwrapped)
    env = BargainEnv(render_mode="ansi")
    env.reset(seed=0)
    env.step(action(OFFER, 0.5))
    text = env.render()
    assert text is not None and "\nclock: " in text and "; you o" in text


def test_reset_with_the_same_seed_gives_the_same_episode() -> None:
    def policy(obs: np.ndarray) -> np.ndarray:
        return action(OFFER, 0.4 + 0.5 * float(obs[2]))

    first = run_episode(BargainEnv(), policy, seed=11)
    second = run_episode(BargainEnv(), policy, seed=11)
    assert first[0] == second[0]
    assert first[1]["outcome"] == second[1]["outcome"]


def test_observation_is_the_seats_own_view_in_list_price_fractions() -> None:
    env = BargainEnv(role="seller")
    scenario = scenario_at(0, 4, "mid")
    obs, _ = env.reset(seed=0, options={"index": 4})
    assert obs[0] == 1.0  # seller
    assert obs[1] == pytest.approx(float(scenario.seller_cost / scenario.list_price))
    obs, *_ = env.step(action(OFFER, 1.2))
    assert obs[5] == 1.0 and obs[6] == pytest.approx(1.2)
    assert obs[3] == 1.0 and obs[7] == pytest.approx(0.5)  # boulware buyer opens at 0.5
    assert float(scenario.buyer_value / scenario.list_price) not in set(obs.tolist())


def test_accepting_the_opening_offer_ends_the_episode_with_its_reward() -> None:
    env = BargainEnv(role="seller", reward=RewardSpec(share=0.0, deal=1.0))
    obs, _ = env.reset(seed=0, options={"index": 4})
    obs, reward, done, _, _ = env.step(action(WAIT))
    assert obs[3] == 1.0 and not done and reward == 0.0
    _, reward, done, _, info = env.step(action(ACCEPT))
    assert done and info["outcome"].status == "deal"
    assert reward == 1.0 - 1.0  # deal bonus, minus the penalty: 0.5 list is below cost


def test_accepting_with_nothing_to_accept_is_refused_and_reported() -> None:
    env = BargainEnv(role="buyer")
    env.reset(seed=0)
    _, _, done, _, info = env.step(action(ACCEPT))
    assert not done and info["errors"] == ("offer_not_found",)


def test_a_pinned_scenario_is_played() -> None:
    scenario = scenario_at(3, 9, "high")
    env = BargainEnv()
    obs, _ = env.reset(seed=1, options={"scenario": scenario})
    assert obs[1] == pytest.approx(float(scenario.buyer_value / scenario.list_price))


def test_waiting_out_the_clock_ends_without_a_deal() -> None:
    total, info = run_episode(BargainEnv(), lambda obs: action(WAIT), seed=2)
    assert total == 0.0 and info["outcome"].end_reason == "deadline"


def test_step_before_reset_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="reset"):
        BargainEnv().step(action(WAIT))

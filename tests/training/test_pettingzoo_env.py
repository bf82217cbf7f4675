"""The two-seat AEC environment passes PettingZoo's api_test."""

import numpy as np
import pytest
from pettingzoo.test import api_test

from dealroom.training import BargainAECEnv
from dealroom.training.spaces import ACCEPT, OFFER, WAIT, action


@pytest.mark.filterwarnings("ignore:We recommend agents to be named")  # "buyer", not "player_0"
@pytest.mark.parametrize("render_mode", [None, "ansi"])
def test_bargain_aec_env_passes_api_test(render_mode: str | None) -> None:
    api_test(BargainAECEnv(render_mode=render_mode), num_cycles=200)


def play(env: BargainAECEnv, policies: dict, seed: int) -> dict[str, float]:
    env.reset(seed=seed)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, _ = env.last()
        totals[agent] += reward
        env.step(None if terminated or truncated else policies[agent](obs))
    return totals


def test_both_seats_are_paid_their_own_share_of_a_deal() -> None:
    policies = {  # the seller asks one percent of the list price above its cost; it is taken
        "seller": lambda obs: action(OFFER, float(obs[1]) + 0.01),
        "buyer": lambda obs: action(ACCEPT) if obs[3] else action(WAIT),
    }
    totals = play(BargainAECEnv(), policies, seed=4)
    assert totals["buyer"] > totals["seller"] > 0.0
    assert totals["seller"] + totals["buyer"] == pytest.approx(1.0)


def test_the_clock_decides_whose_turn_it_is() -> None:
    env = BargainAECEnv()
    env.reset(seed=0)
    assert env.agent_selection == "seller"  # first mover at t=0
    env.step(action(OFFER, 1.3))
    assert env.agent_selection == "buyer"
    obs = env.observe("buyer")
    assert obs.dtype == np.float32 and obs[0] == 0.0


def test_the_same_seed_gives_the_same_scenario() -> None:
    first, second = BargainAECEnv(), BargainAECEnv()
    first.reset(seed=5)
    second.reset(seed=5)
    assert np.array_equal(first.observe("buyer"), second.observe("buyer"))

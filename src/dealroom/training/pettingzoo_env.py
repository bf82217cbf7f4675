"""Both seats as a PettingZoo AEC environment (agents ``"buyer"`` and ``"seller"``).

The virtual clock decides whose turn it is: ``agent_selection`` is the seat it wakes next, so
turns do not strictly alternate (a seat whose timer fires first goes again). Observations and
actions are those of ``dealroom/Bargain-v0`` (:mod:`dealroom.training.spaces`), per seat;
each seat's reward, paid when the negotiation ends, is the :class:`RewardSpec` of the outcome
for that seat.

Usage::

    env = BargainAECEnv()
    env.reset(seed=0)
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        env.step(None if terminated or truncated else policy[agent](obs))
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.spaces import Space
from pettingzoo import AECEnv  # pyright: ignore[reportMissingTypeStubs]  # no py.typed

from dealroom.engine.virtual import VirtualRoom, Wake
from dealroom.protocol import DEFAULT_RULES, ROLES, Role, Rules, Tier
from dealroom.training import spaces
from dealroom.training._seat import draw_scenario
from dealroom.training.rewards import RewardSpec


class BargainAECEnv(AECEnv[str, np.ndarray, np.ndarray | None]):
    """Buyer and seller, both learners, on one scenario per episode.

    Args (keyword-only): tier (None draws one per episode), scenario_seed, reward, wait
    (seconds a seat sleeps after a move unless the other side moves first), rules,
    render_mode (None or "ansi").
    """

    metadata = {  # noqa: RUF012  (PettingZoo's class attribute)
        "name": "dealroom_bargain_v0",
        "render_modes": ["ansi"],
        "is_parallelizable": False,
    }

    def __init__(
        self,
        *,
        tier: Tier | None = "mid",
        scenario_seed: int = 0,
        reward: RewardSpec | None = None,
        wait: float | None = 10.0,
        rules: Rules = DEFAULT_RULES,
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        self.tier: Tier | None = tier
        self.scenario_seed = scenario_seed
        self.reward_spec = reward or RewardSpec()
        self.wait = wait
        self.rules = rules
        self.render_mode = render_mode
        self.possible_agents = list(ROLES)
        self._obs_space = spaces.observation_space(rules)
        self._act_space = spaces.action_space()
        self._room: VirtualRoom | None = None
        self._wake: Wake | None = None
        self.np_random = np.random.default_rng()

    def observation_space(self, agent: str) -> Space[Any]:
        """The same Box for both seats."""
        del agent
        return self._obs_space

    def action_space(self, agent: str) -> Space[Any]:
        """The same Box for both seats."""
        del agent
        return self._act_space

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a negotiation; ``options={"index": i}`` pins the scenario index, and
        ``options={"scenario": ...}`` the whole scenario."""
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        scenario = draw_scenario(self.np_random, self.scenario_seed, self.tier, options or {})
        self._room = VirtualRoom(scenario, self.rules)
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {agent: {"errors": ()} for agent in self.agents}
        self._advance()

    def observe(self, agent: str) -> np.ndarray:
        """The seat's observation vector now."""
        room = self._require()
        role: Role = "buyer" if agent == "buyer" else "seller"
        wake = self._wake
        if wake is not None and wake.role == role:
            observation = wake.observation
        else:
            now = wake.observation.now if wake is not None else self._end_time()
            observation = room.referee.observe(role, now)
        return spaces.encode(observation, self.rules)

    def step(self, action: np.ndarray | None) -> None:
        """Play the selected seat's turn."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        room, wake = self._require(), self._wake
        assert wake is not None and action is not None
        self._cumulative_rewards[agent] = 0.0
        room.decide(wake.role, spaces.decode(action, wake.observation, self.wait))
        self._clear_rewards()
        self._advance()
        self._accumulate_rewards()

    def render(self) -> str | None:
        """One line: the scenario, the clock and the live offers ("ansi" mode)."""
        if self.render_mode != "ansi" or self._room is None:
            return None
        referee = self._room.referee
        offers = ", ".join(f"{o.by} {o.offer_id} {o.price}" for o in referee.live_offers())
        status = (
            "open" if referee.is_open else f"ended ({referee.outcome and referee.outcome.status})"
        )
        return (
            f"{referee.scenario.id}: {len(referee.events)} events, {status}; live: {offers or '-'}"
        )

    def close(self) -> None:
        """Nothing to release."""

    # -- internals ----------------------------------------------------------------------

    def _require(self) -> VirtualRoom:
        if self._room is None:
            raise RuntimeError("call reset() first")
        return self._room

    def _end_time(self) -> float:
        outcome = self._require().referee.outcome
        return 0.0 if outcome is None else outcome.time

    def _advance(self) -> None:
        room = self._require()
        self._wake = room.next_wake()
        if self._wake is not None:
            self.agent_selection = self._wake.role
            self.infos[self._wake.role] = {"errors": tuple(e.code for e in self._wake.errors)}
            return
        outcome = room.referee.outcome
        assert outcome is not None
        for agent in self.agents:
            role: Role = "buyer" if agent == "buyer" else "seller"
            self.rewards[agent] = self.reward_spec(outcome, role, room.referee.scenario.list_price)
            self.terminations[agent] = True
            self.infos[agent] = {"errors": (), "outcome": outcome}

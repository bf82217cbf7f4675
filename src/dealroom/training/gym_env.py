"""``dealroom/Bargain-v0``: one seat against a fixed opponent, as a Gymnasium environment.

Each step is one turn of the learner's seat on the virtual clock; the opponent (any registry
agent, boulware by default) plays its turns in between. Observations and actions are described
in :mod:`dealroom.training.spaces` (prices as fractions of the list price). The reward is 0
until the negotiation ends, then the :class:`RewardSpec` of the outcome. ``info`` carries the
codes of refused actions (``"errors"``) and, at the end, the full scored ``"outcome"`` (both
sides' surplus: for evaluation, never for the policy).

Usage::

    import gymnasium, dealroom.training
    env = gymnasium.make("dealroom/Bargain-v0", role="buyer", opponent="boulware")
    obs, info = env.reset(seed=0)
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from dealroom.engine.match import SeatRandom
from dealroom.engine.virtual import Wake
from dealroom.protocol import (
    DEFAULT_RULES,
    AgentFactory,
    Role,
    Rules,
    Tier,
    seat_text,
)
from dealroom.training import spaces
from dealroom.training._seat import SeatMatch, draw_scenario, house_factory
from dealroom.training.rewards import RewardSpec


class BargainEnv(gym.Env[np.ndarray, np.ndarray]):
    """One seat of a bilateral negotiation against a house agent.

    Args (keyword-only):
        role: the learner's seat.
        opponent: a registry spec (``"boulware"``, ``"linear:k=0.1"``), ``llm:MODEL`` (the
            training opponent, against ``OPENAI_BASE_URL``) or an AgentFactory.
        tier: price tier of the scenarios; None draws one per episode.
        scenario_seed: seed of the scenario generator; episodes draw an index from the
            environment's generator (``reset(options={"index": i})`` or
            ``{"scenario": Scenario}`` pins one).
        reward: weights of the final reward.
        wait: seconds the seat sleeps after a move unless the other side moves first (None:
            until the other side moves, or the deadline).
        rules: referee limits and clock costs.
        render_mode: None or "ansi" (text of the last turn).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}  # noqa: RUF012  (Gymnasium API)

    def __init__(
        self,
        *,
        role: Role = "buyer",
        opponent: str | AgentFactory = "boulware",
        tier: Tier | None = "mid",
        scenario_seed: int = 0,
        reward: RewardSpec | None = None,
        wait: float | None = 10.0,
        rules: Rules = DEFAULT_RULES,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"unsupported render_mode {render_mode!r}")
        self.role: Role = role
        self.tier: Tier | None = tier
        self.scenario_seed = scenario_seed
        self.reward_spec = reward or RewardSpec()
        self.wait = wait
        self.rules = rules
        self.render_mode = render_mode
        self._opponent = house_factory(opponent, rules)
        self.observation_space = spaces.observation_space(rules)
        self.action_space = spaces.action_space()
        self._match: SeatMatch | None = None
        self._wake: Wake | None = None
        self._shown = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a negotiation on a drawn (or pinned) scenario."""
        super().reset(seed=seed)
        scenario = draw_scenario(self.np_random, self.scenario_seed, self.tier, options or {})
        rng = SeatRandom(int(self.np_random.integers(2**63)))
        self._match = SeatMatch(scenario, self.role, self._opponent, rng=rng, rules=self.rules)
        self._shown = 0
        self._wake = self._match.advance()
        return self._observe(), self._info()

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Play one turn of the seat, then the opponent's turns until the seat's next one."""
        match, wake = self._match, self._wake
        if match is None or wake is None:
            raise RuntimeError("call reset() before step(), and again after the episode ends")
        match.decide(spaces.decode(action, wake.observation, self.wait))
        self._wake = match.advance()
        terminated = self._wake is None
        reward = 0.0
        if terminated:
            reward = self.reward_spec(
                match.outcome_or_raise(), self.role, match.scenario.list_price
            )
        return self._observe(), float(reward), terminated, False, self._info()

    def render(self) -> str | None:
        """The seat's view as text (render_mode "ansi"), as a model seat reads it
        (``seat_text``): the events since the last render, the clock, the live offers, the
        outcome once it ended."""
        if self.render_mode != "ansi" or self._match is None:
            return None
        observation = self._match.observe()
        text = seat_text.view_text(observation, self._shown)
        self._shown = len(observation.events)
        return text

    # -- internals ----------------------------------------------------------------------

    def _observe(self) -> np.ndarray:
        assert self._match is not None
        observation = self._wake.observation if self._wake is not None else self._match.observe()
        return spaces.encode(observation, self.rules)

    def _info(self) -> dict[str, Any]:
        assert self._match is not None
        info: dict[str, Any] = {
            "errors": () if self._wake is None else tuple(e.code for e in self._wake.errors)
        }
        if self._wake is None:
            info["outcome"] = self._match.outcome_or_raise()
        return info

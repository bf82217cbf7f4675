"""One learner seat against a house agent on the virtual clock: the core of every adapter."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np

from dealroom.engine.calls import InPlace
from dealroom.engine.virtual import VirtualRoom, Wake
from dealroom.play.registry import AgentSpecError, resolve
from dealroom.protocol import (
    DEFAULT_RULES,
    TIERS,
    Agent,
    AgentFactory,
    Decision,
    Observation,
    Outcome,
    Role,
    Rules,
    Scenario,
    SeatView,
    Tier,
    other,
    seat_view,
)
from dealroom.protocol.generator import scenario_at

OpponentFactory = Callable[[SeatView, random.Random], Agent | InPlace]
"""What plays the other seat of a negotiation: a house agent, or a seat played in place (an
``llm:`` opponent, the one model seat)."""


def opponent_factory(
    opponent: str | AgentFactory | OpponentFactory, rules: Rules = DEFAULT_RULES
) -> OpponentFactory:
    """The other seat's factory from a spec or a factory: a scripted spec (``"boulware"``,
    ``"linear:k=0.1"``), or ``llm:MODEL``, the training opponent (``LLMOpponent``) against the
    endpoint of ``OPENAI_BASE_URL`` with ``OPENAI_API_KEY``: it plays inside the environment's
    synchronous steps on the virtual clock.

    Raises ``AgentSpecError`` for an unknown spec, and for a seat that needs a person or a
    connection of its own (``human``): those play served rooms, not in-process steps.
    """
    if not isinstance(opponent, str):
        return opponent
    from dealroom.training.opponents import LLM_PREFIX, training_opponent

    if not opponent.strip().startswith(LLM_PREFIX):
        return resolve(opponent)
    llm = training_opponent(opponent, api_key=os.environ.get("OPENAI_API_KEY"), rules=rules)
    assert not isinstance(llm, str)
    return llm


def house_factory(opponent: str | AgentFactory, rules: Rules = DEFAULT_RULES) -> AgentFactory:
    """A house agent's factory (the step-by-step environments' other seat: Gymnasium,
    PettingZoo): a scripted spec or factory. An ``llm:`` opponent plays the tool environment
    (``BargainToolEnv``), where it reads what a served seat reads; raises AgentSpecError here."""
    if isinstance(opponent, str) and opponent.strip().startswith("llm:"):
        raise AgentSpecError(
            f"opponent {opponent.strip()!r}: an llm: opponent plays BargainToolEnv (the tool "
            "environment, as a model seat), not this step-by-step environment"
        )
    return cast(AgentFactory, opponent_factory(opponent, rules))


def draw_scenario(
    rng: np.random.Generator, scenario_seed: int, tier: Tier | None, options: Mapping[str, Any]
) -> Scenario:
    """The scenario for a reset: ``options["scenario"]`` (a Scenario or its dict) if given,
    else ``scenario_at(scenario_seed, index, tier)`` with ``options["index"]`` or a drawn index,
    and the env's tier or a drawn one."""
    pinned = options.get("scenario")
    if pinned is not None:
        return Scenario.model_validate(pinned)
    chosen: Tier = tier or TIERS[int(rng.integers(len(TIERS)))]
    index = options.get("index")
    if index is None:
        index = int(rng.integers(2**31))
    return scenario_at(scenario_seed, int(index), chosen)


class SeatMatch:
    """A negotiation in which one seat is driven from outside and the other by a house agent.

    ``advance()`` runs the house's wakes until the learner must decide (its Wake) or the
    negotiation is over (None); ``decide()`` queues the learner's decision. Both run the
    engine's one play-out loop (``VirtualRoom``), the house agent called in place.
    """

    def __init__(
        self,
        scenario: Scenario,
        role: Role,
        opponent: AgentFactory,
        *,
        rng: random.Random,
        rules: Rules = DEFAULT_RULES,
    ) -> None:
        self.scenario = scenario
        self.role: Role = role
        house = opponent(seat_view(scenario, other(role)), rng)
        self.room = VirtualRoom(scenario, rules, agents={other(role): house})
        self._now = 0.0
        self._awake = False

    def advance(self) -> Wake | None:
        """Run the clock to the learner's next wake; None once the negotiation is over."""
        wake = self.room.next_wake()
        if wake is not None:
            self._now = wake.observation.now
            self._awake = True
        return wake

    def decide(self, decision: Decision, thinking: float | None = None) -> None:
        """Queue the learner's decision (it must be awake)."""
        self.room.decide(self.role, decision, thinking)
        self._awake = False

    def finish(self) -> Outcome:
        """Play the negotiation out with the learner idle; return the outcome."""
        if self._awake:
            self.decide(Decision())
        while self.advance() is not None:
            self.decide(Decision())
        return self.outcome_or_raise()

    @property
    def is_over(self) -> bool:
        """True once the negotiation has ended."""
        return not self.room.referee.is_open

    def observe(self) -> Observation:
        """The learner's view now (the final view once over)."""
        return self.room.referee.observe(self.role, self._now)

    def outcome_or_raise(self) -> Outcome:
        """The full scored outcome (both sides' surplus: for rewards, never for the learner)."""
        outcome = self.room.referee.outcome
        if outcome is None:
            raise RuntimeError("the negotiation is still open")
        return outcome

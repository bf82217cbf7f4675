"""The agent interface: an observation in, a decision out.

A scripted strategy is any object with ``act(observation) -> Decision``, built per negotiation by
an ``AgentFactory`` from the seat's private view and a seeded random generator (the only source
of randomness an agent may use, so that runs are reproducible).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, get_args

from dealroom.protocol.actions import Action
from dealroom.protocol.errors import DealroomError
from dealroom.protocol.observation import Observation
from dealroom.protocol.scenario import SeatView


@dataclass(frozen=True, slots=True)
class Decision:
    """What a seat does when woken: some actions (in order), then sleep.

    ``wait`` is the most seconds to sleep after deciding before being woken again even if the
    other side does nothing; ``None`` sleeps until something happens. A new event from the other
    side always wakes the seat.
    """

    actions: tuple[Action, ...] = ()
    wait: float | None = None


_ACTION_CLASSES: tuple[type, ...] = get_args(get_args(Action)[0])


class DecisionError(DealroomError, TypeError):
    """An agent's ``act`` returned something other than a ``Decision`` of actions."""

    kind = "bad_decision"


def check_decision(decision: object, who: str) -> Decision:
    """``decision`` if it is a ``Decision`` whose actions are actions, else a one-line
    ``DecisionError`` naming ``who`` (the seat) and what it returned instead (the passive
    check the engine makes of each seat's first decisions, as Gymnasium's checker does)."""
    if not isinstance(decision, Decision):
        raise DecisionError(
            f"the {who}'s agent returned {type(decision).__name__} from act(), not a Decision "
            "(return Decision() to do nothing until something happens)"
        )
    for action in decision.actions:
        if not isinstance(action, _ACTION_CLASSES):
            names = ", ".join(c.__name__ for c in _ACTION_CLASSES)
            raise DecisionError(
                f"the {who}'s agent decided an action of type {type(action).__name__}; "
                f"a Decision's actions are {names}"
            )
    return decision


class Agent(Protocol):
    """One seat's policy for one negotiation."""

    def act(self, observation: Observation, /) -> Decision:
        """Decide what to do now."""
        ...


AgentFactory = Callable[[SeatView, random.Random], Agent]
"""Builds an agent for one negotiation from the seat's private view and a seeded generator."""

"""The agent interface: an observation in, a decision out.

A scripted strategy is any object with ``act(observation) -> Decision``, built per negotiation by
an ``AgentFactory`` from the seat's private view and a seeded random generator (the only source
of randomness an agent may use, so that runs are reproducible).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from dealroom.protocol.actions import Action
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


class Agent(Protocol):
    """One seat's policy for one negotiation."""

    def act(self, observation: Observation, /) -> Decision:
        """Decide what to do now."""
        ...


AgentFactory = Callable[[SeatView, random.Random], Agent]
"""Builds an agent for one negotiation from the seat's private view and a seeded generator."""

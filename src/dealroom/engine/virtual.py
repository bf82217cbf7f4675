"""The virtual clock: a deterministic discrete-event simulation of one negotiation.

``VirtualRoom`` is a ``Scheduler`` (``engine/schedule.py``: the one ordering rule and play-out
loop) whose seats are both house seats on the virtual clock: each played by an in-process agent
called in place, or driven from outside one wake at a time. Nothing here reads a real clock.
"""

from __future__ import annotations

from collections.abc import Mapping

from dealroom.engine.schedule import Scheduler
from dealroom.engine.seats import MIN_STEP, Wake
from dealroom.protocol import DEFAULT_RULES, ROLES, Agent, Referee, Role, Rules, Scenario

__all__ = ["MIN_STEP", "VirtualRoom", "Wake"]


class VirtualRoom(Scheduler):
    """One negotiation on the virtual clock; seats without an agent are driven from outside.

    Usage::

        room = VirtualRoom(scenario)                  # both seats driven from outside
        while (wake := room.next_wake()) is not None:
            room.decide(wake.role, agents[wake.role].act(wake.observation))
        room.referee.outcome

        VirtualRoom(scenario, agents=agents).run()    # both seats played in place
    """

    def __init__(
        self,
        scenario: Scenario,
        rules: Rules = DEFAULT_RULES,
        *,
        agents: Mapping[Role, Agent] | None = None,
    ) -> None:
        agents = agents or {}
        driven: tuple[Role, ...] = tuple(role for role in ROLES if role not in agents)
        super().__init__(Referee(scenario, rules), agents, driven=driven)

    def run(self) -> None:
        """Play to the end; every seat must have an agent by now."""
        if self.next_wake() is not None:
            raise RuntimeError("a seat without an agent was woken: use next_wake() and decide()")

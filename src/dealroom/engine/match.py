"""Play one negotiation between two in-process agents on the virtual clock."""

from __future__ import annotations

import random
from typing import Any

from dealroom.engine.virtual import VirtualRoom
from dealroom.protocol import (
    DEFAULT_RULES,
    Agent,
    AgentFactory,
    Role,
    Rules,
    Scenario,
    seat_view,
)
from dealroom.protocol._base import trusted
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.referee import Referee
from dealroom.protocol.secret import Secret, Seed

_DRAW = random.Random.random
_DRAW_BITS = random.Random.getrandbits


class SeatRandom(random.Random):
    """``random.Random(x)``, seeded on its first draw instead of when it is made.

    Seeding the Mersenne Twister from a seat's seed costs about 44 k instructions, two of them
    per scripted negotiation (over 2% of one), and most scripted agents never draw (the
    time-dependent tactics without noise). Every draw goes through ``random`` or
    ``getrandbits`` (``random.Random``'s other methods are built on them) and the state is
    read through ``getstate``, so the numbers are the ones ``random.Random(x)`` gives.
    """

    def __init__(self, x: int | str | None = None) -> None:
        self._unseeded: tuple[int | str | None] | None = (x,)
        self.gauss_next = None

    def _seed_now(self) -> None:
        pending = self._unseeded
        if pending is not None:
            self._unseeded = None
            super().seed(pending[0])

    def random(self) -> float:
        if self._unseeded is not None:
            self._seed_now()
        return _DRAW(self)

    def getrandbits(self, k: int, /) -> int:
        if self._unseeded is not None:
            self._seed_now()
        return _DRAW_BITS(self, k)

    def seed(self, a: Any = None, version: int = 2) -> None:
        self._unseeded = None
        super().seed(a, version)

    def getstate(self) -> tuple[Any, ...]:
        self._seed_now()
        return super().getstate()

    def setstate(self, state: tuple[Any, ...]) -> None:
        self._unseeded = None
        super().setstate(state)


def seat_rng(seed: Seed, scenario_id: str, role: Role) -> random.Random:
    """The seeded generator for one seat of one negotiation (stable across Python versions).

    Under a secret it is seeded with HMAC-SHA256 of the secret, the scenario id and the role, so
    a seat that knows the scenario id cannot predict the house agent's choices.
    """
    match seed:
        case Secret():
            digest = seed.derive(f"dealroom:seat:{scenario_id}:{role}")
            return SeatRandom(int.from_bytes(digest, "big"))
        case int():
            return SeatRandom(f"{seed}:{scenario_id}:{role}")


def play(
    scenario: Scenario,
    buyer: AgentFactory,
    seller: AgentFactory,
    *,
    names: tuple[str, str] = ("buyer", "seller"),
    rules: Rules = DEFAULT_RULES,
    seed: Seed = 0,
) -> NegotiationRecord:
    """Run a negotiation to its end and return the record. Deterministic for a given seed."""
    room = VirtualRoom(scenario, rules, agents=seat_agents(scenario, buyer, seller, seed))
    room.run()
    return record_of(room, names)


def seat_agents(
    scenario: Scenario, buyer: AgentFactory, seller: AgentFactory, seed: Seed
) -> dict[Role, Agent]:
    """Both seats' agents for ``scenario``, each with its own seeded generator."""
    return {
        "buyer": buyer(seat_view(scenario, "buyer"), seat_rng(seed, scenario.id, "buyer")),
        "seller": seller(seat_view(scenario, "seller"), seat_rng(seed, scenario.id, "seller")),
    }


def record_of(room: VirtualRoom, names: tuple[str, str]) -> NegotiationRecord:
    """The record of a room played to its end."""
    return record_from(room.referee, names)


def record_from(referee: Referee, names: tuple[str, str]) -> NegotiationRecord:
    """The record of a negotiation its referee closed."""
    outcome = referee.outcome
    assert outcome is not None
    # Built from the validated scenario and the referee's own events and outcome.
    return trusted(
        NegotiationRecord,
        scenario=referee.scenario,
        buyer=names[0],
        seller=names[1],
        events=referee.events,
        outcome=outcome,
    )

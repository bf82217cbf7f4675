"""An adversarial seat's attack on the scenario generator: everything it reads, our generator.

The seat parses the scenario id for a seed and an index, then searches seeds and indexes for a
scenario with the item, list price, deadline and own value it was given. Every match gives it a
guess of the other side's value (and, through ``seat_rng``, of the house agent's draws). Before
served scenarios were drawn under a secret, the id alone gave the answer, and the search found
it for any small seed.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from dealroom.protocol import Role, Scenario
from dealroom.protocol.generator import DEFAULT_SPEC, scenario_at

SEEDS = 2_000
INDEXES = 3


def _candidates(observation: dict[str, Any]) -> list[tuple[int, int]]:
    scenario = observation["scenario"]
    found = re.fullmatch(r"(?:low|mid|high)-(\d+)-(\d+)", scenario["id"])
    named = [(int(found[1]), int(found[2]))] if found else []
    return named + [(seed, index) for seed in range(SEEDS) for index in range(INDEXES)]


def matches(observation: dict[str, Any]) -> list[Scenario]:
    """Every generated scenario consistent with what the seat read (an observation as JSON)."""
    public = observation["scenario"]
    role: Role = observation["role"]
    spec = DEFAULT_SPEC.model_copy(update={"deadline": float(public["deadline"])})
    own = Decimal(str(observation["private_value"]))
    price = Decimal(str(public["list_price"]))
    found = []
    for seed, index in _candidates(observation):
        guess = scenario_at(seed, index, public["tier"], spec)
        if (guess.item.name, guess.list_price, guess.private_value(role)) == (
            public["item"]["name"],
            price,
            own,
        ):
            found.append(guess)
    return found


def guesses(observation: dict[str, Any]) -> set[Decimal]:
    """The other side's values the attack arrives at (empty: it found nothing)."""
    other: Role = "seller" if observation["role"] == "buyer" else "buyer"
    return {guess.private_value(other) for guess in matches(observation)}


def is_opaque(scenario_id: str) -> bool:
    """A scenario id that is a tier and 64 bits of hash: no seed, no index."""
    return re.fullmatch(r"(low|mid|high)-[0-9a-f]{16}", scenario_id) is not None

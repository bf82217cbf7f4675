"""Run secrets: the key under which served scenarios and house randomness are drawn.

A seat can run our scenario generator, and it reads the item, the list price and its own value.
If scenarios came from a small integer seed, a search over seeds would give it the other side's
value and the house agent's future choices. Served play therefore draws everything under a
``Secret`` of at least 128 bits (256 by default, from ``secrets``) that no seat ever sees: each
uniform number is HMAC-SHA256 of the secret with the scenario index and the field's name, so
knowing the generator and every number a seat reads gives no way to compute the rest.

A ``Seed`` is where a run's randomness comes from: a ``Secret`` (served play, tournaments), or a
plain ``int``, the public derivation for fixed, published scenario sets, tests and training
(anyone can recompute everything from it; never serve it to a seat that should not).

A tournament stores its secret with the run (``seed_json``), so a benchmark can publish it
afterwards and anyone can then reproduce the run byte for byte. A served room's negotiation is
stored with its own key instead (``negotiation_seed``): it replays that negotiation, but a seat
that reads the store (the stdio server runs as the seat's own user) learns nothing of the
series' later scenarios from it.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dealroom.protocol.errors import DealroomError

MIN_BYTES = 16
"""The weakest secret accepted: 128 bits."""

DEFAULT_BYTES = 32
"""A fresh secret's size: 256 bits."""

SECRET_ENV = "DEALROOM_SECRET"
"""Environment variable the CLI reads a secret from (``--secret`` wins)."""

_HEX = re.compile(r"[0-9a-fA-F]*")


class SecretError(DealroomError, ValueError):
    """A secret that is not hex, or weaker than 128 bits."""

    kind = "secret"


PUBLISHED_SECRET = "5eed" * 8
"""The example secret the README and docs publish, so that anyone reproduces their output: it
is for offline runs (``dealroom match``, ``tournament``, ``openenv serve``), whose secret is
there to be published; every served entry point refuses it (``Secret.chosen``), as it refuses
any secret with a pattern."""


@dataclass(frozen=True, slots=True)
class Secret:
    """A run's secret key. Its repr never shows the key (it may end up in a log line)."""

    key: bytes

    def __post_init__(self) -> None:
        if len(self.key) < MIN_BYTES:
            raise SecretError(
                f"a secret needs at least {MIN_BYTES * 8} bits ({MIN_BYTES * 2} hex digits); "
                f"this one has {len(self.key) * 8}"
            )

    @classmethod
    def new(cls) -> Secret:
        """A fresh random secret of 256 bits."""
        return cls(secrets.token_bytes(DEFAULT_BYTES))

    @classmethod
    def from_hex(cls, text: str) -> Secret:
        """Parse a hex secret; SecretError (one line) if it is not hex or under 128 bits."""
        text = text.strip()
        if not _HEX.fullmatch(text) or len(text) % 2:
            raise SecretError("a secret must be an even number of hex digits (0-9, a-f)")
        return cls(bytes.fromhex(text))

    @classmethod
    def chosen(cls, text: str) -> Secret:
        """A secret someone gives (``--secret``, ``$DEALROOM_SECRET``, the admin API): parsed
        as ``from_hex`` does, and refused (SecretError, one line, the secret not echoed) when it
        is obviously not from a CSPRNG: a shorter pattern repeated (one byte over and over,
        ``deadbeef`` four times), a run counting by a fixed step, or fewer than 4 distinct
        bytes. Each is as good as public: a guess checked offline against an opaque id. A
        secret read back from a store is not refused (``from_hex``)."""
        secret = cls.from_hex(text)
        draw = (
            "draw one from a CSPRNG (python -c 'import secrets; print(secrets.token_hex(32))') "
            "or give none to have one drawn"
        )
        if secret.key == bytes.fromhex(PUBLISHED_SECRET):
            raise SecretError(
                "this is the published example secret, for offline runs that others replay "
                f"(match, tournament); a served room keeps its secret from its seats: {draw}"
            )
        if _obviously_weak(secret.key):
            raise SecretError(
                "this secret repeats a pattern, so a seat could guess it and compute the other "
                f"side's value: {draw}"
            )
        return secret

    def hex(self) -> str:
        """The key as hex (what ``from_hex`` reads back)."""
        return self.key.hex()

    def derive(self, label: str) -> bytes:
        """HMAC-SHA256 of the key and ``label``: 32 bytes no one can compute without the key."""
        return hmac.new(self.key, label.encode(), hashlib.sha256).digest()

    def __repr__(self) -> str:
        return "Secret(<hidden>)"


def _obviously_weak(key: bytes) -> bool:
    periodic = any(key[p:] == key[:-p] for p in range(1, len(key) // 2 + 1))
    steps = {(b - a) % 256 for a, b in itertools.pairwise(key)}
    return periodic or len(steps) == 1 or len(set(key)) < 4


Seed = int | Secret
"""Where a run's randomness comes from: a public int seed, or a secret (served play)."""


def negotiation_seed(seed: Seed, scenario_id: str) -> Seed:
    """What one negotiation of a served series draws its house randomness under, and is stored
    with to replay it: under a secret, a key of its own (HMAC-SHA256 of the secret and the
    scenario id), from which neither the secret nor any other negotiation's draws or scenario
    can be computed; a public int seed is public anyway and stays itself."""
    match seed:
        case Secret():
            return Secret(seed.derive(f"dealroom:negotiation:{scenario_id}"))
        case int():
            return seed


def seed_json(seed: Seed) -> dict[str, Any]:
    """The seed as stored with a run: ``{"secret": HEX}`` or ``{"seed": N}``."""
    match seed:
        case Secret():
            return {"secret": seed.hex()}
        case int():
            return {"seed": seed}


def seed_from_json(stored: Mapping[str, Any], default: Seed = 0) -> Seed:
    """The seed ``seed_json`` stored (``default`` when neither key is there)."""
    if "secret" in stored:
        return Secret.from_hex(str(stored["secret"]))
    if "seed" in stored:
        return int(stored["seed"])
    return default

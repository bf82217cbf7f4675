"""Numbers for numeric learners: a seat's observation as a vector, a vector as a decision.

Observation (float32, every price a fraction of the list price, 0 where absent):

====  ==========================================================
 0    role: 0 buyer, 1 seller
 1    own private value
 2    time: clock / deadline, in [0, 1]
 3    1 if the other side has a live offer
 4    the other side's live offer
 5    1 if the seat has a live offer
 6    the seat's own live offer
 7    the other side's first offer (its opening)
====  ==========================================================

Action (float32 in [-1, 1]^2): ``a[0]`` picks the move, ``a[1]`` the price.

- ``a[0] < -1/3``: wait (sleep until the other side moves, or ``wait`` seconds);
- ``-1/3 <= a[0] < 1/3``: offer ``(1 + a[1])`` times the list price (at least one cent);
- ``a[0] >= 1/3``: accept the other side's live offer (refused, and counted as an invalid
  action, when there is none).

``WAIT``, ``OFFER`` and ``ACCEPT`` are the canonical ``a[0]`` values; ``action(kind, fraction)``
builds a vector.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
from gymnasium.spaces import Box

from dealroom.protocol import (
    Accept,
    Action,
    Decision,
    MakeOffer,
    Observation,
    Rules,
    offer_of,
    to_cents,
)
from dealroom.protocol._base import CENT

WAIT, OFFER, ACCEPT = -1.0, 0.0, 1.0
OBS_SIZE = 8


def observation_space(rules: Rules) -> Box:
    """The Box every observation lies in (prices up to the referee's price cap)."""
    cap = float(rules.max_price_multiple)
    high = np.array([1, cap, 1, 1, cap, 1, cap, cap], dtype=np.float32)
    return Box(low=np.zeros(OBS_SIZE, dtype=np.float32), high=high, dtype=np.float32)


def action_space() -> Box:
    """[-1, 1]^2: the move, then the offer price."""
    return Box(low=-1.0, high=1.0, shape=(2,), dtype=np.float32)


def action(kind: float, fraction: float = 1.0) -> np.ndarray:
    """An action vector: ``kind`` is WAIT, OFFER or ACCEPT; ``fraction`` of the list price."""
    return np.array([kind, min(max(fraction - 1.0, -1.0), 1.0)], dtype=np.float32)


def encode(observation: Observation, rules: Rules) -> np.ndarray:
    """The observation vector of one seat."""
    list_price = observation.scenario.list_price
    cap = float(rules.max_price_multiple)
    role = observation.role

    def frac(price: Decimal) -> float:
        fraction = float(price / list_price)
        return fraction if fraction < cap else cap

    theirs = mine = None
    for offer in observation.live_offers:  # one pass instead of their_offer and my_offer
        if offer.by == role:
            mine = offer
        else:
            theirs = offer
    opening = next(
        (o.price for e in observation.events if (o := offer_of(e)) is not None and o.by != role),
        None,
    )
    vector = [
        0.0 if role == "buyer" else 1.0,
        frac(observation.private_value),
        min(max(observation.now / observation.scenario.deadline, 0.0), 1.0),
        0.0 if theirs is None else 1.0,
        0.0 if theirs is None else frac(theirs.price),
        0.0 if mine is None else 1.0,
        0.0 if mine is None else frac(mine.price),
        0.0 if opening is None else frac(opening),
    ]
    return np.asarray(vector, dtype=np.float32)


def decode(vector: np.ndarray, observation: Observation, wait: float | None) -> Decision:
    """The decision an action vector stands for."""
    # Python floats (exactly the array's values): numpy scalars are several times slower here.
    values = np.asarray(vector, dtype=np.float64).tolist()
    move, price = (min(max(x, -1.0), 1.0) if math.isfinite(x) else 0.0 for x in values)
    actions: tuple[Action, ...] = ()
    if -1 / 3 <= move < 1 / 3:
        amount = to_cents(Decimal(repr(round(1.0 + price, 6))) * observation.scenario.list_price)
        actions = (MakeOffer(price=max(amount, CENT)),)
    elif move >= 1 / 3:
        theirs = observation.their_offer
        actions = (Accept(offer_id="none" if theirs is None else theirs.offer_id),)
    return Decision(actions=actions, wait=wait)

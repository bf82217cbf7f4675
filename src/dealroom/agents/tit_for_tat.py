"""Relative tit-for-tat (Faratin, Sierra & Jennings 1998) with AC_next acceptance.

After the other side moves from ``x_prev`` to ``x_last``, the next own offer is
``own_last * x_prev / x_last``: the same relative concession (a retreat is answered by a
retreat), clipped between the own opening and reservation value. Two pure tit-for-tat agents
would wait for each other forever, so the offer is never tougher than a late-conceding
time-dependent floor ``opening + (reservation - opening) * t^(1/e)``.

Prices are fractions of the list price, so behaviour is the same at $50 and $500,000.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from decimal import Decimal

from dealroom.agents._pricing import as_money, clamp, reservation_fraction, safe_price
from dealroom.agents._tactics import AcNext, OfferLog, progress_until
from dealroom.protocol import AgentFactory, Decision, Observation, Role, SeatView


@dataclass(frozen=True, slots=True)
class TitForTatParams:
    """Parameters of relative tit-for-tat; opening prices are fractions of the list price."""

    floor_e: float = 0.2
    """Exponent of the minimum-concession floor (0: none, pure tit-for-tat; 0.2: Boulware)."""
    seller_open: float = 1.3
    buyer_open: float = 0.5
    step: float = 10.0
    """Seconds to wait for the other side before looking at the floor again."""
    margin: float = 10.0
    """Seconds before the deadline by which the floor reaches the reservation value."""


class TitForTat:
    """Mirror the other side's relative concessions; concede along a floor near the deadline."""

    def __init__(self, view: SeatView, params: TitForTatParams) -> None:
        self.role: Role = view.role
        self.reservation = view.private_value
        self.list_price = view.scenario.list_price
        self.params = params
        self.ac_next = AcNext.of(view.role, self.reservation, self.list_price, params.step)
        self.end = reservation_fraction(view)
        if view.role == "seller":
            self.start = max(params.seller_open, self.end)
            self.low, self.high = self.end, self.start
        else:
            self.start = min(params.buyer_open, self.end)
            self.low, self.high = self.start, self.end
        self.last = self.start
        """Own latest target, a fraction of the list price."""
        self.reference: Decimal | None = None
        """The other side's latest offer when the own target was last set."""
        self.log = OfferLog(view.role)

    def floor(self, t: float) -> float:
        """The toughest offer allowed at normalised time t."""
        e = self.params.floor_e
        concession = t ** (1 / e) if e > 0 else 0.0
        return self.start + (self.end - self.start) * concession

    def target(self, t: float, ratio: float) -> float:
        """Next own offer as a fraction of the list price, after the other side moved by
        ``ratio`` (its earlier offer over its latest)."""
        target = self.last * ratio
        floor = self.floor(t)
        target = min(target, floor) if self.role == "seller" else max(target, floor)
        return clamp(target, self.low, self.high)

    def act(self, observation: Observation) -> Decision:
        """Reciprocate, then accept by AC_next or offer the new target."""
        ratio = 1.0
        if self.log.update(observation.events):
            latest = self.log.theirs[-1]
            if self.reference is not None:
                ratio = float(self.reference / latest)
            self.reference = latest
        self.last = self.target(progress_until(observation, self.params.margin), ratio)
        mine = safe_price(self.role, as_money(self.last, self.list_price), self.reservation)
        return self.ac_next.reply(observation, mine)


def tit_for_tat(params: TitForTatParams) -> AgentFactory:
    """An AgentFactory for the given parameters."""

    def factory(view: SeatView, rng: random.Random) -> TitForTat:
        del rng  # deterministic tactic
        return TitForTat(view, params)

    return factory

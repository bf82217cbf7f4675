"""Nice tit-for-tat (Baarslag, Hindriks & Jonker 2011), in one-issue price space.

Reciprocate the other side's concession measured against the estimated Nash point: if the other
side has come a fraction phi of the way from its first offer to that point, come the same
fraction phi of the own way from the opening to it. Progress is measured from the other side's
best offer so far, so a retreat by the other side is not answered by one. Never ask for less than
the other side has already offered, and, as a bonus near the deadline, never be tougher than a
late-conceding time-dependent floor, so that two reciprocating agents do not wait for each other
forever.

The Nash point of a bilateral price negotiation with linear utilities is the midpoint of the
zone of agreement (reservation to reservation). The other side's reservation value is unknown:
the estimate assumes it left itself as much room between its first offer and its reservation
as this agent did (so the first estimate is the midpoint of the two openings), and raises it to
the other side's best offer once that is better.

Prices are fractions of the list price, so behaviour is the same at $50 and $500,000.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from dealroom.agents._pricing import as_money, clamp, reservation_fraction, safe_price
from dealroom.agents._tactics import AcNext, OfferLog, progress_until
from dealroom.protocol import AgentFactory, Decision, Observation, Role, SeatView


@dataclass(frozen=True, slots=True)
class NiceTftParams:
    """Parameters of nice tit-for-tat; opening prices are fractions of the list price."""

    floor_e: float = 0.2
    """Exponent of the deadline floor (0: no floor; 0.2: Boulware)."""
    seller_open: float = 1.3
    buyer_open: float = 0.5
    step: float = 10.0
    """Seconds to wait for the other side before looking at the floor again."""
    margin: float = 10.0
    """Seconds before the deadline by which the floor reaches the reservation value."""


class NiceTft:
    """Match the other side's progress towards the estimated Nash point.

    Internally every price fraction is multiplied by ``sign`` (+1 seller, -1 buyer), so that
    higher is always better for this agent and one set of formulas serves both roles.
    """

    def __init__(self, view: SeatView, params: NiceTftParams) -> None:
        self.role: Role = view.role
        self.reservation = view.private_value
        self.list_price = view.scenario.list_price
        self.params = params
        self.ac_next = AcNext.of(view.role, self.reservation, self.list_price, params.step)
        self.sign = 1.0 if view.role == "seller" else -1.0
        opening = params.seller_open if view.role == "seller" else params.buyer_open
        self.res = self.sign * reservation_fraction(view)
        self.start = max(self.sign * opening, self.res)
        self.first: float | None = None
        """The other side's first offer (signed fraction)."""
        self.best = -float("inf")
        """The other side's best offer so far (signed fraction)."""
        self.log = OfferLog(view.role)

    def nash(self) -> float:
        """Estimated Nash point: the midpoint of own reservation and the other side's."""
        assert self.first is not None
        their_reservation = max(self.first + (self.start - self.res), self.best)
        return max((self.res + their_reservation) / 2, self.res)

    def floor(self, t: float) -> float:
        """The toughest offer allowed at normalised time t."""
        e = self.params.floor_e
        concession = t ** (1 / e) if e > 0 else 0.0
        return self.start + (self.res - self.start) * concession

    def target(self, t: float) -> float:
        """Next own offer (signed fraction)."""
        if self.first is None:
            return self.floor(t)
        nash = self.nash()
        room = nash - self.first
        progress = 1.0 if room <= 0 else clamp((self.best - self.first) / room, 0.0, 1.0)
        reciprocal = self.start + progress * (nash - self.start)
        target = max(min(reciprocal, self.floor(t)), self.best)
        return clamp(target, self.res, self.start)

    def act(self, observation: Observation) -> Decision:
        """Reciprocate, then accept by AC_next or offer the new target."""
        new = self.log.update(observation.events)
        if new:
            theirs = self.log.theirs
            if self.first is None:
                self.first = self.sign * float(theirs[0] / self.list_price)
            for price in theirs[len(theirs) - new :]:
                self.best = max(self.best, self.sign * float(price / self.list_price))
        fraction = self.sign * self.target(progress_until(observation, self.params.margin))
        mine = safe_price(self.role, as_money(fraction, self.list_price), self.reservation)
        return self.ac_next.reply(observation, mine)


def nice_tft(params: NiceTftParams) -> AgentFactory:
    """An AgentFactory for the given parameters."""

    def factory(view: SeatView, rng: random.Random) -> NiceTft:
        del rng  # deterministic tactic
        return NiceTft(view, params)

    return factory

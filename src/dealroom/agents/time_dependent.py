"""Time-dependent tactics (Faratin, Sierra & Jennings 1998) with AC_next acceptance.

Concession f(t) = k + (1 - k) t^(1/e); seller asks P_s - (P_s - c) f(t), buyer bids
P_b + (v - P_b) f(t). Hardliner e = 0, Boulware e = 0.2, Linear e = 1, Conceder e = 2.
Prices are fractions of the list price, so behaviour is the same at $50 and $500,000.

Such a curve reveals its end: an opponent that watches a few offers can extrapolate it to the
reservation value (linear and conceder to within a cent by 39 s of 120). ``noise`` hides it: the
agent draws, once per negotiation from its own seeded generator, how far short of its reservation
its curve ends, uniformly in [0, noise] of the gap between opening and reservation, so the
extrapolated end only bounds the reservation within a band of that width. The price of hiding
is that the agent accepts nothing past that end. Off (0) by default: records stay identical.

``finish`` ends the curve before the deadline: at that share of it the agent reaches its last
price and stands there. A person on the wall clock needs seconds to read an offer and answer
it; boulware (e = 0.2) on a 90 s deadline makes its acceptable offers in the last second or two,
which no person can take. ``paced`` (linear, finishing at 0.7 of the deadline, a new price
every 15 s) is the house agent for people's time (docs/web.md). 1 (the deadline) by default.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from decimal import Decimal

from dealroom.agents._pricing import clamp, money_of, reservation_fraction, safe_price
from dealroom.agents._tactics import AcNext
from dealroom.protocol import Decision, Observation, Role, SeatView


@dataclass(frozen=True, slots=True)
class TimeDependentParams:
    """Parameters of a time-dependent tactic; opening prices are fractions of the list price."""

    e: float = 1.0
    k: float = 0.0
    seller_open: float = 1.3
    buyer_open: float = 0.5
    step: float = 10.0
    """Seconds to wait for the other side before conceding again anyway."""
    noise: float = 0.0
    """Largest share of the opening-to-reservation gap by which the curve may end short of the
    reservation (drawn once per negotiation); 0: the classic tactic."""
    finish: float = 1.0
    """Share of the deadline at which the curve reaches its end (then the agent stands at its
    last price); 1: the classic tactic."""


class TimeDependent:
    """Concede along f(t); accept an offer at least as good as the next own offer."""

    def __init__(
        self, view: SeatView, params: TimeDependentParams, rng: random.Random | None = None
    ) -> None:
        self.role: Role = view.role
        self.reservation = view.private_value
        self.list_price = view.scenario.list_price
        self.params = params
        self.ac_next = AcNext.of(view.role, self.reservation, self.list_price, params.step)
        r = reservation_fraction(view)
        opening = params.seller_open if view.role == "seller" else params.buyer_open
        # Never open on the losing side of one's own value.
        self.start = max(opening, r) if view.role == "seller" else min(opening, r)
        hold = params.noise * rng.random() if params.noise > 0 and rng is not None else 0.0
        self.end = r + (self.start - r) * hold
        # Constants of price_at, computed once (the same float operations as there).
        self._span = self.end - self.start
        self._list_cents = int(self.list_price * 100)
        self._deadline = view.scenario.deadline * params.finish
        e, k = params.e, params.k
        self._k, self._rest = k, 1 - k
        self._power = None if e <= 0 else 1 / e

    def concession(self, t: float) -> float:
        """f(t) in [0, 1]."""
        power = self._power
        if power is None:
            return self.params.k
        return self._k + self._rest * t**power

    def price_at(self, t: float) -> Decimal:
        """Own offer at normalised time t, never losing money."""
        fraction = self.start + self._span * self.concession(t)
        price = money_of(fraction, self.list_price, self._list_cents)
        return safe_price(self.role, price, self.reservation)

    def worst_accepted(self, now: float) -> Decimal:
        """The least favourable price this agent accepts when woken at clock time ``now``,
        whatever happened before (it reads nothing but the clock). Its own offers are never
        better for the other side, so an oracle can bound a best response with it
        (``dealroom.play.oracle``)."""
        return self.ac_next.worst(self.price_at(clamp(now / self._deadline, 0.0, 1.0)))

    def act(self, observation: Observation) -> Decision:
        """Accept by AC_next, else offer the price for now (if it moved)."""
        # Normalised time t in [0, 1], the deadline read once per negotiation.
        mine = self.price_at(clamp(observation.now / self._deadline, 0.0, 1.0))
        return self.ac_next.reply(observation, mine)


def time_dependent(params: TimeDependentParams):
    """An AgentFactory for the given parameters."""

    def factory(view: SeatView, rng: random.Random) -> TimeDependent:
        # The generator is drawn from only with noise: without it the tactic is deterministic.
        return TimeDependent(view, params, rng)

    return factory

"""ZI-C, zero intelligence with a budget constraint (Gode & Sunder 1993).

Every wake draws a fresh quote uniformly between the own reservation value and a bound (the
seller in [cost, seller_high], the buyer in [buyer_low, value], fractions of the list price),
accepts the other side's offer if it does not lose money and is at least as good as that quote,
and otherwise offers the quote. The floor that any strategy with a brain should beat.

The only randomness is the generator handed to the factory, so a seed fixes every quote.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from decimal import Decimal

from dealroom.agents._pricing import as_money, reservation_fraction, safe_price
from dealroom.agents._tactics import AcNext
from dealroom.protocol import AgentFactory, Decision, Observation, Role, SeatView


@dataclass(frozen=True, slots=True)
class ZicParams:
    """Quote bounds as fractions of the list price."""

    seller_high: float = 1.3
    """Highest ask a seller quotes."""
    buyer_low: float = 0.5
    """Lowest bid a buyer quotes."""
    step: float = 10.0
    """Seconds to wait for the other side before quoting again."""


class Zic:
    """Random quotes that never lose money."""

    def __init__(self, view: SeatView, params: ZicParams, rng: random.Random) -> None:
        self.role: Role = view.role
        self.reservation = view.private_value
        self.list_price = view.scenario.list_price
        self.step = params.step
        # A fresh quote every time: a small move is as random as a big one.
        self.ac_next = AcNext.of(
            view.role, self.reservation, self.list_price, params.step, min_move=Decimal(0)
        )
        self.rng = rng
        r = reservation_fraction(view)
        if view.role == "seller":
            self.low, self.high = r, max(params.seller_high, r)
        else:
            self.low, self.high = min(params.buyer_low, r), r

    def act(self, observation: Observation) -> Decision:
        """Draw a quote; accept anything at least as good, else offer it."""
        quote = self.low + (self.high - self.low) * self.rng.random()
        mine = safe_price(self.role, as_money(quote, self.list_price), self.reservation)
        return self.ac_next.reply(observation, mine)


def zic(params: ZicParams) -> AgentFactory:
    """An AgentFactory for the given parameters."""

    def factory(view: SeatView, rng: random.Random) -> Zic:
        return Zic(view, params, rng)

    return factory

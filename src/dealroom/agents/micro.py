"""MiCRO (de Jonge, IJCAI 2022): concede one grid step only in return for something new.

The own offers walk down a fixed grid of ``steps`` equal steps from the opening to the
reservation value. A new, less favourable offer is made only while the other side has made at
least as many distinct offers as this side has; otherwise the last offer stands. An offer at
least as good as the own next offer is accepted.

Two choices adapt the published strategy (defined on a finite outcome space) to a price:

- The grid has a fixed number of steps rather than a fixed width. With equal widths the side
  with less room between opening and reservation runs out of new offers first, and then neither
  MiCRO ever moves again; with equal counts two MiCROs always cross while they still have steps
  left whenever a deal is possible.
- Offers count as distinct only if they differ by at least ``MIN_MOVE`` of the list price (they
  fall in different cells of that width), so an opponent cannot buy a whole grid step with a
  one-cent move.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from decimal import Decimal

from dealroom.agents._pricing import as_money, reservation_fraction, safe_price
from dealroom.agents._tactics import MIN_MOVE, AcNext, OfferLog
from dealroom.protocol import AgentFactory, Decision, Observation, SeatView

_CELL = float(MIN_MOVE)


@dataclass(frozen=True, slots=True)
class MicroParams:
    """Parameters of MiCRO; opening prices are fractions of the list price."""

    steps: int = 16
    """Number of equal steps from the opening to the reservation value."""
    seller_open: float = 1.3
    buyer_open: float = 0.5
    step: float = 10.0
    """Seconds to wait for the other side before looking again."""


def price_grid(view: SeatView, params: MicroParams) -> tuple[Decimal, ...]:
    """Own offers, best first: the opening, then equal steps down to the reservation value."""
    end = reservation_fraction(view)
    opening = params.seller_open if view.role == "seller" else params.buyer_open
    start = max(opening, end) if view.role == "seller" else min(opening, end)
    prices: list[Decimal] = []
    for i in range(params.steps + 1):
        fraction = start + (end - start) * i / params.steps
        price = safe_price(
            view.role, as_money(fraction, view.scenario.list_price), view.private_value
        )
        if not prices or price != prices[-1]:
            prices.append(price)
    return tuple(prices)


class Micro:
    """Concede a grid step only when the other side has made as many distinct offers."""

    def __init__(self, view: SeatView, params: MicroParams) -> None:
        self.role = view.role
        self.reservation = view.private_value
        self.list_price = view.scenario.list_price
        self.params = params
        # Every grid step is a deliberate offer that the other side's count depends on.
        self.ac_next = AcNext.of(
            view.role, self.reservation, self.list_price, params.step, min_move=Decimal(0)
        )
        self.grid = price_grid(view, params)
        self.position = -1
        """Index of the least favourable grid offer made so far (-1: none yet)."""
        self.cells: set[int] = set()
        """Cells (of width MIN_MOVE, in fractions of the list price) of the other side's offers."""
        self.counted = 0
        """How many of the other side's offers are in ``cells``."""
        self.log = OfferLog(view.role)

    def act(self, observation: Observation) -> Decision:
        """Count the other side's new offers, then accept by AC_next or make the next offer."""
        self.log.update(observation.events)
        theirs = self.log.theirs
        for price in theirs[self.counted :]:
            self.cells.add(math.floor(float(price / self.list_price) / _CELL))
        self.counted = len(theirs)
        sent = self.position + 1
        if sent < len(self.grid) and len(self.cells) >= sent:
            self.position = sent
        mine = self.grid[self.position]
        return self.ac_next.reply(observation, mine)


def micro(params: MicroParams) -> AgentFactory:
    """An AgentFactory for the given parameters."""

    def factory(view: SeatView, rng: random.Random) -> Micro:
        del rng  # deterministic tactic
        return Micro(view, params)

    return factory

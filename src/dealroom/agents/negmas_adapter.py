"""A NegMAS SAO negotiator in a dealroom seat (``negmas:CLASS``, see ``negmas_specs``).

NegMAS negotiates over outcomes with utility functions; a dealroom seat over prices with one
private value. The mapping (docs/agents.md, "Published opponents"):

- **Outcomes.** One integer issue ``price`` of ``points`` values: grid point ``k`` is the price
  ``L (low + (high - low) (k - 1) / (points - 1))`` in cents, by default 201 prices from 0.5 L
  to 1.5 L in steps of 0.5% of L. Every generated value lies inside it (between 0.55 L and
  1.1 L), its ends are the openings of dealroom's own tactics (0.5 L; 1.3 L for a seller), and
  a discrete space is what the Genius agents need (they sort or enumerate the outcomes; 201 of
  them cost a few milliseconds a negotiation). A price the other side offers off the grid is
  snapped to the grid point on its worse side for this seat, so an accepted price is never
  worse than the one the negotiator judged (beyond the grid's ends, where it could be, the
  adapter walks away instead).
- **Utility.** Affine in price and in [0, 1]: the buyer's ``(points - k) / (points - 1)``, the
  seller's ``(k - 1) / (points - 1)``; the reserved value (the utility of no deal) is the
  utility of the seat's own private value.
- **Time.** NegMAS's relative time is our clock's ``now / deadline``: the negotiator runs in a
  private ``SAOMechanism`` whose clock is the negotiation clock (``time_limit`` the deadline,
  no step limit) and which takes one offer per step, so its step counts the offers of both
  sides.
- **Turns.** The seller opens (SAO's first negotiator, dealroom's first mover); a buyer woken
  with no offer on the table waits ``step`` seconds for one before opening. Each wake is one
  turn of the other side (its live offer, standing or new, injected as its action) and then one
  of the negotiator, called by the mechanism as in NegMAS's own runs: a proposal becomes
  ``MakeOffer`` (sent every turn, as SAO offers every step), ``ACCEPT_OFFER`` accepts the live
  offer, ``END_NEGOTIATION`` (or no proposal) walks away, ``WAIT`` sleeps ``step`` seconds.
- **No rules of its own.** A negotiator that accepts or offers at a loss does so here too, as in
  NegMAS (the report counts IR violations); ``guard=1`` refuses both instead.
- **Randomness.** NegMAS agents draw from the global ``random`` module; the adapter swaps in the
  seat's own stream (seeded from the seat's generator) for each call and puts the global state
  back, so a run is reproducible under its secret and leaves other code's draws alone.
"""

from __future__ import annotations

import importlib
import random
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from functools import cache
from typing import Any

from dealroom.agents._pricing import acceptable, better_or_equal, safe_price
from dealroom.protocol import Accept, Decision, MakeOffer, Observation, Role, SeatView, WalkAway
from dealroom.protocol._base import CENT

FIRST: Role = "seller"
"""The seat that is SAO's first negotiator (dealroom's default first mover)."""


@dataclass(frozen=True, slots=True)
class PriceGrid:
    """``points`` prices from ``low`` to ``high`` times the list price, evenly spaced: grid point
    ``k`` (1 .. points) is ``L (low + (high - low) (k - 1) / (points - 1))``."""

    list_price: Decimal
    low: Decimal = Decimal("0.5")
    high: Decimal = Decimal("1.5")
    points: int = 201

    @property
    def unit(self) -> Decimal:
        """The price step."""
        return self.list_price * (self.high - self.low) / (self.points - 1)

    def price(self, k: int) -> Decimal:
        """The price of grid point ``k``, in cents (half up)."""
        exact = self.list_price * self.low + self.unit * (k - 1)
        return exact.quantize(CENT, rounding=ROUND_HALF_UP)

    def position(self, price: Decimal) -> Decimal:
        """Where ``price`` lies on the grid (1 at ``low``, ``points`` at ``high``; beyond them
        off the grid)."""
        return (price - self.list_price * self.low) / self.unit + 1

    def point(self, role: Role, price: Decimal) -> int:
        """The grid point of a price the other side offered: on the price's worse side for
        ``role`` (up for the buyer, down for the seller), within the grid."""
        rounding = ROUND_CEILING if role == "buyer" else ROUND_FLOOR
        k = int(self.position(price).to_integral_value(rounding=rounding))
        return min(max(k, 1), self.points)

    def utility(self, role: Role, k: float) -> float:
        """``role``'s utility of grid point ``k`` (a fractional ``k`` for a price between
        points): affine, 1 at the role's best point and 0 at its worst."""
        span = self.points - 1
        return (self.points - k) / span if role == "buyer" else (k - 1) / span

    def reserved(self, role: Role, private_value: Decimal) -> float:
        """The utility of no deal: that of the seat's own private value."""
        return self.utility(role, float(self.position(private_value)))


def _negmas(module: str) -> Any:
    """A NegMAS module, imported when first used (the negmas extra is optional); Any because
    NegMAS ships no type information."""
    return importlib.import_module(module)


def issues(points: int) -> list[Any]:
    """NegMAS's issue space: one integer issue ``price`` from 1 to ``points``."""
    outcomes = _negmas("negmas.outcomes")
    return [outcomes.make_issue(values=(1, points), name="price")]


def ufun(grid: PriceGrid, role: Role, private_value: Decimal, space: list[Any]) -> Any:
    """``role``'s NegMAS utility function on ``space`` (``issues(grid.points)``)."""
    preferences = _negmas("negmas.preferences")
    value_fun = _negmas("negmas.preferences.value_fun")

    span = grid.points - 1
    slope, bias = (-1 / span, grid.points / span) if role == "buyer" else (1 / span, -1 / span)
    return preferences.LinearAdditiveUtilityFunction(
        values=[value_fun.AffineFun(slope, bias=bias)],
        issues=space,
        reserved_value=grid.reserved(role, private_value),
    )


@cache
def clocked_mechanism() -> type[Any]:
    """``SAOMechanism`` whose clock is set from outside (``clock``, in seconds) instead of
    read from the wall: NegMAS's own protocol, on the negotiation clock. Calls are made in the
    caller's thread (no timeouts: the negotiation clock, not the wall, limits a turn)."""
    sao = _negmas("negmas.sao")

    class ClockedSAOMechanism(sao.SAOMechanism):
        clock: float = 0.0

        @property
        def time(self) -> float:
            return self.clock

        @property
        def remaining_time(self) -> float | None:
            return max(0.0, self.time_limit - self.clock)

    return ClockedSAOMechanism


def mechanism(deadline: float, points: int, **kwargs: Any) -> Any:
    """A clocked SAO mechanism over the price grid, one offer per step, ``deadline`` seconds."""
    made = clocked_mechanism()(
        issues=issues(points),
        time_limit=deadline,
        n_steps=None,
        one_offer_per_step=True,
        **kwargs,
    )
    made.set_sync_call(True)
    return made


def _placeholder_class() -> type[Any]:
    sao = _negmas("negmas.sao")

    class OtherSeat(sao.SAONegotiator):
        """The other seat in the private mechanism: its moves are injected as actions."""

        def propose(self, state: Any, dest: str | None = None) -> Any:
            del state, dest
            return None

    return OtherSeat


placeholder_class = cache(_placeholder_class)


class GlobalStream:
    """One seat's state of the global ``random`` module, swapped in around each NegMAS call
    (``with stream: ...``) and out again after it."""

    def __init__(self, rng: random.Random) -> None:
        self._state = random.Random(rng.getrandbits(64)).getstate()

    def __enter__(self) -> None:
        self._saved = random.getstate()
        random.setstate(self._state)

    def __exit__(self, *exc: object) -> None:
        self._state = random.getstate()
        random.setstate(self._saved)


@dataclass(frozen=True, slots=True)
class NegmasParams:
    """The seat's side of the mapping (the spec's parameters)."""

    low: float = 0.5
    """The grid's lowest price, a fraction of the list price (the buyer's best outcome)."""
    high: float = 1.5
    """The grid's highest price, a fraction of the list price (the seller's best outcome)."""
    points: int = 201
    """Prices on the grid (201: steps of 0.5% of the list price)."""
    step: float = 20.0
    """Seconds to wait for the other side before taking a turn anyway (more than the 12 s of
    a turn of each side, so that two NegMAS seats alternate strictly)."""
    guard: bool = False
    """Refuse what loses money: an accept below the seat's own value becomes a walk-away, an
    offer past it is moved back to it. Off by default: the negotiator plays as in NegMAS (many
    Genius agents ignore the reserved value near the deadline; the report counts the IR
    violations)."""

    def grid(self, list_price: Decimal) -> PriceGrid:
        """The grid for a scenario of ``list_price``."""
        low, high = Decimal(repr(self.low)), Decimal(repr(self.high))
        return PriceGrid(list_price, low, high, self.points)


class NegmasAgent:
    """One NegMAS negotiator playing one seat of one negotiation."""

    def __init__(
        self,
        view: SeatView,
        negotiator_class: type[Any],
        rng: random.Random,
        params: NegmasParams = NegmasParams(),
    ) -> None:
        self.role: Role = view.role
        self.reservation = view.private_value
        self.grid = params.grid(view.scenario.list_price)
        self.step = params.step
        self.guard = params.guard
        self.random = GlobalStream(rng)
        with self.random:  # building may draw too (ids, a negotiator's own set-up)
            self.mechanism = mechanism(
                view.scenario.deadline,
                params.points,
                end_on_no_response=False,
                name=view.scenario.id,
            )
            self.other = placeholder_class()(name="buyer" if view.role == "seller" else "seller")
            own = ufun(self.grid, view.role, view.private_value, self.mechanism.issues)
            self.negotiator = negotiator_class(name=view.role)
            seats = [(self.negotiator, own), (self.other, None)]
            for seat, preferences in seats if view.role == FIRST else reversed(seats):
                self.mechanism.add(seat, preferences=preferences)
        self.turns = 0
        """The negotiator's turns so far."""
        self.waiting = False
        """Whether the negotiator answered WAIT on its last turn (it is asked again first)."""

    def _refused(self, price: Decimal, judged: Decimal) -> bool:
        """Whether accepting ``price``, which the negotiator judged as the grid price
        ``judged``, is refused: a price worse than judged (beyond the grid's end), or with the
        guard on, one that loses money."""
        if not better_or_equal(self.role, price, judged):
            return True
        return self.guard and not acceptable(self.role, price, self.reservation)

    def act(self, observation: Observation) -> Decision:
        """The other side's turn (its live offer), then the negotiator's, as NegMAS actions."""
        if observation.is_over:
            return Decision()
        theirs = observation.their_offer
        first = self.role == FIRST
        if not first and not self.turns and theirs is None and observation.now < self.step:
            return Decision(wait=self.step - observation.now)  # the opener's turn comes first
        sao = _negmas("negmas.sao")

        mech = self.mechanism
        mech.clock = observation.now
        with self.random:
            if not (first and not self.turns) and not self.waiting:
                offer = None if theirs is None else (self.grid.point(self.role, theirs.price),)
                mech.step({self.other.id: sao.SAOResponse(sao.ResponseType.REJECT_OFFER, offer)})
            state = mech.step()
        self.turns += 1
        self.waiting = bool(state.waiting)
        if state.agreement is not None:
            judged = self.grid.price(int(state.agreement[0]))
            if theirs is None or self._refused(theirs.price, judged):
                return Decision((WalkAway(),))
            return Decision((Accept(offer_id=theirs.offer_id),))
        if self.waiting:
            return Decision(wait=self.step)
        mine = next((o for who, o in state.new_offers if who == self.negotiator.id), None)
        if state.broken or mine is None:
            return Decision((WalkAway(),))
        price = self.grid.price(int(mine[0]))
        if self.guard:
            price = safe_price(self.role, price, self.reservation)
        return Decision((MakeOffer(price=price),), self.step)

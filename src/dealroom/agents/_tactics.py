"""Pieces shared by the scripted strategies: an incremental offer log, AC_next, and a clock.

Observations carry the whole event log; re-reading it on every wake would make a negotiation
quadratic in its length. ``OfferLog`` remembers how many events it has read and only looks at
the new ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

from dealroom.agents._pricing import clamp
from dealroom.protocol import Accept, Decision, Event, MakeOffer, Observation, Role, offer_of
from dealroom.protocol._base import CENT, trusted_builder


@dataclass(slots=True)
class OfferLog:
    """Prices each side has offered so far, oldest first, read incrementally from the events."""

    role: Role
    mine: list[Decimal] = field(default_factory=list[Decimal])
    theirs: list[Decimal] = field(default_factory=list[Decimal])
    seen: int = 0
    """Number of events already read."""

    def update(self, events: Sequence[Event]) -> int:
        """Read the events not seen yet; return how many new offers the other side made."""
        before = len(self.theirs)
        for event in events[self.seen :]:
            if (offer := offer_of(event)) is not None:
                (self.mine if offer.by == self.role else self.theirs).append(offer.price)
        self.seen = len(events)
        return len(self.theirs) - before


MIN_MOVE = Decimal("0.001")
"""Smallest change of the own live offer worth an action, as a fraction of the list price.

Without it a slowly conceding tactic shaves a cent at a time, and whether a sub-cent move shows
up at all depends on the price scale: the same negotiation at $50 and at $50,000 would take
different turns."""


SLACK = Decimal("0.000001")
"""How much worse than the own next offer an offer may be and still pass AC_next, as a fraction
of the list price: the precision of a price computed from a fraction (``as_money`` keeps nine
digits), so that the decision does not depend on the price scale."""


_accept = trusted_builder(Accept)
_offer = trusted_builder(MakeOffer)
_SLEEPS: dict[float, Decision] = {}
"""``Decision(wait=w)`` for each ``w`` seen (a few per process): frozen, so shared."""


@dataclass(frozen=True, slots=True)
class AcNext:
    """AC_next for one seat of one negotiation, else stand by the own price.

    Accept the other side's live offer if it does not lose money and is at least as good as
    the own price (up to ``SLACK``); otherwise offer the own price unless the own live offer is
    closer to it than ``min_move`` (a fraction of the list price). Always ask to be woken again
    after ``wait`` seconds. The two thresholds, amounts of money, are computed once per
    negotiation instead of on every wake of every scripted agent.
    """

    role: Role
    seller: bool
    """``role == "seller"``."""
    reservation: Decimal
    wait: float
    slack: Decimal
    """``SLACK`` of the list price."""
    move: Decimal
    """``min_move`` of the list price."""

    @classmethod
    def of(
        cls,
        role: Role,
        reservation: Decimal,
        list_price: Decimal,
        wait: float,
        *,
        min_move: Decimal = MIN_MOVE,
    ) -> AcNext:
        """AC_next for ``role`` with its reservation value, in a scenario of ``list_price``."""
        return cls(
            role, role == "seller", reservation, wait, list_price * SLACK, list_price * min_move
        )

    def worst(self, mine: Decimal) -> Decimal:
        """The least favourable price (in cents) that ``reply`` accepts against the own price
        ``mine``: ``mine`` less the slack, never past the reservation value."""
        if self.seller:
            bound = (mine - self.slack).quantize(CENT, rounding=ROUND_CEILING)
            return bound if bound > self.reservation else self.reservation
        bound = (mine + self.slack).quantize(CENT, rounding=ROUND_FLOOR)
        return bound if bound < self.reservation else self.reservation

    def reply(self, observation: Observation, mine: Decimal) -> Decision:
        """Accept the other side's live offer, sleep on the own one, or offer ``mine``."""
        seller = self.seller
        theirs = current = None
        for live in observation.live_offers:  # one pass instead of their_offer and my_offer
            if live.by == self.role:
                current = live
            else:
                theirs = live
        if theirs is not None:
            price = theirs.price
            # better_or_equal(role, price, mine) and acceptable(role, price, reservation),
            # inline: this runs on every wake of every scripted agent.
            if (
                (price >= mine if seller else price <= mine) or abs(price - mine) <= self.slack
            ) and (price >= self.reservation if seller else price <= self.reservation):
                # Both actions are built from values already typed (an offer id the referee
                # issued, a Decimal price): constructed without validating again; the referee
                # validates them.
                return Decision((_accept({"type": "accept", "offer_id": theirs.offer_id}),))
        if current is not None and ((own := current.price) == mine or abs(own - mine) < self.move):
            return _sleep(self.wait)
        offer = _offer({"type": "make_offer", "price": mine, "message": None})
        return Decision((offer,), self.wait)  # positional: this runs on nearly every wake


def _sleep(wait: float) -> Decision:
    sleep = _SLEEPS.get(wait)
    if sleep is None:
        if len(_SLEEPS) >= 64:
            _SLEEPS.clear()
        sleep = _SLEEPS[wait] = Decision(wait=wait)
    return sleep


def progress_until(observation: Observation, margin: float) -> float:
    """Normalised time t in [0, 1] that reaches 1 ``margin`` seconds before the deadline.

    Offers take clock time (about 6 s for a think and an offer, more for the reply), so a tactic
    that concedes fully only at the deadline itself never gets its last offer answered.
    """
    horizon = observation.scenario.deadline - margin
    if horizon <= 0:
        return 1.0
    return clamp(observation.now / horizon, 0.0, 1.0)

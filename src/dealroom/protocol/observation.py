"""What one seat sees: its own view of the negotiation, never the other side's value."""

from __future__ import annotations

from dealroom.protocol._base import Model, Money, Role
from dealroom.protocol.events import Event
from dealroom.protocol.outcome import SeatOutcome
from dealroom.protocol.scenario import PublicScenario


class LiveOffer(Model):
    """An offer that can still be accepted."""

    offer_id: str
    by: Role
    price: Money
    t: float
    """Clock seconds when it was made."""


class Observation(Model):
    """Everything one seat knows at one moment."""

    role: Role
    """Your seat."""
    scenario: PublicScenario
    private_value: Money
    """Your own reservation value (buyer: the most you would pay; seller: the least you would
    take). Private to you."""
    now: float
    """Clock seconds since the start."""
    time_left: float
    """Seconds until the deadline."""
    live_offers: tuple[LiveOffer, ...]
    """At most one live offer per seat."""
    events: tuple[Event, ...]
    """Every event so far, oldest first."""
    outcome: SeatOutcome | None = None
    """Your result, once the negotiation has ended."""

    @property
    def their_offer(self) -> LiveOffer | None:
        """The other seat's live offer, if any."""
        return next((o for o in self.live_offers if o.by != self.role), None)

    @property
    def my_offer(self) -> LiveOffer | None:
        """Your own live offer, if any."""
        return next((o for o in self.live_offers if o.by == self.role), None)

    @property
    def is_over(self) -> bool:
        """True once the negotiation has ended."""
        return self.outcome is not None

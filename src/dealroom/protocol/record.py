"""A finished negotiation as it is printed, stored and replayed."""

from __future__ import annotations

from dealroom.protocol._base import Model
from dealroom.protocol.events import Event
from dealroom.protocol.outcome import Outcome
from dealroom.protocol.scenario import Scenario


class NegotiationRecord(Model):
    """Scenario, who sat where, every event and the scored outcome."""

    scenario: Scenario
    buyer: str
    """Agent spec in the buyer seat."""
    seller: str
    """Agent spec in the seller seat."""
    events: tuple[Event, ...]
    outcome: Outcome

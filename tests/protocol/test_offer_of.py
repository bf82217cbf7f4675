"""``offer_of``: the one answer to "does this event make an offer", read by every site that
collects offers from events (a new event type fails pyright in ``offer_of`` alone)."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import get_args

import pytest

from dealroom.protocol import (
    Event,
    MessageSent,
    NegotiationEnded,
    OfferAccepted,
    OfferMade,
    OfferRejected,
    OfferWithdrawn,
    WalkedAway,
    offer_of,
)

SRC = Path(__file__).resolve().parents[2] / "src" / "dealroom"

MADE = OfferMade(seq=1, t=1.0, by="buyer", offer_id="o1", price=Decimal("90.00"))
OTHERS: list[Event] = [
    OfferWithdrawn(seq=2, t=2.0, by="buyer", offer_id="o1"),
    OfferAccepted(seq=3, t=3.0, by="seller", offer_id="o1", price=Decimal("90.00")),
    OfferRejected(seq=4, t=4.0, by="seller", offer_id="o1"),
    MessageSent(seq=5, t=5.0, by="buyer", text="hi"),
    WalkedAway(seq=6, t=6.0, by="buyer"),
    NegotiationEnded(seq=7, t=7.0, by=None, reason="walk_away"),
]


def test_an_offer_made_is_an_offer_and_nothing_else_is() -> None:
    assert offer_of(MADE) is MADE
    assert [offer_of(e) for e in OTHERS] == [None] * len(OTHERS)
    members = get_args(get_args(Event)[0])
    assert {type(e) for e in [MADE, *OTHERS]} == set(members), "every event type is covered"


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_tells_offers_from_events_by_their_class(path: Path) -> None:
    """Offers are read through ``offer_of``; a second test of the class would miss a new event
    that also makes an offer (the referee builds them, ``live_offers`` matches every event)."""
    if path.relative_to(SRC).as_posix() == "protocol/events.py":
        return
    assert not re.search(r"isinstance\([^)]*OfferMade", path.read_text(encoding="utf-8")), path

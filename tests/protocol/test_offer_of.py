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


# -- the web pages' JavaScript, which pyright cannot check ------------------------------------

STATIC = SRC / "server" / "web" / "static"
EVENT_TYPES = {str(member.model_fields["type"].default) for member in get_args(get_args(Event)[0])}
OFFER_TYPES = {e.type for e in [MADE, *OTHERS] if offer_of(e) is not None}


def test_the_pages_describe_every_event_type() -> None:
    """``DR.describe`` (common.js) has a case per event type: a new one would otherwise show
    as its bare type name."""
    source = (STATIC / "common.js").read_text(encoding="utf-8")
    body = source.split("function describe(", 1)[1].split("\n  }\n", 1)[0]
    assert set(re.findall(r'case "(\w+)":', body)) == EVENT_TYPES


def test_the_pages_chart_the_events_that_make_offers() -> None:
    """The offers chart (chart.js) picks the events ``offer_of`` calls offers, no more, no
    fewer."""
    source = (STATIC / "chart.js").read_text(encoding="utf-8")
    line = next(x for x in source.splitlines() if x.strip().startswith("const offers ="))
    assert set(re.findall(r'e\.type === "(\w+)"', line)) == OFFER_TYPES

"""The pages' view models, as pure functions of a room: what each page can ever receive."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from mcp_support import acts, house_room, scenario, secret_with_gains

from dealroom.agents import resolve
from dealroom.protocol import Accept, MakeOffer, SendMessage, WalkAway
from dealroom.protocol.study import StudyRequest
from dealroom.server.negotiation import RoomLimits
from dealroom.server.room import Room
from dealroom.server.room_settings import RoomSettings
from dealroom.server.rooms import RoomRegistry
from dealroom.server.seat import RoomSeat
from dealroom.server.web.views import seat_page_view, spectator_view

pytestmark = pytest.mark.anyio

SECRET = "5f0c2a9e7d13b84f6a21c9e0d57b3a18"


def mentions(text: str, value: Decimal) -> bool:
    forms = {f"{value:.2f}", f"{value:,.2f}", str(value), repr(float(value))}
    return any(re.search(rf"(?<![\d.,]){re.escape(f)}(?![\d])", text) for f in forms)


def two_clients(seed: object = 0) -> Room:
    """A room of two client seats (no house agent) on the virtual clock; a silent seat counts
    as waiting after 0.05 s of wall time (the server's 30 s would make a wait take 30 s)."""
    return Room(
        "room-two",
        RoomSettings(
            scenarios=lambda i: scenario(seed, index=i),  # type: ignore[arg-type]
            seed=0,
            limits=RoomLimits(idle_s=0.05),
        ),
    )


async def test_the_spectator_view_shows_no_private_value_before_the_end_and_both_after() -> None:
    secret = secret_with_gains()
    s = scenario(secret)
    room = house_room(
        opponent=acts(MakeOffer(price=s.list_price), SendMessage(text="take it")), seed=secret
    )
    buyer = RoomSeat(room, "buyer")
    await buyer.act(MakeOffer(price=Decimal("10.00"), message="hello"))
    await buyer.wait(30)
    before = spectator_view(room)
    text = before.model_dump_json()
    assert before.open and before.result is None
    assert [e.type for e in before.events][:1] == ["offer_made"]
    assert not mentions(text, s.buyer_value) and not mentions(text, s.seller_cost)
    theirs = next(o for o in before.live_offers if o.by == "seller")
    await buyer.act(Accept(offer_id=theirs.offer_id))
    after = spectator_view(room)
    assert not after.open and after.result is not None
    result = after.result
    assert (result.buyer_value, result.seller_cost) == (s.buyer_value, s.seller_cost)
    assert result.price == s.list_price
    assert result.buyer_surplus + result.seller_surplus == result.gains == s.gains
    assert mentions(after.model_dump_json(), s.buyer_value)


async def test_a_spectator_sees_no_event_that_a_client_seat_has_not_reached_yet() -> None:
    room = two_clients()
    buyer, seller = RoomSeat(room, "buyer"), RoomSeat(room, "seller")
    await buyer.act(MakeOffer(price=Decimal("100.00")))
    # The seller's clock has not reached the offer yet: a spectator link must not show it
    # either (a seat holding that link would otherwise see its future).
    assert spectator_view(room).events == ()
    await seller.wait(30)
    view = spectator_view(room)
    assert [e.type for e in view.events] == ["offer_made"]
    assert [o.by for o in view.live_offers] == ["buyer"]


async def test_the_seat_view_carries_the_seats_own_value_and_never_the_other_sides() -> None:
    secret = secret_with_gains()
    s = scenario(secret)
    room = house_room(opponent=acts(MakeOffer(price=s.list_price)), seed=secret)
    seat = RoomSeat(room, "buyer")
    await seat.act(MakeOffer(price=Decimal("10.00")))
    await seat.wait(30)
    observation = await room.current.observe("buyer", deliver=False)
    view = seat_page_view(room, "buyer", observation)
    text = view.model_dump_json()
    assert mentions(text, s.buyer_value) and not mentions(text, s.seller_cost)
    assert not view.can_start_next and not view.series_over and not view.needs_consent
    assert view.briefing.startswith("You are the buyer") or "buyer" in view.briefing


async def test_a_pair_participants_view_counts_their_own_series_across_rooms() -> None:
    rooms = RoomRegistry(writer=None, resolve_house=resolve, journals=None)
    request = StudyRequest(
        id="pairs", participants=("a", "b"), matching="pairs", negotiations=2, secret=SECRET
    )
    tokens = rooms.studies.create(request).participants
    study = rooms.studies.studies["pairs"]
    a, b = study.participants["a"], study.participants["b"]
    for _ in range(2):
        study.arrive(a)
        study.arrive(b)
        seated = study.current(a)
        assert seated is not None
        await RoomSeat(*seated).act(WalkAway())
        study.next(a)
        study.next(b)
    ticket = rooms.studies.lookup(tokens["a"])
    room, role = seated
    view = seat_page_view(room, role, await room.current.observe(role, deliver=False), ticket)
    assert (view.negotiation, view.negotiations, view.finished) == (2, 2, 2)
    assert [r.negotiation for r in view.results] == [1, 2] and room.series.finished == 1
    assert view.series_over and not view.can_start_next and view.completion is not None


async def test_the_pages_show_bidirectional_and_zero_width_characters_escaped() -> None:
    room = house_room(opponent="hardliner")
    buyer = RoomSeat(room, "buyer")
    await buyer.act(SendMessage(text="pay \u202e0001$\u202c now\u200b"))
    await buyer.act(MakeOffer(price=Decimal("900"), message="\u2066x\u2069"))
    escaped = ("pay \\u202e0001$\\u202c now\\u200b", "\\u2066x\\u2069")
    spectator = spectator_view(room)
    observation = await room.current.observe("buyer", deliver=False)
    page = seat_page_view(room, "buyer", observation)
    for events in (spectator.events, page.observation.events):
        said = [getattr(e, "text", None) or getattr(e, "message", None) for e in events]
        assert [s for s in said if s] == list(escaped)
    first = room.current.referee.events[0]
    assert getattr(first, "text", "").startswith("pay \u202e")  # the record keeps it

"""A room's seats: who plays each one, and each seat's share of the series."""

from __future__ import annotations

from decimal import Decimal

import pytest

from dealroom.agents import resolve
from dealroom.protocol import ROLES, Accept, MakeOffer, OfferMade, Referee, Role, seat_outcome
from dealroom.protocol.generator import scenario_at
from dealroom.server.room import Room
from dealroom.server.room_seats import RECENT_RESULTS, RoomSeats
from dealroom.server.room_settings import House, SeatPlayer
from dealroom.server.seat_names import REMOTE_NAME


async def _never(room: Room, role: Role) -> None:
    raise AssertionError("not played here")


HOUSE = House("boulware", resolve("boulware"))
PLAYER = SeatPlayer("llm:fake", _never)


def test_a_seat_nobody_in_the_room_plays_is_a_clients() -> None:
    seats = RoomSeats({"seller": HOUSE})
    assert seats.client_roles == ("buyer",) and seats.remote_roles == ("buyer",)
    assert seats.names() == {"buyer": REMOTE_NAME, "seller": "boulware"}
    assert seats.houses == {"seller": HOUSE} and seats.players == {}


def test_an_in_process_player_plays_through_its_tools_but_gets_no_token() -> None:
    seats = RoomSeats({"seller": PLAYER})
    assert seats.remote_roles == ROLES and seats.client_roles == ("buyer",)
    assert seats["seller"].remote and not seats["seller"].client
    assert seats.players == {"seller": PLAYER} and seats.name("seller") == "llm:fake"


def test_two_clients_and_no_occupant_make_a_room() -> None:
    seats = RoomSeats({})
    assert seats.client_roles == ROLES and [s.role for s in seats] == list(ROLES)


def test_a_room_without_a_client_seat_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one seat for a client"):
        RoomSeats({"buyer": HOUSE, "seller": PLAYER})


def test_each_seat_counts_every_result_and_keeps_the_last_few() -> None:
    seats = RoomSeats({"seller": HOUSE})
    count = RECENT_RESULTS + 3
    totals = dict.fromkeys(ROLES, Decimal("0.00"))
    for number in range(1, count + 1):
        scenario = scenario_at(0, number, "mid")
        referee = Referee(scenario)
        (offer,) = referee.apply("buyer", MakeOffer(price=scenario.list_price), 0.0)
        assert isinstance(offer, OfferMade)
        referee.apply("seller", Accept(offer_id=offer.offer_id), 1.0)
        assert referee.outcome is not None and referee.outcome.status == "deal"
        seats.finished(number, scenario, referee.outcome)
        for role in ROLES:
            totals[role] += seat_outcome(referee.outcome, role).surplus
    for slot in seats:
        assert [r.negotiation for r in slot.results()] == list(range(4, count + 1))
        assert slot.total_surplus == totals[slot.role] != Decimal("0.00")

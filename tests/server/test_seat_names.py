"""A client seat is recorded and shown as a person in a room made for people, else as ``mcp``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp_support import scenario

from dealroom.agents import resolve
from dealroom.protocol import WalkAway
from dealroom.protocol.study import StudyRequest
from dealroom.server.room import Room
from dealroom.server.room_settings import Experiment, House, RoomSettings
from dealroom.server.rooms import RoomRegistry
from dealroom.server.seat import RoomSeat
from dealroom.server.web.views import spectator_view
from dealroom.store.results import ResultsStore
from dealroom.store.writer import ResultWriter

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("people", "name"),
    [({}, "mcp"), ({"participant": "run-7"}, "mcp"), ({"consent": "I agree."}, "person")],
)
async def test_a_rooms_client_seat_is_named_for_who_the_room_was_made_for(
    tmp_path: Path, people: dict[str, Any], name: str
) -> None:
    store = ResultsStore(tmp_path / "r.db")
    settings = RoomSettings(
        scenarios=lambda i: scenario(0, index=i),
        occupants={"seller": House("boulware", resolve("boulware"))},
        seed=0,
        experiment=Experiment(**people),
    )
    room = Room("room-x", settings, writer=ResultWriter(store))
    room.consent.agreed["buyer"] = "2026-12-07T00:00:00+00:00"  # consent given, where asked
    assert spectator_view(room).seats == {"buyer": name, "seller": "boulware"}
    await RoomSeat(room, "buyer").act(WalkAway())
    await room.records.save()
    with store:
        (row,) = store.iter()
    assert (row.record.buyer, row.record.seller) == (name, "boulware")


async def test_both_seats_of_a_pair_study_are_people() -> None:
    rooms = RoomRegistry(writer=None, resolve_house=resolve, journals=None)
    request = StudyRequest(
        id="pairs",
        participants=("a", "b"),
        matching="pairs",
        secret="5f0c2a9e7d13b84f6a21c9e0d57b3a18",
    )
    rooms.studies.create(request)
    study = rooms.studies.studies["pairs"]
    a, b = study.participants["a"], study.participants["b"]
    study.arrive(a)
    study.arrive(b)
    seated = study.current(a)
    assert seated is not None
    assert spectator_view(seated[0]).seats == {"buyer": "person", "seller": "person"}

"""A study's information conditions on the participant's page: a ``value_range`` treatment's
briefing states the range the other side's number is drawn from (its practice too), an
``own_value`` treatment's none, and neither page shows the other side's number."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_study import registry, solo

from dealroom.protocol import WalkAway
from dealroom.protocol.people_text import value_range_rule
from dealroom.server.seat import RoomSeat
from dealroom.server.studies import Ticket
from dealroom.server.texts import seat_view_of
from dealroom.server.web.views import seat_page_view
from leaks import leaked, stated_range

pytestmark = pytest.mark.anyio

DESIGN = {
    "practice": 1,
    "treatments": [{"name": "own"}, {"name": "range", "information": "value_range"}],
}


async def test_each_participants_briefing_follows_their_treatments_information(
    tmp_path: Path,
) -> None:
    rooms = registry(tmp_path)
    rooms.studies.create(solo(participants=["p01", "p02", "p03", "p04"], design=DESIGN))
    study = rooms.studies.studies["s1"]
    seen: dict[str, int] = {}
    for who in study.participants.values():
        study.agree(who)
        assert who.treatment is not None
        for practising in (True, False):
            current = study.current(who)
            assert current is not None
            room, role = current
            assert (room.id in study.phases.practice_rooms) == practising
            observation = await room.current.observe(role, deliver=False)
            view = seat_page_view(room, role, observation, Ticket(study, who))
            rule = value_range_rule(seat_view_of(observation))
            scenario = room.current.scenario
            theirs = scenario.seller_cost if role == "buyer" else scenario.buyer_value
            if who.treatment == "range":
                assert rule in view.briefing
                low, high = stated_range(view.briefing)  # the room's own draw lies within
                assert low <= theirs <= high
            else:
                assert "drawn at random for this negotiation" not in view.briefing
            assert leaked(view.model_dump_json(), theirs, set()) is None
            if practising:  # on to the study: the practice negotiation ends, then Next
                await RoomSeat(room, role).act(WalkAway())
                assert study.next(who)
        seen[who.treatment] = seen.get(who.treatment, 0) + 1
    assert seen == {"own": 2, "range": 2}

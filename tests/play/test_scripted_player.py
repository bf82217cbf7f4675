"""A scripted player through a seat's tools: it reads its whole view once, then its results."""

from __future__ import annotations

import random
from collections import Counter

import anyio
import pytest

from dealroom.client.seat import SeatError
from dealroom.engine.calls import LocalSeat
from dealroom.engine.match import play, seat_rng
from dealroom.play.players import ScriptedPlayer, SeatContext
from dealroom.play.registry import resolve
from dealroom.protocol import (
    Accept,
    Action,
    ActionResult,
    Decision,
    Observation,
    Role,
    RuleViolation,
    SeatState,
    SeatView,
    WaitResult,
    seat_view,
)
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.rules import DEFAULT_RULES
from dealroom.protocol.seat_text import error_payload

PAIRINGS = [("boulware", "linear"), ("conceder", "boulware"), ("zic", "tit_for_tat")]


class CountingSeat:
    """A ``LocalSeat`` behind the tool calls a scripted player makes, counted by tool."""

    def __init__(self, local: LocalSeat) -> None:
        self.local = local
        self.calls: Counter[str] = Counter()

    async def act(self, action: Action) -> ActionResult:
        self.calls[action.type] += 1
        try:
            return self.local.act(action)
        except RuleViolation as violation:
            raise SeatError(action.type, error_payload(violation.code, violation.message)) from None

    async def wait_for_opponent(self, timeout_s: float | None = None) -> WaitResult:
        self.calls["wait_for_opponent"] += 1
        return self.local.wait(20.0 if timeout_s is None else timeout_s)

    async def get_state(self) -> SeatState:
        self.calls["get_state"] += 1
        return self.local.state()


def played(buyer: str, seller: str, role: Role, index: int, *, stumble: bool = False):
    """The seat ``role`` played by its ScriptedPlayer against the other agent as a house agent;
    each observation the player's agent decides on is checked against what ``get_state`` would
    return at that moment (read without marking anything as shown). ``stumble``: the agent
    first tries to accept an offer that does not exist, on every wake (a refused action)."""
    scenario = scenario_at(0, index, "mid")
    mine, theirs = (buyer, seller) if role == "buyer" else (seller, buyer)
    them: Role = "seller" if role == "buyer" else "buyer"
    house = resolve(theirs)(seat_view(scenario, them), seat_rng(0, scenario.id, them))
    local = LocalSeat(scenario, role, house, DEFAULT_RULES)
    seat = CountingSeat(local)
    inner = resolve(mine)
    decided: list[Observation] = []

    def checked(view: SeatView, rng: random.Random):
        agent = inner(view, rng)

        class Checked:
            def act(self, observation: Observation) -> Decision:
                expected = local.calls.observe(role, deliver=False)
                assert observation.model_dump() == expected.model_dump()
                decided.append(observation)
                decision = agent.act(observation)
                if stumble:
                    return Decision((Accept(offer_id="o999"), *decision.actions), decision.wait)
                return decision

        return Checked()

    player = ScriptedPlayer(checked, mine)
    context = SeatContext(role=role, rules=DEFAULT_RULES, seed=0)

    async def run() -> None:
        await player.play(seat, context)

    anyio.run(run)
    local.finish()
    return local, seat, decided


@pytest.mark.parametrize(("buyer", "seller"), PAIRINGS)
@pytest.mark.parametrize("role", ["buyer", "seller"])
def test_a_scripted_player_reads_its_whole_view_once_and_decides_on_what_get_state_shows(
    buyer: str, seller: str, role: Role
) -> None:
    for index in range(4):
        local, seat, decided = played(buyer, seller, role, index)
        assert seat.calls["get_state"] == 1  # the first look; every later view from results
        assert len(decided) >= 2
        record = play(
            scenario_at(0, index, "mid"), resolve(buyer), resolve(seller), names=(buyer, seller)
        )
        assert tuple(local.referee.events_since(0)) == record.events  # the same negotiation


def test_after_a_refused_action_the_view_comes_from_the_wait_that_follows() -> None:
    local, seat, decided = played("boulware", "linear", "buyer", 1, stumble=True)
    assert seat.calls["get_state"] == 1
    assert seat.calls["accept"] >= len(decided) >= 2  # each wake stumbled, and went on
    assert local.referee.outcome is not None

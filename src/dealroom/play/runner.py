"""Play one negotiation between any two players, each through its seat's MCP tools.

``play_match`` opens a room in this process (the server's own ``Room`` and seats), connects
each player to its seat with ``SeatClient.local`` (the MCP app's own tools, results and briefing,
called as functions: every player reads exactly what a remote MCP client reads, without the
protocol's CPU; ``tests/test_surface_parity.py`` checks it) and runs both until the negotiation
ends. Scripted players sit as house agents (the same
simulation as ``dealroom.engine.match.play``) unless ``scripted_as_house=False``.

Every seat's thinking costs ``rules.thinking.per_wake`` on its first action after each wait,
charged by the room: the one clock rule, LLM seats included (``dealroom.protocol.model_seat``).

A player that fails (raises, or returns while the negotiation is still open) **walks away**: the
runner ends the negotiation for it with ``walk_away`` (end reason ``walk_away``, ended by that
seat), and the error is recorded under ``extra["errors"][role]``. If even that cannot finish the
negotiation within ``cleanup_s``, the room is run to its deadline. Every wait is bounded, and
``timeout_s`` bounds the whole match in real time.

``house_player`` seats any player in a room of the server (``dealroom serve --opponent
llm:MODEL``): it plays each negotiation of the series the same way, failures included, with the
error stored beside the negotiation under ``errors``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog

from dealroom.client.seat import SeatClient
from dealroom.engine.match import play
from dealroom.play.players import Player, PlayerFailed, ScriptedPlayer, SeatContext
from dealroom.protocol import (
    DEFAULT_RULES,
    ROLES,
    Role,
    Rules,
    Scenario,
    WalkAway,
)
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Secret, Seed
from dealroom.protocol.wire import ClockKind
from dealroom.server.mcp_app import build_app
from dealroom.server.negotiation import Negotiation, RoomLimits
from dealroom.server.room import Room
from dealroom.server.room_settings import House, Occupant, RoomSettings, SeatPlayer
from dealroom.server.seat import RoomSeat
from dealroom.store.results import ResultsStore

log = structlog.stdlib.get_logger(__name__)

FAILED_MESSAGE = "I have to leave the negotiation."
"""The cheap talk attached to the walk-away made for a failed player."""


@dataclass(frozen=True, slots=True)
class MatchResult:
    """The record, plus what was stored beside it: each player's data and any errors."""

    record: NegotiationRecord
    extra: dict[str, Any] = field(default_factory=dict[str, Any])

    @property
    def errors(self) -> dict[str, str]:
        """Errors by role (empty when both players played to the end)."""
        return dict(self.extra.get("errors", {}))


class _Clock:
    """The room's timer, which ``force_end`` can push past every limit."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset


async def play_match(
    scenario: Scenario,
    buyer: Player,
    seller: Player,
    *,
    rules: Rules = DEFAULT_RULES,
    seed: Seed | None = None,
    clock: ClockKind = "virtual",
    scripted_as_house: bool = True,
    timeout_s: float = 3600.0,
    cleanup_s: float = 30.0,
    store: ResultsStore | None = None,
    key: str | None = None,
    run: str = "",
    on_model_call: Callable[[Role, Mapping[str, Any]], None] | None = None,
) -> MatchResult:
    """Play one negotiation to its end and return (and optionally store) its record.

    House agents draw under ``seed`` (default: a fresh secret, so no seat can predict them).
    ``on_model_call`` sees each model call's usage as it returns (``SeatContext``).
    """
    seed = Secret.new() if seed is None else seed
    players: dict[Role, Player] = {"buyer": buyer, "seller": seller}
    houses: dict[Role, Occupant] = {
        role: House(spec=p.name, factory=p.factory)
        for role, p in players.items()
        if scripted_as_house and isinstance(p, ScriptedPlayer)
    }
    if len(houses) == len(ROLES):
        assert isinstance(buyer, ScriptedPlayer) and isinstance(seller, ScriptedPlayer)
        record = play(
            scenario,
            buyer.factory,
            seller.factory,
            names=(buyer.name, seller.name),
            rules=rules,
            seed=seed,
        )
        return _finish(record, {"players": {}, "errors": {}}, store, key, run)
    timer = _Clock()
    settings = RoomSettings(
        scenarios=lambda n: scenario if n == 0 else None,
        occupants=houses,
        rules=rules,
        clock=clock,
        seed=seed,
        limits=RoomLimits(idle_s=timeout_s, abandon_s=timeout_s, max_wait_s=60.0),
    )
    room = Room("match", settings, timer=timer)
    negotiation = room.current
    extra: dict[str, Any] = {"players": {}, "errors": {}, "clock": clock}
    with anyio.move_on_after(timeout_s) as scope:
        async with anyio.create_task_group() as group:
            for role in room.seats.remote_roles:
                paid = None if on_model_call is None else functools.partial(on_model_call, role)
                context = SeatContext(role=role, rules=rules, seed=seed, on_model_call=paid)
                group.start_soon(
                    _seat_player,
                    room,
                    negotiation,
                    players[role],
                    context,
                    extra["players"],
                    extra["errors"],
                    cleanup_s,
                )
    if scope.cancelled_caught:
        for role in room.seats.remote_roles:
            extra["errors"].setdefault(role, f"the match took longer than {timeout_s:g} s")
            await _walk_away(room, negotiation, role, cleanup_s)
    if negotiation.is_open:
        await _force_end(negotiation, timer)
    outcome = negotiation.referee.outcome
    assert outcome is not None
    record = NegotiationRecord(
        scenario=scenario,
        buyer=buyer.name,
        seller=seller.name,
        events=negotiation.referee.events,
        outcome=outcome,
    )
    return _finish(record, extra, store, key, run)


def _finish(
    record: NegotiationRecord,
    extra: dict[str, Any],
    store: ResultsStore | None,
    key: str | None,
    run: str,
) -> MatchResult:
    if not extra.get("errors"):
        extra.pop("errors", None)
    if store is not None:
        store.add(key or f"{run or 'match'}/{record.scenario.id}", record, run=run, extra=extra)
    return MatchResult(record=record, extra=extra)


def seat_app(room: Room, role: Role):
    """The server's MCP app for one seat of an in-process room (no series tool)."""
    seat = RoomSeat(room, role)
    return build_app(lambda: seat, name=f"dealroom-{role}", series=False)


def house_player(player: Player, *, cleanup_s: float = 30.0) -> SeatPlayer:
    """``player`` as the in-process player of a room's seat, for every negotiation of it.

    A failure walks away for the seat, with the error in ``Negotiation.errors`` (stored with
    the negotiation).
    """

    async def play(room: Room, role: Role) -> None:
        negotiation = room.current

        def report(data: Mapping[str, Any]) -> None:
            room.records.player_report(negotiation, role, {"name": player.name, **data})

        context = SeatContext(role=role, rules=room.settings.rules, seed=room.seed, report=report)
        played: dict[str, Any] = {}
        await _seat_player(
            room, negotiation, player, context, played, negotiation.errors, cleanup_s
        )
        room.records.player_done(negotiation, role, played[role])
        await room.records.save()

    return SeatPlayer(spec=player.name, play=play)


async def _seat_player(
    room: Room,
    negotiation: Negotiation,
    player: Player,
    context: SeatContext,
    players: dict[str, Any],
    errors: dict[Any, str],
    cleanup_s: float,
) -> None:
    role = context.role
    error: str | None = None
    data: Mapping[str, Any] = {}
    try:
        async with SeatClient.local(RoomSeat(room, role)) as seat:
            data = await player.play(seat, context)
    except PlayerFailed as failure:
        error, data = failure.message, failure.extra
    except Exception as exc:  # a player's bug must not lose the negotiation
        log.exception("player failed", seat=role, player=player.name)
        error = f"{type(exc).__name__}: {exc}"
    players[role] = {"name": player.name, **data}
    if error is None and negotiation.is_open:
        error = "the player stopped before the negotiation ended"
    if error is not None:
        errors[role] = error
        log.warning("player failed; walking away for it", seat=role, error=error)
        await _walk_away(room, negotiation, role, cleanup_s)


async def _walk_away(room: Room, negotiation: Negotiation, role: Role, cleanup_s: float) -> None:
    """End ``negotiation`` for a failed seat (bounded; a refusal means it has already ended;
    never a later negotiation of the room)."""
    if negotiation is not room.current or not negotiation.is_open:
        return
    with anyio.move_on_after(cleanup_s):
        try:
            await RoomSeat(room, role).act(WalkAway(message=FAILED_MESSAGE))
        except Exception as exc:
            log.info("walk-away for failed seat refused", seat=role, error=str(exc))


async def _force_end(negotiation: Negotiation, timer: _Clock) -> None:
    """Every seat silent: run the negotiation to its deadline (the room's abandonment path)."""
    timer.offset += 10 * negotiation.limits.abandon_s + negotiation.scenario.deadline + 1e6
    await negotiation.tick()

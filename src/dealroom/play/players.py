"""Players: anything that can sit in a seat and play one negotiation through its MCP tools.

A ``Player`` gets a connected ``SeatClient`` and plays the current negotiation to its end. Scripted
strategies (``ScriptedPlayer``), LLM agents (``dealroom.agents.llm.LLMPlayer``), a person at a
terminal (``dealroom.agents.human.HumanPlayer``) and your own code all fit; ``play_match`` seats
any two of them. What a player returns is stored beside the negotiation (usage, counts); a
player that cannot go on raises ``PlayerFailed`` with what it has so far.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

import anyio

from dealroom.client.seat import SeatClient, SeatError
from dealroom.engine.match import seat_rng
from dealroom.protocol import (
    Action,
    ActionResult,
    AgentFactory,
    Observation,
    Role,
    Rules,
    SeatState,
    SeatView,
    WaitResult,
)
from dealroom.protocol.errors import DealroomError
from dealroom.protocol.secret import Seed

OnModelCall = Callable[[Mapping[str, Any]], None]
"""Sees one model call's usage (tokens, cost) the moment it returns: the paid-call journal's
hook (``dealroom.store.paid``)."""


@dataclass(frozen=True, slots=True)
class SeatContext:
    """What a player knows about its seat besides the tools."""

    role: Role
    rules: Rules
    seed: Seed = 0
    """What players that draw random numbers draw under (the room's secret in served play)."""
    on_model_call: OnModelCall | None = None
    """Set by a tournament: a player that calls a model hands it each call's usage (tokens,
    cost) the moment the call returns, so calls paid for are known even if the negotiation is
    never stored (``dealroom.store.paid``)."""
    report: Callable[[Mapping[str, Any]], None] | None = None
    """Set when a server's room records the negotiation itself: a player that returns data
    (an LLM seat: usage, counts, its conversation) also hands it here each time it changes,
    because the room stops the player when the negotiation ends and stores what it has then."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """The service a player's seat calls (a model endpoint): tournaments keep at most
    ``concurrency`` negotiations in flight on each ``key``. A player may set ``endpoint``."""

    key: str
    concurrency: int


@runtime_checkable
class Player(Protocol):
    """Plays one seat of one negotiation through its tools: the one contract of every kind of
    player (scripted strategies through ``ScriptedPlayer``, LLM seats, people, your own code).
    The registry (``dealroom.play.registry``) names every kind. A player may also carry
    ``endpoint: Endpoint | None`` (read with getattr) to be rate-limited by tournaments."""

    name: str
    """Recorded as the seat's agent (e.g. ``boulware`` or ``llm:gpt-4.1-mini``)."""

    async def play(self, seat: SeatClient, context: SeatContext) -> Mapping[str, Any]:
        """Play the seat's current negotiation to its end; return data to store with it."""
        ...


T = TypeVar("T")


async def close_players(players: Iterable[object]) -> None:
    """Let players that hold connections (``aclose``, e.g. an LLM's HTTP client) close them,
    each once, even when the caller is being cancelled. Call it in the event loop that used
    them: kept-alive connections must close before their loop does."""
    for player in {id(p): p for p in players}.values():
        if (aclose := getattr(player, "aclose", None)) is not None:
            with anyio.CancelScope(shield=True):
                await aclose()


async def closing(players: Iterable[object], main: Callable[[], Awaitable[T]]) -> T:
    """``main()``'s result, the players closed afterwards however it ends."""
    try:
        return await main()
    finally:
        await close_players(players)


class PlayerFailed(DealroomError):
    """A player could not go on (e.g. its model kept failing). ``extra`` is what it had so far."""

    kind = "player_failed"

    def __init__(self, message: str, extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra: Mapping[str, Any] = dict(extra or {})


class ToolSeat(Protocol):
    """The seat calls a scripted player makes: ``SeatClient`` over MCP, or the SFT export's seat
    (``dealroom.training.sft``), which replays a record through the same calls. A refused call
    raises ``SeatError``."""

    async def act(self, action: Action) -> ActionResult: ...

    async def wait_for_opponent(self, timeout_s: float | None = None) -> WaitResult: ...

    async def get_state(self) -> SeatState: ...


class ScriptedPlayer:
    """A scripted strategy (an ``AgentFactory``) playing through a seat's tools.

    ``factory`` is the fast path: where both seats are scripted, runners play the engine's
    loop directly (no MCP session, no event loop).

    It behaves as the same agent does in ``play`` on the virtual clock: each wake it decides,
    makes the decision's actions in order (the first refused one drops the rest and wakes it at
    once), and sleeps until news or its requested wake-up, measured from the end of its thinking.
    Where the room runs in this process, ``play_match`` seats it as a house agent instead.

    It reads its seat's whole view once (``get_state``) and keeps it up to date from its calls'
    results, each of which holds what it had not been shown yet (events, clock, live offers,
    outcome): the view it decides on is the one ``get_state`` would return, without asking for
    the whole history again at every wake. Its calls are the SFT transcripts a model learns
    from, and a model that has read every result needs no more (docs/design.md, "What a model
    reads").
    """

    def __init__(self, factory: AgentFactory, name: str) -> None:
        self.factory = factory
        self.name = name

    async def play(self, seat: ToolSeat, context: SeatContext) -> Mapping[str, Any]:
        """Decide on every wake until the negotiation ends."""
        observation = (await seat.get_state()).observation
        view = SeatView(
            role=observation.role,
            scenario=observation.scenario,
            private_value=observation.private_value,
        )
        agent = self.factory(view, seat_rng(context.seed, view.scenario.id, view.role))
        wakes = 0
        while observation.outcome is None:
            wakes += 1
            decision = agent.act(observation)
            wake_at = observation.now + context.rules.thinking.per_wake
            after = await _act_all(seat, observation, decision.actions)
            if after.over:
                break
            timeout: float | None
            if after.woken:
                timeout = 0.0
            elif decision.wait is None:
                timeout = None
            else:
                now = observation.now if after.now is None else after.now
                timeout = max(0.0, round(wake_at + decision.wait - now, 3))
            observation = await _sleep(seat, after.observation, timeout)
        return {"wakes": wakes}


def seen(observation: Observation, result: ActionResult | WaitResult) -> Observation:
    """``observation`` once ``result`` has been read: its new events appended, its clock, live
    offers and outcome taken (what ``get_state`` would return at that point)."""
    return observation.model_copy(
        update={
            "events": observation.events + result.events,
            "live_offers": result.live_offers,
            "now": result.now,
            "time_left": result.time_left,
            "outcome": result.outcome,
        }
    )


async def _act_all(
    seat: ToolSeat, observation: Observation, actions: tuple[Action, ...]
) -> _AfterActions:
    """Make the actions in order, stopping at the first refused one or the end."""
    role = observation.role
    now: float | None = None
    news = False
    for action in actions:
        try:
            result = await seat.act(action)
        except SeatError:
            return _AfterActions(observation, over=False, now=now, woken=True)
        observation = seen(observation, result)
        if result.outcome is not None:
            return _AfterActions(observation, over=True, now=result.now, woken=False)
        now = result.now
        # News that arrives while the seat acts wakes it as soon as its actions are done.
        news = news or any(event.by not in (role, None) for event in result.events)
    return _AfterActions(observation, over=False, now=now, woken=news)


@dataclass(frozen=True, slots=True)
class _AfterActions:
    observation: Observation
    """The seat's view after its actions' results."""
    over: bool
    now: float | None
    """The seat's clock after its last action (None if it made none)."""
    woken: bool
    """News or a refusal: the seat is due again at once."""


LONG_SLEEP_S = 60.0
"""Longest single wait; a seat that asked to sleep until news simply waits again."""


async def _sleep(seat: ToolSeat, observation: Observation, clock_s: float | None) -> Observation:
    """Wait for news or the timeout on the clock; the observation for the next wake."""
    remaining = math.inf if clock_s is None else clock_s
    while True:
        step = min(remaining, LONG_SLEEP_S)
        result = await seat.wait_for_opponent(step)
        observation = seen(observation, result)
        if result.woke == "timeout":
            remaining -= step
            if remaining > 0:
                continue  # a long sleep, in steps the server accepts
        if result.woke != "pending":  # pending: still asleep, the other side is deciding
            return observation

"""dealroom as an OpenEnv environment (openenv-core 0.3; ``pip install 'dealroom[openenv]'``).

An episode is one negotiation, played from one seat against a served opponent, one tool call a
step. The core is the TRL tool environment (``dealroom.training.trl.BargainToolEnv``), so the
model reads what it reads on every other surface (``dealroom.protocol.model_seat``):

- ``reset`` opens a negotiation and returns the seat's briefing (the first user message
  everywhere) and the tools (``model_seat.tools``, the schemas to hand the model) as typed
  fields of the observation (openenv-core does not send ``Observation.metadata`` over HTTP);
- ``step`` takes one tool call (``BargainAction``: the tool's name and its arguments) and
  returns the tool's text; a call that cannot be made as written (no such tool, arguments that
  do not fit its signature) reads ``{'error': '...'}`` as in TRL's loop and changes nothing in
  the negotiation; ``tool=None`` is a reply without tool calls, which ends the seat's play (the
  negotiation is played out with the seat silent, its live offer can still be accepted);
- at most ``max_tool_rounds`` calls are run; the step after the last ends the seat's play, its
  call not run;
- the step that ends the negotiation has ``done`` and the reward
  (``BargainToolEnv.get_reward()``: the surplus share, -1 for a losing deal,
  ``dealroom.training.rewards.SHARE``).

What is served is a ``PlaySettings`` (``served_settings``): the learner (``LEARNER``) against
the opponents, in the tiers, under the secret. Episode ``seed=i`` plays job ``i`` of the
tournament ``dealroom tournament --agents openenv,OPPONENTS --learner openenv`` of the same
settings (``TournamentConfig.jobs()``, scenario-major); ``role``, ``opponent``, ``tier`` and
``index`` in the reset arguments pin those (each one of the served set).

OpenEnv's ``/mcp`` routes are removed from the app (``create_bargain_app``): openenv-core 0.3
answers there with snake_case fields (``input_schema``, ``is_error``) and without the MCP
handshake, so no MCP client can use it; dealroom's MCP server is ``dealroom serve``.
"""

from __future__ import annotations

import contextlib
import functools
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Self

from fastapi import FastAPI
from pydantic import Field
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocketDisconnect

from dealroom.engine.match import record_from
from dealroom.harnesses._openenv import (
    Action,
    EnvClient,
    Environment,
    Observation,
    State,
    StepResult,
    create_app,
)
from dealroom.play.jobs import TournamentError
from dealroom.play.settings import PlaySettings, SeatSettings
from dealroom.play.tournament import TournamentConfig
from dealroom.protocol import DEFAULT_RULES, TIERS, Role, Tier, model_seat
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Secret, Seed
from dealroom.store.results import ResultsStore
from dealroom.training._seat import OpponentFactory, opponent_factory
from dealroom.training.trl import BargainToolEnv, call_tool

LEARNER = "openenv"
"""The served seat's agent name in records and job keys (the tournament's learner)."""

RESET_ARGUMENTS = ("seed", "episode_id", "role", "opponent", "tier", "index")
"""What ``reset`` reads."""

Sink = Callable[[str, NegotiationRecord], None]
"""Where each finished negotiation goes: its tournament job key and its record."""


class BargainAction(Action):
    """One tool call of the seat, as the model wrote it."""

    tool: str | None = Field(
        description="the tool's name (one of the observation's tools); null: a reply without "
        "tool calls, which ends the seat's play"
    )
    arguments: dict[str, Any] | str = Field(
        default_factory=dict[str, Any],
        description="the call's arguments: a JSON object, or the raw text the model wrote "
        "when it is not one (the call then fails as it does in TRL)",
    )


class BargainObservation(Observation):
    """What the seat reads: the briefing and tools after ``reset``, a tool's text after each
    ``step``; never the other side's private number."""

    briefing: str = Field(default="", description="the seat's briefing (after reset)")
    tools: list[dict[str, Any]] = Field(
        default_factory=list[dict[str, Any]],
        description="the tools to offer the model, as chat-completions schemas (after reset)",
    )
    result: str = Field(default="", description="the text the step's tool returned")
    role: Role = "buyer"
    opponent: str = ""
    tier: Tier = "mid"
    index: int = Field(default=0, description="the scenario's index in its tier")
    seed: int = Field(default=0, description="the episode's seed (the tournament job's number)")
    step: int = Field(default=0, description="tool calls run so far")
    max_tool_rounds: int = Field(default=model_seat.MAX_TOOL_ROUNDS)
    outcome: str | None = Field(default=None, description="deal or no_deal, once done")


class BargainState(State):
    """The session's episode: what was reset and how far it went."""

    role: Role | None = None
    opponent: str | None = None
    tier: Tier | None = None
    index: int | None = None
    seed: int | None = None
    key: str | None = Field(default=None, description="the tournament job key")
    done: bool = False
    max_tool_rounds: int = model_seat.MAX_TOOL_ROUNDS


@dataclass(frozen=True, slots=True)
class Episode:
    """What one reset plays: the tournament job and the episode's seed."""

    seed: int
    role: Role
    opponent: str
    tier: Tier
    index: int

    def key(self, run: str) -> str:
        """The tournament's job key (``run/tier/index/buyer/seller``)."""
        buyer, seller = (
            (LEARNER, self.opponent) if self.role == "buyer" else (self.opponent, LEARNER)
        )
        return f"{run}/{self.tier}/{self.index:05d}/{buyer}/{seller}"


def served_settings(
    *,
    opponents: tuple[str, ...] = ("boulware",),
    role: Role | None = "buyer",
    tiers: tuple[Tier, ...] = TIERS,
    secret: Seed | None = None,
    max_tool_rounds: int = model_seat.MAX_TOOL_ROUNDS,
) -> PlaySettings:
    """The settings an OpenEnv server plays: ``LEARNER`` against ``opponents`` in ``role``
    (None: both seats), as ``dealroom tournament --learner`` would."""
    return PlaySettings(
        agents=(LEARNER, *opponents),
        tiers=tiers,
        secret=secret,
        learner=LEARNER,
        learner_role=role,
        seats=SeatSettings(max_tool_rounds=max_tool_rounds),
    )


class Served:
    """Served settings checked once: the tournament's pairings, the opponents built."""

    def __init__(self, settings: PlaySettings, *, run: str = "openenv") -> None:
        if settings.learner != LEARNER:
            raise ValueError(f"the learner must be {LEARNER!r}, not {settings.learner!r}")
        if settings.seats.max_tool_rounds < 1:
            raise ValueError("max_tool_rounds must be at least 1")
        secret = settings.secret if settings.secret is not None else Secret.new()
        self.settings = replace(settings, secret=secret)
        self.secret: Seed = secret
        self.run = run
        try:
            config = TournamentConfig(
                agents=settings.agents,
                tiers=settings.tiers,
                seed=secret,
                learner=LEARNER,
                learner_role=settings.learner_role,
            )
        except TournamentError as exc:  # one sentence
            raise ValueError(str(exc)) from None
        self.pairings = config.pairings()
        self.opponents = tuple(a for a in settings.agents if a != LEARNER)
        self.factories: dict[str, OpponentFactory] = {
            spec: opponent_factory(spec, DEFAULT_RULES) for spec in self.opponents
        }

    def episode(self, seed: int, pins: Mapping[str, Any]) -> Episode:
        """Job ``seed`` of the tournament, with what ``pins`` set (each checked)."""
        tiers = self.settings.tiers
        per_index = len(tiers) * len(self.pairings)
        buyer, seller = self.pairings[seed % len(self.pairings)]
        role: Role = "buyer" if buyer == LEARNER else "seller"
        opponent = seller if role == "buyer" else buyer
        tier = tiers[(seed // len(self.pairings)) % len(tiers)]
        index = seed // per_index
        if (pinned := pins.get("role")) is not None:
            if pinned not in ("buyer", "seller"):
                raise ValueError(f"role must be 'buyer' or 'seller', not {pinned!r}")
            role = pinned
        if (pinned := pins.get("opponent")) is not None:
            if pinned not in self.opponents:
                raise ValueError(
                    f"unknown opponent {pinned!r}: this server plays {', '.join(self.opponents)}"
                )
            opponent = str(pinned)
        if (pinned := pins.get("tier")) is not None:
            if pinned not in tiers:
                raise ValueError(f"tier must be one of {', '.join(tiers)}, not {pinned!r}")
            tier = pinned
        if (pinned := pins.get("index")) is not None:
            index = _natural("index", pinned)
        return Episode(seed=seed, role=role, opponent=opponent, tier=tier, index=index)


def _natural(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a whole number of at least 0, not {value!r}")
    return value


class BargainEnvironment(Environment[BargainAction, BargainObservation, BargainState]):
    """One session: negotiations one after another, each from ``reset`` to ``done``.

    Bad input (an unknown reset argument, opponent or tier; a step before reset or after the
    end) raises ``ValueError`` with one sentence, which OpenEnv's server sends back as the
    error, and leaves the session as it was.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, served: Served, sink: Sink | None = None) -> None:
        super().__init__()
        self._served = served
        self._sink = sink
        self._limit = served.settings.seats.max_tool_rounds
        self._env = BargainToolEnv(seed=served.secret)
        self._episode: Episode | None = None
        self._state = BargainState(max_tool_rounds=self._limit)
        self.record: NegotiationRecord | None = None
        """The last finished negotiation (both sides' numbers: never sent to the seat)."""

    # -- OpenEnv's contract -----------------------------------------------------------------

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> BargainObservation:
        """Open a negotiation: job ``seed`` of the served tournament (a fresh seed when None),
        with ``role``, ``opponent``, ``tier`` and ``index`` pinned when given."""
        if unknown := sorted(set(kwargs) - set(RESET_ARGUMENTS)):
            raise ValueError(
                f"unknown reset argument {unknown[0]!r} (reset takes {', '.join(RESET_ARGUMENTS)})"
            )
        chosen = secrets.randbelow(2**31) if seed is None else _natural("seed", seed)
        episode = self._served.episode(chosen, kwargs)
        briefing = self._env.reset(
            role=episode.role,
            tier=episode.tier,
            index=episode.index,
            opponent=self._served.factories[episode.opponent],
        )
        self._episode = episode
        self.record = None
        self._state = BargainState(
            episode_id=episode_id,
            step_count=0,
            role=episode.role,
            opponent=episode.opponent,
            tier=episode.tier,
            index=episode.index,
            seed=episode.seed,
            key=episode.key(self._served.run),
            max_tool_rounds=self._limit,
        )
        return self._observe(briefing=briefing, tools=model_seat.tools(DEFAULT_RULES))

    def step(
        self, action: BargainAction, timeout_s: float | None = None, **kwargs: Any
    ) -> BargainObservation:
        """Run one tool call; ``tool=None``, or a call past ``max_tool_rounds``, ends the
        seat's play (the negotiation is played out without it)."""
        del timeout_s, kwargs  # the negotiation's clock is virtual
        seat = self._env.seat
        if self._episode is None or seat is None:
            raise ValueError("no negotiation: call reset first")
        if self._state.done:
            raise ValueError("the negotiation is over: call reset to start another")
        if action.tool is None or self._state.step_count >= self._limit:
            return self._end()
        bound = model_seat.bind(action.tool, action.arguments)
        self._state.step_count += 1
        text = (
            bound if isinstance(bound, str) else call_tool(seat, bound.name, bound.arguments).text
        )
        if seat.referee.is_open:
            return self._observe(result=text)
        return self._end(text)

    @property
    def state(self) -> BargainState:
        """The session's episode."""
        return self._state

    # -- internals ------------------------------------------------------------------------

    def _end(self, text: str = "") -> BargainObservation:
        reward = self._env.get_reward()  # plays the negotiation out with the seat silent
        seat, episode = self._env.seat, self._episode
        assert seat is not None and episode is not None
        names = (
            (LEARNER, episode.opponent) if episode.role == "buyer" else (episode.opponent, LEARNER)
        )
        self.record = record_from(seat.referee, names)
        self._state.done = True
        if self._sink is not None and self._state.key is not None:
            self._sink(self._state.key, self.record)
        return self._observe(result=text, reward=reward, outcome=self.record.outcome.status)

    def _observe(
        self,
        *,
        briefing: str = "",
        tools: list[dict[str, Any]] | None = None,
        result: str = "",
        reward: float | None = None,
        outcome: str | None = None,
    ) -> BargainObservation:
        episode = self._episode
        assert episode is not None
        return BargainObservation(
            done=reward is not None,
            reward=reward,
            briefing=briefing,
            tools=tools or [],
            result=result,
            role=episode.role,
            opponent=episode.opponent,
            tier=episode.tier,
            index=episode.index,
            seed=episode.seed,
            step=self._state.step_count,
            max_tool_rounds=self._limit,
            outcome=outcome,
        )


def create_bargain_app(
    settings: PlaySettings, *, sink: Sink | None = None, max_sessions: int = 16
) -> FastAPI:
    """OpenEnv's own app (``create_app``) serving ``settings``: ``/ws`` sessions (OpenEnv's
    ``EnvClient``), ``/reset``, ``/step``, ``/state``, ``/schema``, ``/health``, at most
    ``max_sessions`` sessions at once; without ``/mcp`` (see the module's docstring).

    Raises ``ValueError`` (one sentence) for settings it cannot serve, ``AgentSpecError`` for
    an unknown opponent."""
    served = Served(settings)
    factory = functools.partial(BargainEnvironment, served, sink)
    app = create_app(
        factory,
        BargainAction,
        BargainObservation,
        env_name="dealroom",
        max_concurrent_envs=max_sessions,
    )
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", None) != "/mcp"]
    app.add_middleware(_ClosedSocket)
    return app


class _ClosedSocket:
    """openenv-core 0.3's ``/ws`` closes, after the session, a socket its client has already
    closed; starlette raises ``WebSocketDisconnect`` there, which uvicorn would log as an error
    at the end of every session. Swallowed here, for WebSocket connections only."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        with contextlib.suppress(WebSocketDisconnect):
            await self.app(scope, receive, send)


def store_sink(store: ResultsStore, run: str = "openenv") -> Sink:
    """A sink writing each finished negotiation to ``store`` under ``run`` and its tournament
    job key (the first play of a key is kept), for ``dealroom report``."""

    def sink(key: str, record: NegotiationRecord) -> None:
        store.add(key, record, run=run, extra={"index": int(key.split("/")[2])})

    return sink


class BargainClient(EnvClient[BargainAction, BargainObservation, BargainState]):
    """OpenEnv's WebSocket client for a dealroom server (``async with BargainClient(url)``, or
    ``BargainClient(url).sync()``); a server's error raises ``RuntimeError``."""

    async def __aenter__(self) -> Self:
        # EnvClient's own says it returns an EnvClient of unknown types: connect, return self.
        await getattr(self, "connect")()  # noqa: B009
        return self

    def _step_payload(self, action: BargainAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[BargainObservation]:
        observation = BargainObservation.model_validate(
            {
                **payload.get("observation", {}),
                "done": payload.get("done", False),
                "reward": payload.get("reward"),
            }
        )
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> BargainState:
        return BargainState.model_validate(payload)


__all__ = [
    "LEARNER",
    "RESET_ARGUMENTS",
    "BargainAction",
    "BargainClient",
    "BargainEnvironment",
    "BargainObservation",
    "BargainState",
    "Episode",
    "Served",
    "Sink",
    "create_bargain_app",
    "served_settings",
    "store_sink",
]

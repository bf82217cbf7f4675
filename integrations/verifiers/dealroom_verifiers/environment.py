"""dealroom as a verifiers 0.4 environment: a rollout is one negotiation on a dealroom server.

- ``DealroomTaskset`` yields one task per scenario (``n`` scenarios of ``tier`` under the
  secret, from index ``start``); every rollout of a task plays the same scenario against the
  same house agent (``opponent``), each in a room of its own.
- ``DealroomTask.setup`` opens that room through the admin API (one negotiation, the house
  agent in the other seat) and hands the model's seat token to the harness through the
  rollout's runtime environment (never the trace); ``finalize`` reads the negotiation's full
  outcome from the admin API; the ``surplus_share`` reward is the seat's surplus share as
  dealroom scores it (own surplus / gains from trade; 0 without a deal).
- ``DealroomHarness`` is the model: it plays the one model seat (``dealroom_verifiers.seat``)
  in-process, every model call through verifiers' interception endpoint, so the trace holds the
  conversation as the model read it.
- ``DealroomEnv`` has one role, ``player``, on the subprocess runtime: the harness runs no
  program and executes no model-written code, so it needs no container.

The secret comes from ``$DEALROOM_SECRET`` (hex, at least 128 bits; the scenarios, and the
house agent's draws, are then reproducible); without it a fresh one is drawn per run. It is
never written to the trace; the server's results store keeps it with each negotiation.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Iterator
from typing import Any, Literal, cast

import verifiers.v1 as vf  # pyright: ignore[reportMissingTypeStubs] (typed, no py.typed)
from openai import AsyncOpenAI
from pydantic import Field

from dealroom_verifiers._remote import HttpSeatClient
from dealroom_verifiers.seat import MAX_TOOL_ROUNDS, Message, ModelSeat
from dealroom_verifiers.server import AdminApi, ServerError

ADMIN_TOKEN_ENV = "DEALROOM_ADMIN_TOKEN"
SECRET_ENV = "DEALROOM_SECRET"
SEAT_TOKEN_ENV = "DEALROOM_SEAT_TOKEN"
"""Where setup puts the seat token for the harness (the rollout's runtime environment)."""

Trace = vf.Trace[Any, Any, Any]
"""A rollout's trace (verifiers leaves its task data and state generic)."""

Role = Literal["buyer", "seller"]
Tier = Literal["low", "mid", "high"]


class DealroomConfig(vf.TasksetConfig):
    """``--env.taskset.*``: which server, which seat, against whom, which scenarios."""

    server: str = "http://127.0.0.1:8765"
    """The dealroom HTTP server (``dealroom serve --transport http``); its admin token is read
    from $DEALROOM_ADMIN_TOKEN."""
    role: Role = "buyer"
    """The seat the model plays."""
    opponent: str = "boulware"
    """The house agent in the other seat: any scripted agent spec the server resolves
    (``boulware``, ``conceder``, ``linear:e=2``, ...)."""
    tier: Tier = "mid"
    n: int = Field(default=10, ge=1)
    """Scenarios (tasks): indexes ``start`` .. ``start + n - 1`` of the tier under the secret."""
    start: int = Field(default=0, ge=0)
    max_tool_rounds: int = Field(default=MAX_TOOL_ROUNDS, ge=1)
    run: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    """Store the negotiations under this run in the server's results store, so that
    ``dealroom report STORE --run RUN`` scores them (default: each room's own)."""


class DealroomData(vf.TaskData):
    """One scenario: where it is played, and by whom (no private value: the server draws it)."""

    server: str
    role: Role
    opponent: str
    tier: Tier
    index: int
    max_tool_rounds: int
    run: str | None = None


class DealroomTask(vf.Task[DealroomData, vf.State, vf.TaskConfig]):
    """One negotiation: its room, opened per rollout, and its scoring."""

    def __init__(
        self, data: DealroomData, config: vf.TaskConfig | None = None, *, secret: str = ""
    ) -> None:
        super().__init__(data, config)
        self._secret = secret

    def runtime_env(self) -> dict[str, str]:
        """The secret, for setup only (live, not traced)."""
        return {SECRET_ENV: self._secret}

    async def setup(self, trace: Trace, runtime: vf.Runtime) -> None:
        """Open this rollout's room; the seat token goes to the harness, the room id to the
        trace."""
        data = self.data
        api = AdminApi(data.server, os.environ.get(ADMIN_TOKEN_ENV, ""))
        request: dict[str, Any] = {
            "tier": data.tier,
            "index": data.index,
            "secret": runtime.env[SECRET_ENV],
            "negotiations": 1,
            f"house_{'seller' if data.role == 'buyer' else 'buyer'}": data.opponent,
        }
        if data.run is not None:
            request["participant"] = data.run
        try:
            opened = await _to_thread(api.open_room, request)
        except ServerError as error:
            # A setting every rollout shares (the opponent spec, the tier) is wrong: stop the
            # run with the server's one line rather than fail each rollout on its own.
            raise SystemExit(f"dealroom-verifiers: {error}") from None
        runtime.env = {**runtime.env, SEAT_TOKEN_ENV: opened.token}
        del runtime.env[SECRET_ENV]  # the harness needs no secret
        trace.info["dealroom"] = {"room": opened.room, "mcp": api.mcp_url}

    async def finalize(self, trace: Trace, runtime: vf.Runtime) -> None:
        """Read the negotiation's full outcome (admin only) once the harness has played it."""
        info = cast(dict[str, Any], trace.info.get("dealroom") or {})
        if "room" not in info:
            return
        api = AdminApi(self.data.server, os.environ.get(ADMIN_TOKEN_ENV, ""))
        info["outcome"] = await _to_thread(api.outcome, str(info["room"]))

    def _outcome(self, trace: Trace) -> dict[str, Any]:
        info = cast(dict[str, Any], trace.info.get("dealroom") or {})
        outcome = info.get("outcome")
        if outcome is None:
            raise vf.TaskError(f"the negotiation in room {info.get('room')} has not ended")
        return cast(dict[str, Any], outcome)

    def _surplus(self, outcome: dict[str, Any]) -> float:
        return float(outcome[f"{self.data.role}_surplus"])

    @vf.reward(weight=1.0)
    async def surplus_share(self, trace: Trace) -> float:
        """Own surplus / gains from trade, as dealroom's ``surplus_share`` counts each
        negotiation (0 without a deal); 0 where no deal was possible (gains <= 0), which
        dealroom leaves out of its mean (the ``has_gains`` metric marks them)."""
        outcome = self._outcome(trace)
        gains = float(outcome["gains"])
        return self._surplus(outcome) / gains if gains > 0 else 0.0

    @vf.metric
    async def surplus(self, trace: Trace) -> float:
        """Own surplus in money (value - price, or price - cost; 0 without a deal)."""
        return self._surplus(self._outcome(trace))

    @vf.metric
    async def has_gains(self, trace: Trace) -> float:
        """1 where a deal was possible (gains > 0): dealroom's means count these only."""
        return float(float(self._outcome(trace)["gains"]) > 0)

    @vf.metric
    async def deal(self, trace: Trace) -> float:
        """1 for a deal."""
        return float(self._outcome(trace)["status"] == "deal")

    @vf.metric
    async def ir_violation(self, trace: Trace) -> float:
        """1 for a deal at a price worse than the seat's own value."""
        return float(bool(self._outcome(trace)[f"{self.data.role}_ir_violation"]))

    @vf.metric
    async def invalid_actions(self, trace: Trace) -> float:
        """The seat's actions the referee refused."""
        return float(self._outcome(trace)["invalid_actions"][self.data.role])


class DealroomTaskset(vf.Taskset[DealroomTask, DealroomConfig]):
    """``n`` scenarios of one tier, the model in one seat against one house agent."""

    def __init__(self, config: DealroomConfig) -> None:
        super().__init__(config)
        self._secret = os.environ.get(SECRET_ENV) or secrets.token_hex(32)

    def load(self) -> Iterator[DealroomTask]:
        """Check the server and the admin token once, then one task per scenario index."""
        config = self.config
        try:
            AdminApi(config.server, os.environ.get(ADMIN_TOKEN_ENV, "")).check()
        except ServerError as error:
            raise SystemExit(f"dealroom-verifiers: {error}") from None
        for index in range(config.start, config.start + config.n):
            data = DealroomData(  # pyright: ignore[reportCallIssue] (a defaulted Field(...))
                id=f"{config.tier}-{index}",
                name=f"{config.role} vs {config.opponent}, {config.tier} #{index}",
                prompt="",  # the briefing: read from the seat once its room is open
                server=config.server,
                role=config.role,
                opponent=config.opponent,
                tier=config.tier,
                index=index,
                max_tool_rounds=config.max_tool_rounds,
                run=config.run,
            )
            yield DealroomTask(data, config.task, secret=self._secret)


class DealroomHarnessConfig(vf.HarnessConfig):
    """The model seat's knobs (none beyond the task's ``max_tool_rounds``)."""


class DealroomHarness(vf.Harness[DealroomHarnessConfig]):
    """The one model seat, run in-process: model calls through the interception endpoint,
    tool calls on the room server's seat."""

    NEEDS_CONTAINER = False
    EXECUTES_CODE = False

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
    ) -> vf.ProgramResult:
        """Play the negotiation; the conversation is in the trace (the interception's)."""
        task = DealroomData.model_validate(data.model_dump())
        info = cast(dict[str, Any], trace.info["dealroom"])
        client = AsyncOpenAI(base_url=endpoint, api_key=secret)

        async def complete(messages: list[Message], tools: list[dict[str, Any]]) -> Message:
            response = await client.chat.completions.create(
                model=ctx.model,
                messages=cast(Any, messages),
                tools=cast(Any, tools),
            )
            reply = response.choices[0].message
            message: Message = {"role": "assistant", "content": reply.content or ""}
            calls = [c for c in reply.tool_calls or [] if c.type == "function"]
            if calls:
                message["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.function.name,
                            "arguments": call.function.arguments,
                        },
                    }
                    for call in calls
                ]
            return message

        seat = HttpSeatClient(str(info["mcp"]), token=runtime.env[SEAT_TOKEN_ENV])
        try:
            played = await ModelSeat(seat, complete, max_tool_rounds=task.max_tool_rounds).play()
        finally:
            await _to_thread(seat.close)
            await client.close()
        info.update(ended_by=played.ended_by, tool_rounds=played.rounds)
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")

    @vf.metric
    async def tool_rounds(self, trace: Trace) -> float:
        """Replies whose tool calls were made."""
        return float(cast(dict[str, Any], trace.info.get("dealroom") or {}).get("tool_rounds", 0))


class DealroomEnvConfig(vf.EnvConfig):
    """One role, ``player`` (``--env.player.*``): the model, on the subprocess runtime."""

    player: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class DealroomEnv(vf.Env[DealroomEnvConfig]):
    """One negotiation per episode: the player's one run."""

    async def run(self, task: vf.Task[Any, Any, Any], agents: vf.Agents[Any]) -> None:
        await agents.player.run(task)


async def _to_thread(fn: Any, *args: Any) -> Any:
    """A blocking (urllib) call off the event loop."""
    return await asyncio.to_thread(fn, *args)

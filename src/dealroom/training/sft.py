"""Chat transcripts for supervised fine-tuning: what a served seat reads, byte for byte.

One seat's view of one negotiation in the OpenAI messages format, on the surface a model is
served and trained on (docs/design.md, "What a model reads"):

- the first message is ``user``: the seat's briefing, exactly as MCP and
  :class:`~dealroom.training.trl.BargainToolEnv` ``reset`` give it;
- then one ``assistant`` message per tool call and one ``tool`` message with its result, the
  text of ``dealroom.protocol.seat_text`` that the served tool returns;
- ``tools`` is ``function_schemas(rules)``, what TRL builds from the environment's methods.

A scripted seat's conversation is not inferred from the record's events: the record is
*replayed*. The seat's agent plays as the served scripted player does
(``dealroom.play.players.ScriptedPlayer``: the same translation of decisions into tool calls)
against a ``LocalSeat`` whose house agent is the other seat's agent, both seeded as in the
original negotiation (``seat_rng`` under the run's secret or seed). Each call and the text it
returned are written down. The replay must reproduce the stored events exactly; a record that
does not (another seed, an edited record, an opponent that is not scripted) raises
``NotReplayable`` instead of yielding a different conversation. A stored conversation is
exported as it was read and written (``conversation_example``): an LLM seat's, and a client
seat's of a server's room (``dealroom.server.room``: an MCP client's, a person's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from dealroom.client.seat import SeatError
from dealroom.engine.calls import LocalSeat
from dealroom.engine.match import seat_rng
from dealroom.play.players import ScriptedPlayer, SeatContext
from dealroom.play.registry import AgentSpecError, resolve_player
from dealroom.protocol import (
    DEFAULT_RULES,
    Action,
    ActionResult,
    Role,
    Rules,
    SeatState,
    ToolErrorPayload,
    WaitResult,
    model_seat,
    other,
    seat_view,
)
from dealroom.protocol.arguments import arguments_of
from dealroom.protocol.briefing import briefing
from dealroom.protocol.errors import DealroomError
from dealroom.protocol.model_seat import ArgumentsForm, call_messages, with_arguments
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Seed
from dealroom.protocol.tools import ToolName, function_schemas
from dealroom.server.seat_names import CLIENT_NAMES
from dealroom.training.trl import call_tool

TOOL_SCHEMAS: list[dict[str, Any]] = function_schemas(DEFAULT_RULES)
"""The seat's tools as OpenAI function schemas under the default rules: exactly what TRL builds
from BargainToolEnv's methods (``dealroom.protocol.tools.function_schemas``)."""


REMOTE_CLIENT = "remote client"
"""Why a server's client seat (an MCP client, a person on the web page) is not replayed: its
moves came from outside (expected; an LLM client seat exports its stored conversation instead)."""

OPPOSITE_REMOTE = "opposite a remote client"
"""Why a scripted seat whose other side was a server's client seat is not replayed (expected:
only a scripted pair replays)."""

ANOTHER_SURFACE = "another surface"
"""Why a stored conversation is not exported: it is not the one model seat's form (a system
message, or news as user messages), which would teach a model a conversation it is never served."""

ERRORED = "ended in an error"
"""Why a model's stored conversation is not exported: its model call failed for good (the seat
walked away), so its last turn is not the model's own."""


class NotReplayable(DealroomError):
    """A record whose seat cannot be replayed into the conversation it had; ``reason`` is a
    short, stable phrase to count skipped records by."""

    kind = "not_replayable"

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class _Call:
    name: ToolName
    arguments: dict[str, Any]
    text: str


@dataclass(slots=True)
class RecordingSeat:
    """The scripted player's seat: each call goes through ``call_tool`` on a ``LocalSeat``
    (what BargainToolEnv's tools do), and is written down with the text it returned."""

    seat: LocalSeat
    calls: list[_Call] = field(default_factory=list[_Call])

    async def act(self, action: Action) -> ActionResult:
        result = self._call(action.type, arguments_of(action))
        assert isinstance(result, ActionResult)
        return result

    async def wait_for_opponent(self, timeout_s: float | None = None) -> WaitResult:
        result = self._call(
            "wait_for_opponent", {} if timeout_s is None else {"timeout_s": timeout_s}
        )
        assert isinstance(result, WaitResult)
        return result

    async def get_state(self) -> SeatState:
        result = self._call("get_state", {})
        assert isinstance(result, SeatState)
        return result

    def _call(
        self, name: ToolName, arguments: dict[str, Any]
    ) -> ActionResult | WaitResult | SeatState:
        reply = call_tool(self.seat, name, arguments)
        self.calls.append(_Call(name, arguments, reply.text))
        if isinstance(reply.result, ToolErrorPayload):
            raise SeatError(name, reply.result)
        return reply.result


def _scripted(spec: str, seat: str) -> ScriptedPlayer:
    if spec in CLIENT_NAMES:  # a server's client seat: its moves came from outside
        reason = REMOTE_CLIENT if seat == "seat" else OPPOSITE_REMOTE
        raise NotReplayable(reason, f"{seat} {spec!r} was a client of a server's room")
    try:
        player = resolve_player(spec)
    except AgentSpecError as exc:
        raise NotReplayable("unknown agent", f"{seat} {spec!r}: {exc}") from None
    if not isinstance(player, ScriptedPlayer):
        raise NotReplayable("not scripted", f"{seat} {spec!r} is not a scripted agent")
    return player


def replay_calls(
    record: NegotiationRecord, role: Role, *, seed: Seed = 0, rules: Rules = DEFAULT_RULES
) -> list[_Call]:
    """The seat's tool calls and the texts they returned, replayed from the record's agents;
    raises NotReplayable unless the replay reproduces the record's events and outcome."""
    scenario = record.scenario
    them = other(role)
    mine = _scripted(record.buyer if role == "buyer" else record.seller, "seat")
    theirs = _scripted(record.seller if role == "buyer" else record.buyer, "opponent")
    house = theirs.factory(seat_view(scenario, them), seat_rng(seed, scenario.id, them))
    local = LocalSeat(scenario, role, house, rules)
    seat = RecordingSeat(local)
    context = SeatContext(role=role, rules=rules, seed=seed)

    async def play() -> None:
        await mine.play(seat, context)

    anyio.run(play)
    local.finish()
    if tuple(local.referee.events_since(0)) != record.events:
        raise NotReplayable("events differ", f"{scenario.id} {role}: the replay played otherwise")
    if local.referee.outcome != record.outcome:
        raise NotReplayable("outcome differs", f"{scenario.id} {role}")
    return seat.calls


def sft_example(
    record: NegotiationRecord,
    role: Role,
    *,
    seed: Seed = 0,
    rules: Rules = DEFAULT_RULES,
    arguments: ArgumentsForm = "object",
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """One scripted seat's conversation as ``{"messages", "tools", "metadata"}``, replayed
    under the run's ``seed`` and ``rules``; None if the seat never acted. Raises
    NotReplayable for a record that does not replay into itself."""
    if not any(event.by == role for event in record.events):
        return None
    calls = replay_calls(record, role, seed=seed, rules=rules)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": briefing(seat_view(record.scenario, role), rules)}
    ]
    for n, call in enumerate(calls, start=1):
        asked, answered = call_messages(f"call_{n}", call.name, dict(call.arguments), call.text)
        messages += [with_arguments(asked, arguments), answered]
    return {
        "messages": messages,
        "tools": function_schemas(rules),
        "metadata": _metadata(record, role, metadata),
    }


def conversation_example(
    record: NegotiationRecord,
    role: Role,
    conversation: Mapping[str, Any],
    *,
    rules: Rules = DEFAULT_RULES,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """A seat whose conversation was stored with the negotiation (LLM seats, client seats of a
    server's room: an MCP client's, a person's): exactly the messages it read and wrote, with
    the one model seat's tools under the run's ``rules`` (what TRL offers the trained model;
    a client seat's series tool is not among them, and its calls were never stored). None if
    it holds no call. Raises NotReplayable for a conversation on another surface (a system
    message, or news as user messages: an ``llm:`` seat recorded before the one model seat),
    which would teach a model a conversation it is never served."""
    messages = list(conversation.get("messages") or [])
    if len(messages) < 2:
        return None
    if any(m.get("role") != "user" for m in messages[:1]) or any(
        m.get("role") in ("system", "user") for m in messages[1:]
    ):
        raise NotReplayable(
            ANOTHER_SURFACE, f"{record.scenario.id} {role}: not the one model seat's form"
        )
    meta = _metadata(record, role, {"source": "conversation", **(metadata or {})})
    return {"messages": messages, "tools": model_seat.tools(rules), "metadata": meta}


def _metadata(
    record: NegotiationRecord, role: Role, metadata: dict[str, Any] | None
) -> dict[str, Any]:
    return {
        "role": role,
        "agent": record.buyer if role == "buyer" else record.seller,
        "opponent": record.seller if role == "buyer" else record.buyer,
        "scenario_id": record.scenario.id,
        "tier": record.scenario.tier,
        "status": record.outcome.status,
        "end_reason": record.outcome.end_reason,
        **(metadata or {}),
    }

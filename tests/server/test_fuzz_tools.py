"""Garbage in every tool argument, over MCP in memory: a clear error or a valid result, always.

Hypothesis draws arguments for each tool (the right names with wrong values, missing and extra
fields, wrong types, huge, negative, NaN and infinite numbers, unicode, megabyte strings). Each
call is made on a fresh negotiation against a house agent, through one long-lived client (the
server must stay up across every example). After each call:

- a result is either a tool error with a readable message (never the SDK's bare "Error
  executing tool X", which means an unexpected exception) or a structured result the tool's own
  model accepts;
- an argument the tool's schema refuses leaves the negotiation exactly as it was (the seat's
  get_state, the referee's events, live offers and outcome); an action the referee refuses
  leaves no event or offer of the seat (only its invalid-action count, and the clock time the
  action took, during which the house agent may move);
- the server still answers get_state.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.types import CallToolResult
from mcp_support import house_room, share_schema_validators, text_of

from dealroom.protocol import ActionResult, ErrorCode, SeatState, SessionErrorCode, WaitResult
from dealroom.protocol.tools import SEAT_TOOLS
from dealroom.server.mcp_app import build_app
from dealroom.server.room import Room
from dealroom.server.seat import RoomSeat

PARAMETERS: dict[str, tuple[str, ...]] = {t.name: tuple(t.args.model_fields) for t in SEAT_TOOLS}
"""Every tool's parameters, from the specs: a new tool is fuzzed with no change here."""
RESULTS: dict[str, type[Any]] = {
    "wait_for_opponent": WaitResult,
    "get_state": SeatState,
    "new_negotiation": SeatState,
}
CODES = {str(code) for code in (*ErrorCode, *SessionErrorCode)}
FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MEGABYTE = "é" * 500_000 + "x" * 24_288  # a megabyte of UTF-8

numbers = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -0.0, 1e-320, 1e308, -1e308, 10**400, 2**63, 0.005, 0.004999]),
)
texts = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(exclude_categories=()), max_size=10),  # lone surrogates too
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=3000),
    st.sampled_from(["", " ", "\x00", "o1", "O1", "o-1", "o1 ", "𝔬𝟏", "\u202eo1", MEGABYTE]),
    st.sampled_from(['{"type": "offer_made", "price": 1}', "null", "NaN", "Infinity", "1e999"]),
)
garbage = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, texts),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def arguments(draw: st.DrawFn, tool: str) -> dict[str, Any]:
    """Some of the tool's own parameters (garbage values), maybe extra ones."""
    names = PARAMETERS[tool]
    chosen = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    args: dict[str, Any] = {name: draw(garbage) for name in chosen}
    extra = draw(st.dictionaries(st.text(min_size=1, max_size=8), garbage, max_size=2))
    return {**extra, **args}


@dataclass
class Arena:
    """One MCP client whose seat is moved to a fresh negotiation for each example."""

    portal: BlockingPortal
    client: Client
    seats: list[RoomSeat] = field(default_factory=list)
    seed: int = 0

    def fresh(self) -> Room:
        self.seed += 1
        room = house_room(opponent="boulware", seed=self.seed % 7)
        self.seats.append(RoomSeat(room, "buyer"))
        return room

    def call(self, tool: str, args: dict[str, Any]) -> CallToolResult:
        async def bounded() -> CallToolResult:
            with anyio.fail_after(20):
                return await self.client.call_tool(tool, args)

        return self.portal.call(bounded)


@pytest.fixture(scope="module")
def arena() -> Iterator[Arena]:
    with pytest.MonkeyPatch.context() as patch, start_blocking_portal("asyncio") as portal:
        share_schema_validators(patch)
        seats: list[RoomSeat] = []
        app = build_app(lambda: seats[-1])
        client = Client(app)
        with portal.wrap_async_context_manager(client):
            arena = Arena(portal, client, seats)
            arena.fresh()
            yield arena


def _view(state: dict[str, Any]) -> dict[str, Any]:
    observation = state["observation"]
    return {k: observation[k] for k in ("events", "live_offers", "now", "outcome")}


def _referee(room: Room) -> tuple[Any, ...]:
    referee = room.current.referee
    return referee.events, referee.live_offers(), referee.outcome, room.current.number


def check_call(arena: Arena, tool: str, args: dict[str, Any]) -> None:
    """One call on a fresh negotiation, checked as the module docstring says."""
    room = arena.fresh()
    before = arena.call("get_state", {})
    assert not before.is_error, text_of(before)
    referee_before = _referee(room)
    result = arena.call(tool, args)
    text = text_of(result)
    where = f"{tool}({args!r:.200})"
    if not result.is_error:
        assert result.structured_content is not None, f"{where}: no structured result"
        RESULTS.get(tool, ActionResult).model_validate(result.structured_content)
    elif text.startswith("invalid_arguments: "):  # refused by the tool's schema: nothing happened
        assert _referee(room) == referee_before, f"{where} changed the negotiation"
        after = arena.call("get_state", {})
        assert not after.is_error, text_of(after)
        assert after.structured_content is not None and before.structured_content is not None
        assert _view(after.structured_content) == _view(before.structured_content)
    else:  # refused by the referee when it took effect: one sentence after a stable code
        reason = text
        code = reason.split(":", 1)[0]
        assert code in CODES, f"{where}: not a clear error: {text[:300]!r}"
        assert len(reason) > len(code) + 10, f"{where}: {text!r}"
        # The action's clock time passed (the other side may have moved meanwhile), but the
        # seat itself did nothing.
        events, offers, outcome, count = _referee(room)
        assert (outcome, count) == referee_before[2:], f"{where} changed the negotiation"
        assert events[: len(referee_before[0])] == referee_before[0]
        assert all(e.by != "buyer" for e in events[len(referee_before[0]) :]), where
        assert not any(o.by == "buyer" for o in offers), where
    alive = arena.call("get_state", {})
    assert not alive.is_error, f"{where}: the seat no longer answers: {text_of(alive)[:300]}"


@pytest.mark.parametrize("tool", sorted(PARAMETERS))
@pytest.mark.slow
def test_garbage_arguments_get_a_clear_error_or_a_valid_result(arena: Arena, tool: str) -> None:
    @FUZZ
    @given(args=arguments(tool))
    def fuzz(args: dict[str, Any]) -> None:
        check_call(arena, tool, args)

    fuzz()


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("make_offer", {"price": math.nan}),
        ("make_offer", {"price": math.inf}),
        ("make_offer", {"price": -math.inf}),
        ("make_offer", {"price": 10**400}),
        ("make_offer", {"price": 1e308}),
        ("make_offer", {"price": 5e-324}),
        ("make_offer", {"price": "1e999"}),
        ("make_offer", {"price": [1]}),
        ("make_offer", {"price": 100, "message": MEGABYTE}),
        ("send_message", {"text": MEGABYTE}),
        ("walk_away", {"message": {"nested": ["json"]}}),
        ("wait_for_opponent", {"timeout_s": math.nan}),
        ("wait_for_opponent", {"timeout_s": 10**30}),
        ("accept", {"offer_id": "o1" * 100}),
        ("reject", {"offer_id": None}),
        ("get_state", {"role": "seller"}),
    ],
)
def test_known_nasty_arguments(arena: Arena, tool: str, args: dict[str, Any]) -> None:
    check_call(arena, tool, args)


@pytest.mark.parametrize("tool", ["send_message", "make_offer", "walk_away", "reject", "accept"])
def test_text_that_is_not_valid_unicode_is_refused_before_it_reaches_the_negotiation(
    arena: Arena, tool: str
) -> None:
    # A lone surrogate: JSON can carry it ("\\ud800", e.g. in an LLM's tool-call arguments, which
    # json.loads accepts), but it cannot be written back out as UTF-8. Accepted into the
    # negotiation, it would make every later result, and the record itself, unserialisable.
    bad = "deal? \ud800"
    args: dict[str, Any] = {
        "send_message": {"text": bad},
        "make_offer": {"price": 100, "message": bad},
        "walk_away": {"message": bad},
        "reject": {"offer_id": "o1", "message": bad},
        "accept": {"offer_id": bad},
    }[tool]
    check_call(arena, tool, args)


def test_unknown_tools_are_a_clear_error_and_the_server_lives_on(arena: Arena) -> None:
    for name in ["", "make_offer ", "MAKE_OFFER", "admin", "__init__", "x" * 10_000]:
        result = arena.call(name, {"price": 1})
        assert result.is_error and text_of(result).strip()
    assert not arena.call("get_state", {}).is_error
    tools = arena.portal.call(arena.client.list_tools)
    assert {t.name for t in tools.tools} == set(PARAMETERS)

"""Random play in market rooms (issue 38): nothing a seat can read reveals another seat's value.

Hypothesis draws a market room (2 to 4 buyers, the virtual or the wall clock, which seats are
clients' and which house agents) and a run
of random calls, legal and not, by its client seats (the seller's and buyers'), each made the
way a client makes it: an MCP tool call through an in-memory client of the seat
(``build_app`` over ``RoomRegistry.served_seat``, as ``/mcp`` serves it), or the seat page's
``POST /web/api/seat/call`` through the ASGI app. Its timer is a fake one, moved on only while a
call has not come back once the event loop has settled (a call waiting for a turn, a wake, its
timeout on the wall) and between calls on the wall clock. Every market is played to its end
(each client seat accepting a live offer or waiting); a room that plays a series (one client
seat) plays half the calls in its first market and the rest in the next.

After every call each client seat's page (``GET /web/api/seat``) and the room page
(``GET /web/api/room``) are read; a seat also reads its MCP resources, briefing and tools. Then:

- a buyer has read no other buyer's value, no price or message of another buyer's thread, no
  other buyer's name, and not the seller's cost, in any market of the series so far (``leaked``,
  which also catches the private fields from which a value can be computed);
- the seller has read no buyer's value, before or after the end (docs/security.md: its page
  never shows one, nor the measures that need them);
- the room page says the room's clock, shows no private value while the market runs, and never
  an event a client seat has not reached (virtual clock; a seat counted absent reaches the
  present on its next call) or that lies past the wall's present (wall clock).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeVar

import anyio
import httpx2
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from market_random import Setup, Step, call_of, live_offer, setups, steps
from mcp import Client
from mcp_support import ADMIN, house_resolver, share_schema_validators, text_of

from dealroom.agents.market import market_seller
from dealroom.engine.market_wall import WallTurns
from dealroom.protocol import Event, MessageSent, OfferMade, OfferRejected
from dealroom.protocol.market_referee import MarketEntry
from dealroom.protocol.wire import ClockKind
from dealroom.server.market_room import SELLER, MarketRoomServed
from dealroom.server.market_series import MarketSeries
from dealroom.server.mcp_app import MODEL_TOOLS_URI, OBSERVATION_URI, TRANSCRIPT_URI, build_app
from dealroom.server.mcp_http import build_http_app
from dealroom.server.negotiation import RoomLimits
from dealroom.server.rooms import RoomRegistry
from leaks import leaked

_T = TypeVar("_T")

HOST = "http://127.0.0.1:8765"
LIMITS = RoomLimits(idle_s=1.0, abandon_s=3600.0, max_wait_s=30.0)
TICK = 0.5
"""Fake seconds the timer moves on each time the tasks have settled with a call still blocked."""
SETTLE = 40
"""Rounds of the event loop that let every ready task run before the timer moves on (an
in-memory MCP call crosses a few streams)."""
COMPUTABLE = ("best_value", "buyer_values", "efficiency", "seller_share", "early_sale_loss")
"""Fields of the scored market from which a value follows (beside ``leaks.TWO_SIDED_FIELDS``)."""
EXAMPLE_PRICE = Decimal("1250.00")
"""The price the tools' schemas and some refusals give as an example (``protocol.arguments``,
``seat_text``): every seat reads it, whoever offers it."""
BUYER_FIELDS = ("buyer_value", "seller_cost", "seller_surplus", "buyer_surplus", "gains")
"""What a buyer must not read: the seller's cost, or a field another value follows from."""
SELLER_FIELDS = ("buyer_value", "buyer_surplus", "gains", *COMPUTABLE)
"""What the seller must not read, before or after the end (docs/security.md)."""
SPECTATOR_FIELDS = ("seller_cost", "buyer_value", "buyer_surplus", "gains", *COMPUTABLE)


# -- what each seat has seen --------------------------------------------------------------------


@dataclass
class Seen:
    """What one client seat may know, and what it must not read."""

    seat: str
    public: set[Decimal] = field(default_factory=lambda: {EXAMPLE_PRICE})
    """Amounts it was shown anyway: its own values, every price in its own threads, the
    prices it typed."""
    read: list[str] = field(default_factory=list[str])
    """Everything it read in the current check (cleared after each)."""
    own_value_found: bool = False


def _thread_prices(entries: list[MarketEntry], buyers: set[str] | None) -> set[Decimal]:
    return {
        entry.event.price
        for entry in entries
        if isinstance(entry.event, OfferMade) and (buyers is None or entry.buyer in buyers)
    }


def _messages(entries: list[MarketEntry], buyers: set[str]) -> set[str]:
    texts: set[str] = set()
    for entry in entries:
        event = entry.event
        if entry.buyer in buyers and isinstance(event, MessageSent | OfferMade | OfferRejected):
            message = event.text if isinstance(event, MessageSent) else event.message
            if message:
                texts.add(message)
    return texts


class Play:
    """One drawn room, played by random client calls."""

    def __init__(
        self, setup: Setup, registry: RoomRegistry, http: httpx2.AsyncClient, now: list[float]
    ) -> None:
        self.setup = setup
        self.registry = registry
        self.http = http
        self.now = now
        created = registry.create(setup.request())
        assert tuple(created.tokens) == setup.clients, created.tokens
        assert created.spectator is not None
        self.room = created.room
        self.tokens = created.tokens
        self.spectator = created.spectator
        self.series: MarketSeries = registry.markets[created.room]
        self.markets: list[MarketRoomServed] = [self.series.current]
        self.seen = {seat: Seen(seat) for seat in setup.clients}
        self.clients: dict[str, Client] = {}
        self.words = itertools.count(1)

    @property
    def market(self) -> MarketRoomServed:
        return self.series.current

    # -- calls ----------------------------------------------------------------------------

    async def timed(self, call: Callable[[], Awaitable[_T]]) -> _T:
        """Run ``call``, moving the fake timer on while every task is blocked (a call waiting
        for a turn, a wake, its timeout on the wall): the timer moves only when the call has
        not come back once the loop has settled."""
        done: list[_T] = []

        async def run() -> None:
            done.append(await call())

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(run)
                while not done:
                    for _ in range(SETTLE):  # anyio's wait_all_tasks_blocked sleeps 0.1 s a try
                        await anyio.lowlevel.checkpoint()
                    if done:
                        break
                    self.now[0] += TICK
                    self.market.clients.changed()
        return done[0]

    async def call(self, seat: str, tool: str, arguments: dict[str, Any], *, web: bool) -> str:
        """One tool call of ``seat`` by the client's path: what the client reads back."""
        for value in arguments.values():
            if isinstance(value, float):
                self.seen[seat].public.add(Decimal(str(value)).quantize(Decimal("0.01")))
        if web:
            headers = {"Authorization": f"Bearer {self.tokens[seat]}"}
            body = {"tool": tool, "arguments": arguments}
            reply = await self.timed(
                lambda: self.http.post(f"{HOST}/web/api/seat/call", json=body, headers=headers)
            )
            assert reply.status_code == 200, reply.text
            return reply.text
        client = self.clients[seat]
        result = await self.timed(lambda: client.call_tool(tool, arguments))
        return text_of(result) + json.dumps(result.structured_content, default=str)

    async def read_mcp(self, seat: str) -> list[str]:
        """The seat's MCP resources and briefing, as its client reads them."""
        client = self.clients[seat]
        texts: list[str] = []
        for uri in (OBSERVATION_URI, TRANSCRIPT_URI, MODEL_TOOLS_URI):
            contents = (await client.read_resource(uri)).contents
            texts.append("".join(getattr(c, "text", "") for c in contents))
        briefing = await client.get_prompt("briefing")
        texts += [getattr(m.content, "text", "") for m in briefing.messages]
        tools = (await client.list_tools()).tools
        texts.append(json.dumps([t.model_dump(mode="json") for t in tools]))
        return texts

    async def page(self, token: str, path: str) -> str:
        response = await self.http.get(
            f"{HOST}{path}", headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 200, response.text
        return response.text

    async def play(self, drawn: list[Step], stack: AsyncExitStack) -> None:
        """The drawn calls; where the room plays a series, half of them in its first market,
        which is then played to its end, and the rest in the next (the client's Next)."""
        for seat in self.setup.clients:
            seat_of = self._provider(seat)
            client = Client(build_app(seat_of, series=self.series.series.available))
            self.clients[seat] = await stack.enter_async_context(client)
            self.seen[seat].read += await self.read_mcp(seat)
        await self.check()
        half = len(drawn) // 2 if self.series.series.available else len(drawn)
        await self.steps(drawn[:half])
        if half < len(drawn):
            await self.finish()
            if self.market.number == 1:
                seat = self.setup.clients[0]
                started = await self.call(seat, "new_negotiation", {}, web=half % 2 == 0)
                self.seen[seat].read.append(started)
                self._follow()
                await self.check()
            await self.steps(drawn[half:])
        await self.finish()
        for seat in self.setup.clients:
            assert self.seen[seat].own_value_found or seat == SELLER, seat  # the search works

    async def steps(self, drawn: list[Step]) -> None:
        for step in drawn:
            seat = self.setup.clients[step.seat % len(self.setup.clients)]
            if self.setup.clock == "wall":
                self.now[0] += step.gap
            if step.kind == "read":
                self.seen[seat].read += await self.read_mcp(seat)
            else:
                word = f"note{next(self.words)}q"
                tool, arguments = call_of(self.market, seat, step, word)
                self.seen[seat].read.append(await self.call(seat, tool, arguments, web=step.web))
            self._follow()
            await self.check()

    def _follow(self) -> None:
        """Keep every market the room has played (a client's Next starts one)."""
        if self.market is not self.markets[-1]:
            self.markets.append(self.market)

    async def finish(self) -> None:
        """Every client seat accepts a live offer it may accept, or waits, until the market
        ends, then reads its state: what each reads after the end
        is checked too."""
        for _ in range(20):
            if not self.market.is_open:
                break
            if self.setup.clock == "wall":  # past any deadline in 20 rounds, a closed seat's
                self.now[0] += 5.0  # waits passing no time
            for seat in self.setup.clients:
                live = live_offer(self.market, seat)
                if live is not None and self.market.is_open:
                    named = {"buyer": live[0]} if seat == SELLER else {}
                    arguments = {**named, "offer_id": live[1]}
                    accepted = await self.call(seat, "accept", arguments, web=True)
                    self.seen[seat].read.append(accepted)
                    continue
                waited = await self.call(seat, "wait_for_opponent", {"timeout_s": 60}, web=False)
                self.seen[seat].read.append(waited)
            await self.check()
        assert not self.market.is_open
        for seat in self.setup.clients:
            self.seen[seat].read.append(await self.call(seat, "get_state", {}, web=True))
            self.seen[seat].read += await self.read_mcp(seat)
        await self.check()

    def _provider(self, seat: str) -> Callable[[], Any]:
        return lambda: self.registry.served_seat(self.room, seat)

    # -- the checks -----------------------------------------------------------------------

    async def check(self) -> None:
        """Every client seat's page, then what each has read since the last check; the room
        page."""
        for seat, seen in self.seen.items():
            seen.read.append(await self.page(self.tokens[seat], "/web/api/seat"))
            self._check_seat(seen)
            seen.read = []
        self._check_room(await self.page(self.spectator, "/web/api/room"))

    def _check_seat(self, seen: Seen) -> None:
        seat = seen.seat
        for market in self.markets:
            log = market.engine.referee.log
            if seat == SELLER:
                seen.public |= _thread_prices(log, None)
                continue
            seen.public |= _thread_prices(log, {seat}) | {market.market.value(seat)}
        text = "\n".join(seen.read)
        for n, market in enumerate(self.markets, 1):
            log = market.engine.referee.log
            names = market.market.buyers
            where = f"{seat} read in market {n} of {self.setup}"
            if seat == SELLER:
                for buyer in names:
                    value = market.market.value(buyer)
                    found = leaked(text, value, seen.public, SELLER_FIELDS)
                    assert found is None, (where, buyer, found)
                continue
            if leaked(text, market.market.value(seat), set(), ()) is not None:
                seen.own_value_found = True
            others = {b for b in names if b != seat}
            cost = market.market.seller_cost
            assert (found := leaked(text, cost, seen.public, BUYER_FIELDS)) is None, (where, found)
            for other in others:
                value = market.market.value(other)
                found = leaked(text, value, seen.public, ())
                assert found is None, (where, other, found)
                assert f'"{other}"' not in text and f" {other}:" not in text, (where, other)
            for price in _thread_prices(log, others) - seen.public:
                assert leaked(text, price, set(), ()) is None, (where, "their price", price)
            for message in _messages(log, others) - _messages(log, {seat}):
                assert message not in text, (where, "their message", message)

    def _check_room(self, text: str) -> None:
        """The room page: no value while the market runs; never ahead of the clients."""
        page = json.loads(text)
        market = self.market
        assert page["negotiation"] == market.number and page["clock"] == self.setup.clock
        if page["open"]:
            shown = _thread_prices(market.engine.referee.log, None)
            hidden = [market.market.seller_cost, *market.market.buyer_values]
            for value in hidden:
                found = leaked(text, value, shown, SPECTATOR_FIELDS)
                assert found is None, ("room page", found, self.setup)
        events = {
            thread["buyer"]: [_event_key(e) for e in thread["events"]] for thread in page["threads"]
        }
        assert all(e[0] <= page["now"] for column in events.values() for e in column)
        if self.setup.clock == "wall":  # nothing past the wall's present
            turns = market.turns
            assert isinstance(turns, WallTurns) and market.wall is not None
            assert page["now"] <= turns.wall <= self.now[0]
            assert page["now"] == 0 or market.wall.started
            return
        referee, present = market.engine.referee, market.engine.now
        for seat in self.setup.clients:  # what each client seat has reached on the clock
            back = seat in market.turns.absent  # its next call wakes it at the present
            if seat == SELLER:
                calls = market.seller_calls
                assert calls is not None
                view = referee.observe_seller(present) if back else calls.observation()
                reached = {t.buyer: _keys(t.events) for t in view.threads}
            else:
                calls = market.buyer_calls[seat]
                thread = referee.observe_buyer(seat, present) if back else calls.observation()
                reached = {seat: _keys(thread.events)}
            for buyer, keys in reached.items():
                assert events[buyer] == keys[: len(events[buyer])], (
                    "room page ahead of",
                    seat,
                    buyer,
                    self.setup,
                )


def _keys(events: tuple[Event, ...]) -> list[tuple[float, int, str]]:
    return [_event_key(json.loads(e.model_dump_json())) for e in events]


def _event_key(event: dict[str, Any]) -> tuple[float, int, str]:
    return (event["t"], event["seq"], event["type"])


async def _play(setup: Setup, drawn: list[Step]) -> None:
    now = [0.0]
    registry = RoomRegistry(
        writer=None,
        resolve_house=house_resolver,
        limits=LIMITS,
        timer=lambda: now[0],
        resolve_seller=market_seller,
    )
    app = build_http_app(registry, admin_token=ADMIN)
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport) as http, AsyncExitStack() as stack:
        await Play(setup, registry, http, now).play(drawn, stack)
    registry.close()


RANDOM_PLAY = settings(
    # No shrinking: each example plays a whole room, and shrinking a failing one ran past five
    # minutes; a failure prints its room and calls (``Setup``, ``Step``s) as drawn.
    phases=(Phase.explicit, Phase.generate),
    max_examples=10,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("several", [False, True], ids=["one_client", "several_clients"])
@pytest.mark.parametrize("clock", ["virtual", "wall"])
@RANDOM_PLAY
@given(data=st.data())
def test_no_market_seat_reads_another_seats_value_in_random_play(
    clock: ClockKind, several: bool, data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    share_schema_validators(monkeypatch)
    setup = data.draw(setups(clock, several), label="setup")
    drawn = data.draw(st.lists(steps, min_size=6, max_size=24), label="steps")
    anyio.run(_play, setup, drawn)

"""Market rooms (one seller, N buyers) in a cluster (``dealroom serve --transport http --workers
N``): created through the front, a market room lands on a worker as any room does, and every
token it issues (each client seat's, the spectator's) names that worker, so each client plays
over MCP through the front, the seat pages and the spectator page read it, the admin view finds
it, and the market
is stored once; a worker killed mid-market comes back with it. A wall-clock market room too: its
pages say the wall clock, and a worker killed mid-market brings it back with its clock counting
from the journaled start (it ran on while the worker was down) until its deadline ends it."""

from __future__ import annotations

import os
import signal
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from market_support import buyer_plays, sell
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_support import ADMIN, ok, secret_of, share_schema_validators
from test_cluster import WAIT_S, cluster, create, http, mcp_status

from dealroom.server.cluster_owners import owner_of

pytestmark = pytest.mark.anyio

SECRET = secret_of(38).hex()
WALL_DEADLINE = 12.0
"""A wall-clock market's deadline, in real seconds (the reaper ends it there)."""


async def play_through(url: str, tokens: dict[str, str], limit: float) -> dict[str, dict[str, Any]]:
    """The seller and buyers b1, b2 play the market through the front, each its own MCP client,
    at once: each seat's last reply, by seat."""
    ends: dict[str, dict[str, Any]] = {}

    async def seller() -> None:
        async with seat(url, tokens["seller"]) as client:
            ends["seller"] = await sell(client)

    async def buyer(name: str) -> None:
        async with seat(url, tokens[name]) as client:
            ends[name] = await buyer_plays(client, [])

    with anyio.fail_after(limit):
        async with anyio.create_task_group() as group:
            group.start_soon(seller)
            group.start_soon(buyer, "b1")
            group.start_soon(buyer, "b2")
    return ends


@pytest.fixture(autouse=True)
def _setup(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", ADMIN)  # the workers inherit it


@asynccontextmanager
async def seat(url: str, token: str) -> AsyncIterator[Client]:
    """An MCP client of one seat, through the front."""
    async with (
        http(token) as client,
        Client(streamable_http_client(f"{url}/mcp", http_client=client)) as session,
    ):
        yield session


def stored_markets(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return [key for (key,) in db.execute("SELECT key FROM markets ORDER BY key")]


async def until_stored(url: str, room: str) -> dict[str, Any]:
    """The room's admin view through the front once its market is stored (polled: the room
    lives in another process)."""
    async with http(ADMIN) as admin:
        with anyio.fail_after(WAIT_S):
            while True:
                view: dict[str, Any] = (await admin.get(f"{url}/admin/rooms/{room}")).json()
                if view["stored"]:
                    return view
                await anyio.sleep(0.05)


async def spectate(url: str, spectator: str, room: str) -> str:
    """The spectator's view of the room through the front, and its first streamed event."""
    async with http(spectator) as watcher:
        page = await watcher.get(f"{url}/web/room")
        assert page.status_code == 200
        view = await watcher.get(f"{url}/web/api/room")
        assert view.status_code == 200, view.text
        assert view.json()["room"] == room
        with anyio.fail_after(WAIT_S):
            async with watcher.stream("GET", f"{url}/web/api/room/events") as stream:
                assert stream.status_code == 200
                assert stream.headers["content-type"].startswith("text/event-stream")
                async for line in stream.aiter_lines():
                    if line.startswith("data: "):
                        return line
    raise AssertionError("no event streamed")


async def test_a_market_room_is_served_whole_by_the_worker_that_created_it(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path) as c:
        first = await create(  # worker 0's market room; a market seller in the house seat
            c.url, buyers=2, house_seller="auctioneer", house_buyers={"b2": "linear"}
        )
        assert list(first["tokens"]) == ["b1"] and owner_of(first["tokens"]["b1"], 2) == 0
        created = await create(c.url, buyers=3, house_buyers={"b3": "linear"}, secret=SECRET)
        room, tokens = created["room"], created["tokens"]
        assert list(tokens) == ["seller", "b1", "b2"]
        assert {owner_of(t, 2) for t in [*tokens.values(), created["spectator"]]} == {1}
        for name, token in tokens.items():  # another worker's prefix: unknown there
            status, _ = await mcp_status(c.url, "w0." + token.removeprefix("w1."))
            assert status == 401, name
        async with http(ADMIN) as admin:
            shown = await admin.get(f"{c.url}/admin/rooms/{room}")
        assert shown.status_code == 200, shown.text
        assert shown.json()["clients"] == ["seller", "b1", "b2"] and shown.json()["open"]
        for name, kind in (("seller", "market_seller"), ("b1", "seat")):  # their seat pages
            async with http(tokens[name]) as page:
                view = await page.get(f"{c.url}/web/api/seat")
            assert view.status_code == 200, view.text
            assert view.json()["kind"] == kind and view.json()["room"] == room
        ends = await play_through(c.url, tokens, 120)
        assert ends["seller"]["outcome"]["status"] == "deal"
        assert (await spectate(c.url, created["spectator"], room)).startswith("data: ")
        view = await until_stored(c.url, room)
        assert view["key"] == f"{room}/1" and view["outcome"]["status"] == "deal"
    assert stored_markets(c.results) == [f"{room}/1"]


@pytest.mark.slow
async def test_a_restarted_worker_brings_its_market_room_back(tmp_path: Path) -> None:
    async with cluster(tmp_path, restart_s=0.1) as c:
        await create(c.url, house_seller="hardliner")  # the next room lands on worker 1
        created = await create(c.url, buyers=2, house_seller="auctioneer", secret=SECRET)
        room, tokens = created["room"], created["tokens"]
        assert list(tokens) == ["b1", "b2"] and owner_of(tokens["b1"], 2) == 1
        with anyio.fail_after(WAIT_S):
            async with seat(c.url, tokens["b1"]) as client:
                await ok(client, "make_offer", price=100)
        pid = c.workers.pid(1)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        with anyio.fail_after(WAIT_S):
            while c.workers.pid(1) == pid or not c.workers.alive(1):  # noqa: ASYNC110
                await anyio.sleep(0.05)
        async with http(ADMIN) as admin:
            shown = await admin.get(f"{c.url}/admin/rooms/{room}")
        assert shown.status_code == 200, shown.text
        assert shown.json()["open"] and shown.json()["events"] >= 1
        view = await spectate(c.url, created["spectator"], room)
        assert "100" in view
        with anyio.fail_after(120):
            async with seat(c.url, tokens["b1"]) as client:
                state = await ok(client, "get_state")
                mine = [o for o in state["observation"]["live_offers"] if o["by"] == "buyer"]
                assert [float(o["price"]) for o in mine] == [100.0]
            async with anyio.create_task_group() as group:
                for name in tokens:
                    group.start_soon(_play_out, c.url, tokens[name])
        await until_stored(c.url, room)
    assert stored_markets(c.results) == [f"{room}/1"]


async def _play_out(url: str, token: str) -> None:
    async with seat(url, token) as client:
        await buyer_plays(client, [])


async def test_a_wall_clock_market_room_is_played_through_the_front_and_stored_once(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path) as c:
        await create(c.url, house_seller="hardliner")  # the next room lands on worker 1
        created = await create(
            c.url,
            buyers=3,
            clock="wall",
            house_buyers={"b3": "linear"},
            deadline=WALL_DEADLINE,
            secret=SECRET,
        )
        room, tokens = created["room"], created["tokens"]
        assert list(tokens) == ["seller", "b1", "b2"]
        assert {owner_of(t, 2) for t in [*tokens.values(), created["spectator"]]} == {1}
        for name, kind in (("seller", "market_seller"), ("b1", "seat")):  # their seat pages
            async with http(tokens[name]) as page:
                view = await page.get(f"{c.url}/web/api/seat")
            assert view.status_code == 200, view.text
            shown = view.json()
            assert (shown["kind"], shown["room"], shown["clock"]) == (kind, room, "wall")
            assert "real time" in shown["turn"]["text"]
        async with http(created["spectator"]) as watcher:
            page = (await watcher.get(f"{c.url}/web/api/room")).json()
        assert page["clock"] == "wall" and page["negotiation"] == 1
        ends = await play_through(c.url, tokens, WALL_DEADLINE + WAIT_S)
        assert ends["seller"]["outcome"] is not None
        assert ends["seller"]["now"] <= WALL_DEADLINE  # wall seconds since its start
        assert (await spectate(c.url, created["spectator"], room)).startswith("data: ")
        view = await until_stored(c.url, room)
        assert view["key"] == f"{room}/1" and view["clock"] == "wall"
    assert stored_markets(c.results) == [f"{room}/1"]


@pytest.mark.slow
async def test_a_restarted_worker_brings_its_wall_clock_market_back_its_clock_ran_on(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, restart_s=0.1) as c:
        await create(c.url, house_seller="hardliner")  # the next room lands on worker 1
        created = await create(
            c.url,
            buyers=2,
            clock="wall",
            house_seller="hardliner",
            deadline=WALL_DEADLINE,
            secret=SECRET,
        )
        room, tokens = created["room"], created["tokens"]
        assert list(tokens) == ["b1", "b2"] and owner_of(tokens["b1"], 2) == 1
        with anyio.fail_after(WAIT_S):
            async with seat(c.url, tokens["b1"]) as client:
                offered = await ok(client, "make_offer", price=100)
        killed_at = anyio.current_time()
        pid = c.workers.pid(1)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        with anyio.fail_after(WAIT_S):
            while c.workers.pid(1) == pid or not c.workers.alive(1):  # noqa: ASYNC110
                await anyio.sleep(0.05)
        async with http(ADMIN) as admin:
            shown = (await admin.get(f"{c.url}/admin/rooms/{room}")).json()
        assert shown["open"] and shown["clock"] == "wall" and shown["events"] >= 1
        assert "100" in await spectate(c.url, created["spectator"], room)
        with anyio.fail_after(WAIT_S):
            async with seat(c.url, tokens["b1"]) as client:
                state = await ok(client, "get_state")
        assert state["clock"] == "wall"
        events = state["observation"]["events"]  # its offer, as it was made (then answered)
        mine = [(e["t"], float(e["price"])) for e in events if e["type"] == "offer_made"]
        assert mine[0] == (offered["now"], 100.0)
        # Its clock counts from the journaled start: it ran on while the worker was down.
        down = anyio.current_time() - killed_at
        assert state["observation"]["now"] >= offered["now"] + down - 0.5
        view = await until_stored(c.url, room)  # nobody calls again: the deadline ends it
        assert view["outcome"]["end_reason"] == "deadline"
        assert view["outcome"]["time"] == WALL_DEADLINE
    assert stored_markets(c.results) == [f"{room}/1"]

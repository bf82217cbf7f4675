"""Open rooms survive a restart: every room journals its inputs as they happen, a server that
starts again replays the journals, and clients go on with the tokens they hold.

In process: a restored room is the same room (same view for each seat, and played on the same
way it ends the same, byte for byte). Across processes: ``dealroom serve`` killed with SIGKILL
during many live negotiations, restarted on the same store: every negotiation goes on from where
its client last saw it and is stored exactly once.
"""

from __future__ import annotations

import contextlib
import json
import random
import signal
import sqlite3
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_support import ADMIN, house_resolver, ok, share_schema_validators, tls
from test_faults import serve_process

from dealroom.protocol import Accept, MakeOffer, Role, RoomRequest, SendMessage, WalkAway
from dealroom.server.journal import Journals
from dealroom.server.negotiation import RoomLimits
from dealroom.server.room import Room
from dealroom.server.room_settings import SeatPlayer
from dealroom.server.rooms import RoomRegistry
from dealroom.store.results import ResultsStore
from dealroom.store.writer import ResultWriter

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _shared_validators(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)


async def views(registry: RoomRegistry, room: str) -> dict[str, str]:
    found = registry.rooms[room]
    out = {}
    for role in found.seats.remote_roles:
        observation = await found.current.observe(role, deliver=False)
        out[role] = observation.model_dump_json() + found.current.hint(role)
    return out


async def test_a_restored_room_is_the_same_room_and_ends_the_same(
    tmp_path: Path, registries: Callable[[Path], RoomRegistry]
) -> None:
    registry_at = registries
    path = tmp_path / "r.db"
    first = registry_at(path)
    requests = [
        RoomRequest(index=3, house_seller="boulware"),
        RoomRequest(index=4, house_buyer="conceder", clock="virtual"),
        RoomRequest(index=5),  # two clients
    ]
    rooms = [first.create(r) for r in requests]
    series = first.seat(rooms[0].room, "buyer")
    await series.act(WalkAway())
    await series.new_negotiation()  # the first negotiation is stored; this one is open
    await series.act(MakeOffer(price=Decimal(100)))
    await series.wait(10)
    await first.seat(rooms[1].room, "seller").act(SendMessage(text="Hello."))
    await first.seat(rooms[1].room, "seller").act(MakeOffer(price=Decimal(9000)))
    pair = rooms[2].room
    await first.seat(pair, "buyer").act(MakeOffer(price=Decimal(500)))  # the seller idles
    await first.seat(pair, "seller").state()
    before = {r.room: await views(first, r.room) for r in rooms}

    second = registry_at(path)  # the first process is gone (nothing closed, nothing flushed)
    assert second.restore() == 3
    assert {r.room: await views(second, r.room) for r in rooms} == before
    for created in rooms:
        for role, token in created.tokens.items():
            assert second.seat_for_token(token) == (created.room, role)
    assert second.rooms[rooms[0].room].series.finished == 1
    assert second.rooms[rooms[0].room].seats["buyer"].total_surplus == Decimal("0.00")

    async def finish(registry: RoomRegistry) -> list[str]:
        out = []
        for created in rooms:
            room = registry.rooms[created.room]
            for role in room.seats.remote_roles:
                if room.current.is_open:
                    seat = registry.seat(created.room, role)
                    update = await seat.wait(1)
                    theirs = [o for o in update.live_offers if o.by != role]
                    action = Accept(offer_id=theirs[0].offer_id) if theirs else WalkAway()
                    await seat.act(action)
            await room.records.save()
            record = registry.writer.store.get(room.records.key(room.current))  # type: ignore[union-attr]
            assert record is not None
            out.append(record.record.model_dump_json())
        return out

    assert await finish(second) == await finish(first)


async def test_a_restored_experiment_room_remembers_who_consented_and_when(
    tmp_path: Path, registries: Callable[[Path], RoomRegistry]
) -> None:
    path = tmp_path / "r.db"
    first = registries(path)
    created = first.create(
        RoomRequest(house_seller="boulware", participant="p01", consent="I agree.")
    )
    room = first.rooms[created.room]
    assert room.consent.needed("buyer")
    room.consent.agree("buyer")
    room.consent.agree("buyer")  # the first time counts
    await first.seat(created.room, "buyer").act(MakeOffer(price=Decimal(100)))

    second = registries(path)
    assert second.restore() == 1
    restored = second.rooms[created.room]
    assert not restored.consent.needed("buyer")
    assert restored.consent.agreed == room.consent.agreed
    third = registries(path)  # restored twice: still once, still the same time
    assert third.restore() == 1
    assert third.rooms[created.room].consent.agreed == room.consent.agreed


async def test_a_torn_last_line_is_dropped_and_a_broken_journal_is_left_alone(
    tmp_path: Path, registries: Callable[[Path], RoomRegistry]
) -> None:
    registry_at = registries
    path = tmp_path / "r.db"
    first = registry_at(path)
    good = first.create(RoomRequest(index=1, house_seller="hardliner"))
    await first.seat(good.room, "buyer").act(MakeOffer(price=Decimal(100)))
    journal = Journals.beside(path).directory / f"{good.room}.jsonl"
    torn = '{"n":1,"op":["submit","buy'  # killed mid-write: its call never returned
    journal.write_text(journal.read_text() + torn)
    broken = Journals.beside(path).directory / "room-broken.jsonl"
    broken.write_text('{"room": "room-broken", "request": {"tier": "nope"}, "tokens": {}}\n')
    before = await views(first, good.room)
    second = registry_at(path)
    assert second.restore() == 1
    assert await views(second, good.room) == before
    assert broken.exists() and "room-broken" not in second.rooms


# -- kill -9 of a real server during many live negotiations -------------------------------------

ROOMS = 24


async def _client(url: str, token: str) -> Any:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, verify=tls(), timeout=30
    )
    return http, Client(streamable_http_client(f"{url}/mcp", http_client=http))


async def _play(url: str, token: str, seen: list[Any], rng: random.Random, *, finish: bool) -> None:
    """Bargain in small steps, ``seen`` keeping the events the client was shown, until killed;
    with ``finish``, end it at once: accept their offer if it is good for us, else walk away."""
    http, client = await _client(url, token)
    async with http, client:
        state = await ok(client, "get_state")
        seen[:] = state["observation"]["events"]
        value = state["observation"]["private_value"]
        bid = value * 0.5
        while state["observation"]["outcome"] is None:
            theirs = [o for o in state["observation"]["live_offers"] if o["by"] != "buyer"]
            if finish and theirs and theirs[0]["price"] <= value:
                await client.call_tool("accept", {"offer_id": theirs[0]["offer_id"]})
            elif finish:
                await client.call_tool("walk_away", {})
            else:
                bid = min(bid * (1.02 + rng.random() / 50), value)
                await client.call_tool("make_offer", {"price": round(bid, 2)})
            state = await ok(client, "get_state")
            seen[:] = state["observation"]["events"]


@pytest.mark.slow
async def test_a_server_killed_during_many_live_negotiations_restores_them_all(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results.db"
    rng = random.Random(7)
    seen: dict[str, list[Any]] = {}
    tokens: dict[str, str] = {}
    with anyio.fail_after(120):
        async with serve_process(results) as (url, process):
            async with httpx2.AsyncClient(verify=tls()) as http:
                for i in range(ROOMS):
                    response = await http.post(
                        f"{url}/admin/rooms",
                        json={"index": i, "house_seller": "boulware", "deadline": 600},
                        headers={"Authorization": f"Bearer {ADMIN}"},
                    )
                    body = response.json()
                    tokens[body["room"]] = body["tokens"]["buyer"]
                    seen[body["room"]] = []
            async with anyio.create_task_group() as group:
                for room, token in tokens.items():

                    async def bargain(room: str = room, token: str = token) -> None:
                        with contextlib.suppress(Exception):  # the server dies under it
                            await _play(url, token, seen[room], rng, finish=False)

                    group.start_soon(bargain)
                with anyio.move_on_after(60):
                    while sum(len(s) for s in seen.values()) < ROOMS * 6:  # noqa: ASYNC110
                        await anyio.sleep(0.05)
                process.send_signal(signal.SIGKILL)  # while every client is mid-negotiation
                process.wait(10)
        assert all(seen[room] for room in tokens), "every negotiation had started"
        with sqlite3.connect(results) as db:
            assert db.execute("SELECT COUNT(*) FROM negotiations").fetchone() == (0,)

        async with serve_process(results) as (url, process):
            restored: dict[str, list[Any]] = {}
            for room, token in tokens.items():
                http, client = await _client(url, token)
                async with http, client:
                    state = await ok(client, "get_state")
                restored[room] = state["observation"]["events"]
                assert state["observation"]["outcome"] is None
            for room in tokens:  # what each client saw is there, as it saw it
                assert restored[room][: len(seen[room])] == seen[room], room
            async with anyio.create_task_group() as group:
                for room, token in tokens.items():
                    group.start_soon(lambda t=token, r=room: _play(url, t, [], rng, finish=True))
            process.terminate()
            process.wait(10)
    with sqlite3.connect(results) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = db.execute("SELECT key, record FROM negotiations").fetchall()
    assert sorted(key for key, _ in rows) == sorted(f"{room}/1" for room in tokens)
    for key, record in rows:
        room = key.split("/")[0]
        events = json.loads(record)["events"]
        assert events[: len(seen[room])] == seen[room], "the stored record continues the same"
    print(f"kill -9: {ROOMS} live negotiations, {len(rows)} stored, 0 duplicates")  # noqa: T201


async def test_an_in_process_players_report_is_marked_partial_after_a_restart(
    tmp_path: Path,
) -> None:
    """An LLM house seat restarts from zero with the server: its stored usage and
    conversation then hold only the calls after the restart, and its row says so."""
    path = tmp_path / "r.db"

    async def idle(room: Room, role: Role) -> None:
        del room, role  # never run: no task group plays the registry's players here

    def registry() -> RoomRegistry:
        writer = ResultWriter.beside(ResultsStore(path))
        writer.recover()
        registry = RoomRegistry(
            writer=writer,
            resolve_house=house_resolver,
            resolve_player=lambda spec: SeatPlayer(spec, idle),  # reports are made by hand
            journals=Journals.beside(path),
            limits=RoomLimits(idle_s=0.05),  # the idle seller counts as waiting at once
        )
        return registry

    first = registry()
    created = [first.create(RoomRequest(index=i, house_seller="llm:fake")) for i in (3, 4)]
    await first.seat(created[0].room, "buyer").act(MakeOffer(price=Decimal(100)))
    first.close()  # killed: its files closed, its journals stay
    first.writer.store.close()  # type: ignore[union-attr]
    second = registry()  # the first room is rebuilt from its journal
    assert second.restore() == 2

    async def stored(room_id: str) -> dict[str, Any]:
        room = second.rooms[room_id]
        room.records.player_report(room.current, "seller", {"name": "llm:fake", "model_calls": 2})
        await second.seat(room_id, "buyer").act(WalkAway())
        await room.records.save()
        record = second.writer.store.get(room.records.key(room.current))  # type: ignore[union-attr]
        assert record is not None
        return record.extra["players"]["seller"]

    try:
        assert (await stored(created[0].room))["partial"] == "restarted"
        assert "partial" not in await stored(created[1].room)  # nothing of it was replayed
    finally:
        second.close()
        second.writer.store.close()  # type: ignore[union-attr]

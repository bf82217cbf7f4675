"""Served scenarios are drawn under a secret: a seat that runs our generator over everything it
can read (in memory, over stdio, in HTTP rooms) cannot find the other side's value, the ids it
sees are opaque, the same secret replays a room byte for byte, and fresh secrets differ."""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import stat
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_support import client_for, house_resolver, http_server, ok, secret_of
from scenario_search import guesses, is_opaque, matches

from dealroom.engine.match import play
from dealroom.play.registry import resolve
from dealroom.protocol import RoomRequest, Scenario, SeriesResult
from dealroom.protocol.agent import Agent, Decision
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.observation import Observation
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.scenario import SeatView
from dealroom.protocol.secret import Secret, Seed, seed_from_json
from dealroom.server.mcp_app import OBSERVATION_URI
from dealroom.server.rooms import RoomRegistry
from dealroom.store.results import ResultsStore
from dealroom.store.writer import ResultWriter

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
DEALROOM = Path(sys.executable).parent / "dealroom"


def registry() -> RoomRegistry:
    return RoomRegistry(writer=None, resolve_house=house_resolver)


async def seen_by(client: Client) -> list[dict[str, Any]]:
    """Every observation a seat can read now: get_state's and the observation resource's."""
    state = await ok(client, "get_state")
    resource = await client.read_resource(OBSERVATION_URI)
    return [state["observation"], json.loads(resource.contents[0].text)]  # type: ignore[union-attr]


def assert_blind(observation: dict[str, Any], scenario: Scenario) -> None:
    """The seat's id is opaque and the attack misses the other side's value.

    A low-tier scenario of some small seed can share item, list price and own value by chance
    (there are few cent values below $100): such a match names another scenario, not this one.
    """
    assert is_opaque(observation["scenario"]["id"]), observation["scenario"]["id"]
    other = "seller" if observation["role"] == "buyer" else "buyer"
    found = matches(observation)
    assert scenario not in found
    assert scenario.private_value(other) not in {m.private_value(other) for m in found}


async def test_a_seat_in_memory_cannot_recompute_its_rooms_scenario_from_what_it_reads() -> None:
    rooms = registry()
    for tier, role, house in [("mid", "buyer", "zic"), ("low", "seller", "boulware")]:
        request = {"tier": tier, f"house_{'seller' if role == 'buyer' else 'buyer'}": house}
        created = rooms.create(RoomRequest.model_validate(request))
        room = rooms.rooms[created.room]
        async with client_for(room, role) as client:  # type: ignore[arg-type]
            for observation in await seen_by(client):
                assert_blind(observation, room.current.scenario)
            await ok(client, "walk_away")
            finished = await ok(client, "get_state")
        (result,) = [SeriesResult.model_validate(r) for r in finished["results"]]
        assert is_opaque(result.scenario_id)
        assert result.scenario_id == room.current.scenario.id


async def test_a_seat_of_an_http_room_cannot_recompute_the_other_sides_value(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path) as server:
        with anyio.fail_after(60):
            two = await server.create_room(tier="high")  # two clients
            house = await server.create_room(house_seller="zic")
            seats = [(two, t) for t in two["tokens"].values()] + [(house, house["tokens"]["buyer"])]
            for created, token in seats:
                scenario = server.registry.rooms[created["room"]].current.scenario
                async with server.seat(token) as client:
                    for observation in await seen_by(client):
                        assert_blind(observation, scenario)
        scenarios = [server.registry.rooms[r["room"]].current.scenario for r in (two, house)]
    assert scenarios[0].id != scenarios[1].id


async def test_a_stdio_seat_cannot_recompute_it_and_the_store_keeps_the_secret_to_replay_it(
    tmp_path: Path,
) -> None:
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", ""), **_pythonpath()}
    params = StdioServerParameters(
        command=sys.executable, args=["-c", SERVE, "serve", "--opponent", "zic"], env=env
    )
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            seen = await seen_by(client)
            await ok(client, "walk_away")
    with ResultsStore(tmp_path / ".local/share/dealroom/results.db") as store:
        (row,) = list(store.iter())
    for observation in seen:
        assert_blind(observation, row.record.scenario)
    key = Secret.from_hex(row.extra["secret"])
    assert len(key.key) == 32  # the negotiation's own 256-bit key, stored with it
    assert row.record.scenario != scenario_at(key, 0, "mid")  # not the series' secret


async def test_a_rooms_negotiation_replays_byte_for_byte_from_the_key_stored_with_it(
    tmp_path: Path,
) -> None:
    writer = ResultWriter(ResultsStore(tmp_path / "r.db"))
    rooms = RoomRegistry(writer=writer, resolve_house=house_resolver)
    secret = secret_of(5)
    created = rooms.create(RoomRequest(house_seller="zic", secret=secret.hex()))
    room = rooms.rooms[created.room]
    async with client_for(room, "buyer") as client:  # the seat never acts: the deadline ends it
        while (await ok(client, "wait_for_opponent", timeout_s=60))["outcome"] is None:
            pass
    await room.records.save()
    (row,) = writer.store.iter()
    writer.store.close()
    names = (row.record.buyer, row.record.seller)

    def replayed(seed: Seed) -> NegotiationRecord:
        return play(row.record.scenario, silent, resolve("zic"), names=names, seed=seed)

    assert len(row.record.events) > 3
    assert replayed(seed_from_json(row.extra)) == row.record
    assert replayed(secret) != row.record  # the house drew under the negotiation's own key


class _Silent:
    def act(self, observation: Observation, /) -> Decision:
        return Decision()


def silent(view: SeatView, rng: random.Random) -> Agent:
    """A seat that never acts (as a client that only waits)."""
    return _Silent()


async def test_a_stdio_seat_reading_the_store_cannot_compute_its_next_negotiation(
    tmp_path: Path,
) -> None:
    # The stdio server runs as the seat's own user: whatever the store holds, the seat reads.
    db = tmp_path / ".local/share/dealroom/results.db"
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", ""), **_pythonpath()}
    params = StdioServerParameters(
        command="sh",
        args=["-c", 'umask 000; exec "$0" -c "$1" serve --opponent zic', sys.executable, SERVE],
        env=env,
    )
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            for _ in range(2):
                await ok(client, "wait_for_opponent", timeout_s=5)
            await ok(client, "walk_away")
            await ok(client, "new_negotiation")
            read = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            texts = " ".join(
                str(field) for row in read.execute("SELECT * FROM negotiations") for field in row
            )
            read.close()
            modes = {p: stat.S_IMODE(p.stat().st_mode) for p in _store_paths(tmp_path, db)}
            await ok(client, "walk_away")
    with ResultsStore(db) as store:
        _, second = sorted(store.iter(), key=lambda row: int(row.extra["negotiation"]))
    candidates = {Secret.from_hex(h) for h in re.findall(r"[0-9a-f]{32,}", texts)}
    assert candidates, "the first negotiation's key is in the store"
    nxt = second.record.scenario
    for candidate in candidates:
        for index in range(4):
            guess = scenario_at(candidate, index, nxt.tier)
            assert (guess.id, guess.seller_cost) != (nxt.id, nxt.seller_cost)
    assert {p.name: m for p, m in modes.items()} == {
        ".local": 0o700,
        "share": 0o700,
        "dealroom": 0o700,
        "results.db": 0o600,
        "results.db-wal": 0o600,
        "results.db-shm": 0o600,
    }


SERVE = "import sys; from dealroom.cli import main; sys.exit(main())"


def _pythonpath() -> dict[str, str]:
    """The test's PYTHONPATH, so that the server runs the code under test."""
    path = os.environ.get("PYTHONPATH")
    return {} if path is None else {"PYTHONPATH": path}


def _store_paths(home: Path, db: Path) -> list[Path]:
    share = home / ".local"
    return [share, share / "share", db.parent, db, Path(f"{db}-wal"), Path(f"{db}-shm")]


def test_the_attack_finds_the_value_of_a_publicly_seeded_scenario() -> None:
    # The attack is real: against the public derivation (an int seed) it recovers the value,
    # which is why served play never uses one.
    scenario = scenario_at(1234, 2, "mid")
    observation = {
        "role": "buyer",
        "private_value": str(scenario.buyer_value),
        "scenario": json.loads(scenario.public().model_dump_json()),
    }
    assert scenario.seller_cost in guesses(observation)
    assert any(m == scenario for m in matches(observation))


async def _first_house_offer(rooms: RoomRegistry, request: RoomRequest) -> tuple[str, Decimal]:
    room = rooms.rooms[rooms.create(request).room]
    async with client_for(room, "buyer") as client:
        update = await ok(client, "wait_for_opponent")
        while not update["live_offers"]:
            update = await ok(client, "wait_for_opponent")
    offer = update["live_offers"][0]
    return room.current.scenario.model_dump_json(), Decimal(str(offer["price"]))


async def test_the_same_secret_replays_a_room_and_fresh_secrets_differ() -> None:
    rooms = registry()
    given = RoomRequest(house_seller="zic", secret="fb8e20fc2e4c3f248c60c39bd652f3c1")
    first = await _first_house_offer(rooms, given)
    assert await _first_house_offer(rooms, given) == first  # scenario and house draws alike
    fresh = [await _first_house_offer(rooms, RoomRequest(house_seller="zic")) for _ in range(2)]
    assert len({first, *fresh}) == 3


@pytest.mark.parametrize(
    ("secret", "mentions"),
    [
        ("ab" * 15, "at least 128 bits"),
        ("xyz", "hex digits"),
        ("0" * 31, "hex digits"),
        ("00" * 16, "CSPRNG"),
        ("deadbeef" * 4, "CSPRNG"),
    ],
)
async def test_a_weak_secret_is_refused_by_the_admin_api_in_one_line(
    tmp_path: Path, secret: str, mentions: str
) -> None:
    import httpx2
    from mcp_support import ADMIN

    async with http_server(tmp_path) as server, httpx2.AsyncClient() as http:
        response = await http.post(
            f"{server.url}/admin/rooms",
            json={"secret": secret},
            headers={"Authorization": f"Bearer {ADMIN}"},
        )
        assert server.registry.rooms == {}
    assert response.status_code == 400
    error = response.json()["error"]
    assert mentions in error and "\n" not in error and secret not in error


async def test_a_message_limit_past_what_the_wire_carries_is_refused_by_the_admin_api(
    tmp_path: Path,
) -> None:
    import httpx2
    from mcp_support import ADMIN

    async with http_server(tmp_path) as server, httpx2.AsyncClient() as http:
        response = await http.post(
            f"{server.url}/admin/rooms",
            json={"rules": {"max_message_chars": 10**9}},
            headers={"Authorization": f"Bearer {ADMIN}"},
        )
        assert server.registry.rooms == {}
    assert response.status_code == 400
    error = response.json()["error"]
    assert "max_message_chars" in error and "10000" in error and "\n" not in error


async def test_an_agent_spec_out_of_its_range_is_refused_by_the_admin_api_in_one_line(
    tmp_path: Path,
) -> None:
    import httpx2
    from mcp_support import ADMIN

    async with http_server(tmp_path) as server, httpx2.AsyncClient() as http:
        response = await http.post(
            f"{server.url}/admin/rooms",
            json={"house_seller": "hardliner:seller_open=1e308"},
            headers={"Authorization": f"Bearer {ADMIN}"},
        )
        assert server.registry.rooms == {}  # no room that cannot be played, nothing to reap
    assert response.status_code == 400
    error = response.json()["error"]
    assert "'seller_open' must be a positive fraction of the list price, at most 10" in error
    assert "\n" not in error

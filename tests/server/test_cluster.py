"""Several server processes behind one address (``dealroom serve --transport http --workers N``).

Real worker processes (the CLI's worker entry point, each a complete room server on its Unix
socket) behind a front on a loopback port: rooms created through the front spread over the
workers, MCP clients play through it, pages and spectator tokens work through it, a token is
served by its own worker only, a killed worker fails its own rooms only and comes back with
them, and a cluster killed and started again restores each room once, in its owner.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_support import ADMIN, free_port, ok, share_schema_validators, text_of, tls
from test_faults import play_in, serve_process, stored_rows
from test_mcp_leaks import leaked

from dealroom.cli import UsageError, build_parser, main
from dealroom.cli._cluster import worker_specs
from dealroom.client.seat import SeatClient
from dealroom.protocol import RoomRequest
from dealroom.protocol.generator import DEFAULT_SPEC, scenario_at
from dealroom.server.cluster import serve_cluster
from dealroom.server.cluster_owners import (
    journal_directory,
    owner_of,
    owning,
    stray_journals,
)
from dealroom.server.cluster_workers import Workers
from dealroom.server.http_limits import (
    DEFAULT_HTTP_LIMITS,
    GuardedHttpProtocol,
    HttpLimits,
    connection_cap,
    raise_open_file_limit,
)

pytestmark = pytest.mark.anyio

WAIT_S = 60


@pytest.fixture(autouse=True)
def _setup(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", ADMIN)  # the workers inherit it


@dataclass
class Cluster:
    url: str
    workers: Workers
    results: Path
    server: uvicorn.Server
    port: int


@asynccontextmanager
async def cluster(
    tmp_path: Path,
    *flags: str,
    workers: int = 2,
    restart_s: float | None = None,
    limits: HttpLimits = DEFAULT_HTTP_LIMITS,
) -> AsyncIterator[Cluster]:
    """A front on a free loopback port and ``workers`` real worker processes."""
    port = free_port()
    results = tmp_path / "results.db"
    words = ["serve", "--transport", "http", "--workers", str(workers), "--port", str(port)]
    args = build_parser(words).parse_args([*words, "--results", str(results), *flags])
    sockets = tmp_path / "sockets"
    sockets.mkdir(exist_ok=True)
    running = Workers(worker_specs(args, sockets), restart_s=restart_s)
    async with anyio.create_task_group() as group:
        with anyio.fail_after(WAIT_S):
            server = await group.start(
                lambda **kw: serve_cluster(
                    running, host="127.0.0.1", port=port, limits=limits, **kw
                )
            )
            while not server.started:  # noqa: ASYNC110  (uvicorn has no started event)
                await anyio.sleep(0.01)
        try:
            yield Cluster(f"http://127.0.0.1:{port}", running, results, server, port)
        finally:
            server.should_exit = True


def http(token: str | None = None) -> httpx2.AsyncClient:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return httpx2.AsyncClient(headers=headers, verify=tls(), timeout=30)


async def create(url: str, **request: Any) -> dict[str, Any]:
    async with http(ADMIN) as client:
        response = await client.post(f"{url}/admin/rooms", json=request)
    assert response.status_code == 201, response.text
    return response.json()


async def until_health(url: str, up: list[bool]) -> None:
    """Poll the front's health check until its workers are up exactly as ``up`` says."""
    async with http() as client:
        with anyio.fail_after(WAIT_S):
            while True:
                body = (await client.get(f"{url}/healthz")).json()
                if [w["up"] for w in body["workers"]] == up:
                    return
                await anyio.sleep(0.05)


async def mcp_status(url: str, token: str) -> tuple[int, str]:
    """The front's answer to an MCP request carrying ``token`` (status, body)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    async with http(token or None) as client:
        response = await client.post(f"{url}/mcp", json=body, headers=headers)
    return response.status_code, response.text


def test_a_token_names_its_worker_in_its_prefix() -> None:
    assert owner_of("w0.abc", 2) == 0
    assert owner_of("w1.abc", 2) == 1
    for token in ["w2.abc", "abc", "", "w.abc", "x1.abc", "W1.abc", "w1abc"]:
        assert owner_of(token, 2) is None, token


def test_one_process_at_a_time_owns_a_workers_journals(tmp_path: Path) -> None:
    directory = journal_directory(tmp_path / "r.db", 1)
    refused = pytest.raises(OSError, match="another process still serves these rooms")
    with owning(directory), refused, owning(directory, wait_s=0.2):
        pass
    with owning(directory, wait_s=0.2):  # released: the next owner gets it at once
        pass
    named = rf"another process still serves these rooms \(pid {os.getpid()}, serving http://127\."
    with (
        owning(directory, owner="serving http://127.0.0.1:9"),
        pytest.raises(OSError, match=named),
        owning(directory, wait_s=0.2),
    ):
        pass


def test_journals_a_smaller_cluster_would_not_restore_refuse_the_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "r.db"
    stray = journal_directory(results, 3)
    stray.mkdir(parents=True)
    (stray / "room-x.jsonl").write_text("{}\n")
    assert stray_journals(results, 4) == [] and stray_journals(results, 2) == [3]
    code = main(["serve", "--transport", "http", "--workers", "2", "--results", str(results)])
    assert code == 2
    assert "start with --workers 4 or more" in capsys.readouterr().err
    assert (stray / "room-x.jsonl").read_text() == "{}\n"  # changed nothing
    for bad in ["0", "65", "two"]:
        with pytest.raises(UsageError, match="--workers: must be a whole number from 1 to 64"):
            build_parser(["serve"]).parse_args(["serve", "--workers", bad])


@pytest.mark.slow
async def test_a_cluster_started_on_a_running_clusters_store_refuses_in_one_line(
    tmp_path: Path,
) -> None:
    results = tmp_path / "r.db"
    code = "import sys; from dealroom.cli import main; sys.exit(main())"
    second = [sys.executable, "-c", code, "serve", "--transport", "http", "--workers", "2"]
    second += ["--port", str(free_port()), "--results", str(results)]
    env = {**os.environ, "DEALROOM_ADMIN_TOKEN": ADMIN}
    with anyio.fail_after(120):
        async with serve_process(results, "--workers", "2") as (url, process):
            refused = await anyio.run_process(second, env=env, check=False)  # waits 30 s for it
            async with httpx2.AsyncClient(verify=tls()) as http:
                assert (await http.get(f"{url}/healthz")).status_code == 200  # still serving
            process.terminate()
            process.wait(10)
    lines = refused.stderr.decode().splitlines()
    assert refused.returncode == 2, lines
    assert len(lines) == 2, lines  # said at once, then refused after the wait: one line each
    assert "another process serves these rooms: waiting for it to stop" in lines[0], lines
    assert "another process still serves these rooms (pid " in lines[1], lines
    assert f"worker 0 of the cluster serving {url})" in lines[1], lines


@pytest.mark.slow
async def test_a_front_killed_with_sigkill_leaves_a_socket_directory_the_next_start_removes(
    tmp_path: Path,
) -> None:
    results, temporary = tmp_path / "r.db", tmp_path  # short: socket paths have a limit
    env = {"TMPDIR": str(temporary)}
    with anyio.fail_after(120):
        async with serve_process(results, "--workers", "2", env=env) as (_, process):
            (left,) = temporary.glob(f"dealroom-w{process.pid}-*")
            process.send_signal(signal.SIGKILL)
            process.wait(10)
        assert left.is_dir()  # nothing could remove it (its workers stop: the pipe closed)
        async with serve_process(results, "--workers", "2", env=env) as (_, process):
            assert not left.exists()
            (ours,) = temporary.glob("dealroom-w*")
            assert ours.name.startswith(f"dealroom-w{process.pid}-")
            process.terminate()
            process.wait(10)
    assert list(temporary.glob("dealroom-w*")) == []


def test_workers_need_the_http_transport(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--workers", "2"]) == 2
    assert "--workers needs --transport http" in capsys.readouterr().err


async def test_the_front_keeps_the_public_sides_limits(tmp_path: Path) -> None:
    limits = HttpLimits(request_timeout_s=0.5, keep_alive_s=7.0)
    async with cluster(tmp_path, limits=limits) as c:
        protocol = c.server.config.http
        assert isinstance(protocol, type) and issubclass(protocol, GuardedHttpProtocol)
        assert protocol.request_timeout_s == 0.5
        cap = connection_cap(limits, raise_open_file_limit() // 2)  # one upstream per client
        assert protocol.max_connections == cap
        assert c.server.config.timeout_keep_alive == 7
        async with await anyio.connect_tcp("127.0.0.1", c.port) as slow:
            await slow.send(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and no more
            with anyio.fail_after(WAIT_S), pytest.raises(anyio.EndOfStream):
                await slow.receive()  # closed by the front, with no reply
        async with http() as client:  # HEAD is relayed with GET's length and no body
            got = await client.get(f"{c.url}/web/static/room.js")
            head = await client.head(f"{c.url}/web/static/room.js")
        assert got.status_code == head.status_code == 200
        assert head.headers["content-length"] == str(len(got.content)) and head.content == b""


async def test_rooms_spread_over_the_workers_and_play_through_the_front(tmp_path: Path) -> None:
    async with cluster(tmp_path) as c:
        rooms = [await create(c.url, index=i, house_seller="hardliner") for i in range(4)]
        owners = [owner_of(r["tokens"]["buyer"], 2) for r in rooms]
        assert owners == [0, 1, 0, 1]
        assert all(owner_of(r["spectator"], 2) == o for r, o in zip(rooms, owners, strict=True))
        with anyio.fail_after(WAIT_S):
            async with anyio.create_task_group() as group:
                for room in rooms:
                    group.start_soon(
                        lambda t: play_in(c.url, t, finish=True), room["tokens"]["buyer"]
                    )
        async with http(ADMIN) as admin:
            for room in rooms:  # the front asks each worker in turn
                shown = await admin.get(f"{c.url}/admin/rooms/{room['room']}")
                assert shown.status_code == 200 and shown.json()["finished"] == 1
            missing = await admin.get(f"{c.url}/admin/rooms/room-0000")
            assert missing.status_code == 404 and missing.json() == {"error": "no such room"}
    assert sorted(stored_rows(c.results)) == sorted(f"{r['room']}/1" for r in rooms)


async def test_a_study_is_served_through_the_front_by_its_own_worker(tmp_path: Path) -> None:
    body = {"id": "s1", "participants": ["a", "b"], "house": "hardliner"}
    async with cluster(tmp_path) as c, http(ADMIN) as admin:
        await create(c.url, house_seller="hardliner")  # the next study goes to worker 1
        created = await admin.post(f"{c.url}/admin/studies", json=body)
        assert created.status_code == 201, created.text
        study, seat = created.json()["token"], created.json()["participants"]["a"]
        assert owner_of(study, 2) == owner_of(seat, 2) == 1
        async with http(seat) as person:
            view = (await person.get(f"{c.url}/web/api/seat")).json()
        assert view["kind"] == "seat" and view["room"]  # no consent asked: seated at once
        async with http(study) as researcher:
            lines = (await researcher.get(f"{c.url}/web/api/study")).json()["participants"]
            exported = await researcher.get(f"{c.url}/web/api/study/payments.csv")
        assert [line["state"] for line in lines] == ["playing", "invited"]
        assert exported.status_code == 200 and exported.text.startswith("study,participant")
        shown = await admin.get(f"{c.url}/admin/studies/s1")  # found on worker 1
        assert shown.status_code == 200 and shown.json()["study"] == "s1"
        missing = await admin.get(f"{c.url}/admin/studies/s9/payments.csv")
        assert missing.status_code == 404 and missing.json() == {"error": "no such study"}


async def test_a_study_url_admits_through_the_front_on_the_studys_own_worker(
    tmp_path: Path,
) -> None:
    body = {"id": "s1", "join": {"capacity": 1}, "house": "hardliner"}
    async with cluster(tmp_path) as c, http(ADMIN) as admin, http() as visitor:
        await create(c.url, house_seller="hardliner")  # the next study goes to worker 1
        assert (await admin.post(f"{c.url}/admin/studies", json=body)).status_code == 201
        joined = await visitor.get(f"{c.url}/web/study/s1/join?label=ab12")
        assert joined.status_code == 303, joined.text
        token = joined.headers["location"].removeprefix("/web/seat#token=")
        assert owner_of(token, 2) == 1  # admitted by worker 1, which holds the study
        again = await visitor.get(f"{c.url}/web/study/s1/join?label=ab12")
        assert again.headers["location"] == joined.headers["location"]
        async with http(token) as person:
            view = (await person.get(f"{c.url}/web/api/seat")).json()
        assert view["kind"] == "seat" and view["participant"] == "J0001"
        full = await visitor.get(f"{c.url}/web/study/s1/join?label=cd34")
        assert full.status_code == 410 and full.text.startswith("study_full: ")
        missing = await visitor.get(f"{c.url}/web/study/s9/join?label=ab12")
        assert missing.status_code == 404  # no worker holds it: each said so


async def test_a_study_id_is_unique_across_the_cluster(tmp_path: Path) -> None:
    body = {"id": "s1", "participants": ["a"], "house": "hardliner"}
    async with cluster(tmp_path) as c, http(ADMIN) as admin:
        statuses = [(await admin.post(f"{c.url}/admin/studies", json=body)) for _ in range(3)]
        same: list[int] = []

        async def post(study: str) -> None:
            reply = await admin.post(f"{c.url}/admin/studies", json=body | {"id": study})
            same.append(reply.status_code)

        async with anyio.create_task_group() as group:  # at once, round robin over both
            for _ in range(4):
                group.start_soon(post, "s2")
    assert [r.status_code for r in statuses] == [201, 409, 409], [r.text for r in statuses]
    assert statuses[2].json()["error"].startswith("study_exists: "), statuses[2].text
    assert sorted(same) == [201, 409, 409, 409]


async def test_a_token_is_served_by_its_own_worker_only(tmp_path: Path) -> None:
    async with cluster(tmp_path) as c:
        first, second = [await create(c.url, house_seller="hardliner") for _ in range(2)]
        token = first["tokens"]["buyer"]
        assert token.startswith("w0.") and second["tokens"]["buyer"].startswith("w1.")
        body = token.removeprefix("w0.")
        for wrong in [f"w1.{body}", f"w7.{body}", body, "w0.nonsense", "", "w1."]:
            status, _ = await mcp_status(c.url, wrong)
            assert status == 401, wrong
            async with http(wrong or None) as client:
                seat = await client.get(f"{c.url}/web/api/seat")
                spectate = await client.get(f"{c.url}/web/api/room")
            assert seat.status_code == spectate.status_code == 401
            assert "\n" not in seat.json()["error"]
        async with http(ADMIN) as admin:
            shown = (await admin.get(f"{c.url}/admin/rooms/{first['room']}")).json()
        assert shown["negotiations"][0]["events"] == 0  # the refused calls changed nothing
        with anyio.fail_after(WAIT_S):
            await play_in(c.url, token, finish=True)  # the right token plays


async def test_pages_and_spectator_tokens_work_through_the_front(tmp_path: Path) -> None:
    async with cluster(tmp_path) as c:
        rooms = [await create(c.url, house_seller="hardliner") for _ in range(2)]
        async with http() as client:
            page = await client.get(f"{c.url}/web/room")
        assert (
            page.status_code == 200
            and "default-src 'none'" in page.headers["content-security-policy"]
        )
        for room in rooms:
            seat_token, spectator = room["tokens"]["buyer"], room["spectator"]
            async with http(seat_token) as seat:
                call = {"tool": "make_offer", "arguments": {"price": 650}}
                made = await seat.post(f"{c.url}/web/api/seat/call", json=call)
                assert made.status_code == 200 and "result" in made.json(), made.text
                assert (await seat.get(f"{c.url}/web/api/room")).status_code == 401
            async with http(spectator) as watcher:
                view = (await watcher.get(f"{c.url}/web/api/room")).json()
                assert view["room"] == room["room"]
                with anyio.fail_after(WAIT_S):
                    async with watcher.stream("GET", f"{c.url}/web/api/room/events") as stream:
                        assert stream.headers["content-type"].startswith("text/event-stream")
                        async for line in stream.aiter_lines():  # the stream, as it comes
                            if line.startswith("data: "):
                                assert '"650' in line or "650" in line
                                break
                assert (await watcher.get(f"{c.url}/web/api/seat")).status_code == 401
        async with http(ADMIN) as admin:
            runs = await admin.get(f"{c.url}/web/api/runs")
        assert runs.status_code == 200


async def test_the_in_repo_seat_client_closes_a_deal_between_two_remote_seats_through_the_front(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path) as c:
        await create(c.url)  # the next room lands on worker 1
        room = await create(c.url)
        assert room["tokens"]["seller"].startswith("w1.")
        url = f"{c.url}/mcp"

        async def buyer() -> None:
            async with SeatClient.http(url, room["tokens"]["buyer"]) as seat:
                await seat.make_offer(900)
                while (await seat.wait_for_opponent(timeout_s=5)).woke != "ended":
                    pass

        async def seller() -> None:
            async with SeatClient.http(url, room["tokens"]["seller"]) as seat:
                while (offer := (await seat.get_state()).observation.their_offer) is None:
                    await seat.wait_for_opponent(timeout_s=5)  # a long poll through the front
                done = await seat.accept(offer.offer_id)
                assert done.outcome is not None and done.outcome.price == Decimal(900)

        with anyio.fail_after(WAIT_S):
            async with anyio.create_task_group() as group:
                group.start_soon(buyer)
                group.start_soon(seller)
    assert list(stored_rows(c.results)) == [f"{room['room']}/1"]


async def test_nothing_a_seat_reads_through_the_front_reveals_the_other_side(
    tmp_path: Path,
) -> None:
    secret = secrets.token_hex(16)
    request = RoomRequest(secret=secret, tier="high")
    scenario = scenario_at(request.run_secret(), 0, "high", DEFAULT_SPEC)
    seller_cost = scenario.private_value("seller")
    buyer_value = scenario.private_value("buyer")
    async with cluster(tmp_path, "--idle-limit", "0.2") as c:  # a seat between calls: absent
        await create(c.url)  # the next room lands on worker 1
        room = await create(c.url, secret=secret, tier="high")
        assert room["tokens"]["buyer"].startswith("w1.")
        received: dict[str, list[str]] = {"buyer": [], "seller": []}
        offers: set[Decimal] = {scenario.list_price}
        with anyio.fail_after(WAIT_S):
            async with (
                http(room["tokens"]["buyer"]) as bh,
                http(room["tokens"]["seller"]) as sh,
                Client(streamable_http_client(f"{c.url}/mcp", http_client=bh)) as buyer,
                Client(streamable_http_client(f"{c.url}/mcp", http_client=sh)) as seller,
            ):
                for price, client, role in [(400, buyer, "buyer"), (1200, seller, "seller")]:
                    offers.add(Decimal(price))
                    result = await client.call_tool("make_offer", {"price": price})
                    received[role].append(text_of(result) + str(result.structured_content))
                for client, role in [(buyer, "buyer"), (seller, "seller")]:
                    state = await ok(client, "get_state")
                    received[role].append(str(state))
                received["buyer"].append((await bh.get(f"{c.url}/web/api/seat")).text)
                received["seller"].append((await sh.get(f"{c.url}/web/api/seat")).text)
                await ok(buyer, "walk_away")
                for client, role in [(buyer, "buyer"), (seller, "seller")]:
                    received[role].append(str(await ok(client, "get_state")))
    for text in received["buyer"]:
        assert leaked(text, seller_cost, offers) is None, text[:300]
    for text in received["seller"]:
        assert leaked(text, buyer_value, offers) is None, text[:300]


async def test_a_killed_worker_fails_its_own_rooms_only(tmp_path: Path) -> None:
    async with cluster(tmp_path) as c:
        mine, theirs = [await create(c.url, house_seller="hardliner") for _ in range(2)]
        pid = c.workers.pid(1)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        await until_health(c.url, [True, False])
        status, text = await mcp_status(c.url, theirs["tokens"]["buyer"])
        assert status == 502 and "worker 1 is not answering" in text and "\n" not in text
        async with http(theirs["spectator"]) as watcher:
            assert (await watcher.get(f"{c.url}/web/api/room")).status_code == 502
        new = await create(c.url, house_seller="hardliner")  # the live worker takes it
        assert new["tokens"]["buyer"].startswith("w0.")
        with anyio.fail_after(WAIT_S):
            await play_in(c.url, mine["tokens"]["buyer"], finish=True)
    assert sorted(stored_rows(c.results)) == [f"{mine['room']}/1"]


@pytest.mark.slow
async def test_a_restarted_worker_brings_its_rooms_back(tmp_path: Path) -> None:
    async with cluster(tmp_path, restart_s=0.1) as c:
        first, second = [await create(c.url, house_seller="hardliner") for _ in range(2)]
        with anyio.fail_after(WAIT_S):
            await play_in(c.url, second["tokens"]["buyer"], finish=False)
        pid = c.workers.pid(1)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        with anyio.fail_after(WAIT_S):
            while c.workers.pid(1) == pid or not c.workers.alive(1):  # noqa: ASYNC110
                await anyio.sleep(0.05)
        with anyio.fail_after(WAIT_S):
            async with (
                http(second["tokens"]["buyer"]) as h,
                Client(streamable_http_client(f"{c.url}/mcp", http_client=h)) as client,
            ):
                state = await ok(client, "get_state")
                mine = [o for o in state["observation"]["live_offers"] if o["by"] == "buyer"]
                assert [Decimal(str(o["price"])) for o in mine] == [Decimal(700)]
                await ok(client, "walk_away")
            await play_in(c.url, first["tokens"]["buyer"], finish=True)
    assert sorted(stored_rows(c.results)) == sorted([f"{first['room']}/1", f"{second['room']}/1"])


ServedProcess = tuple[str, subprocess.Popen[bytes]]


def cluster_process(results: Path) -> AbstractAsyncContextManager[ServedProcess]:
    """``dealroom serve --transport http --workers 2`` in its own process (its sockets'
    directory under the test's, in case it is killed)."""
    return serve_process(results, "--workers", "2", env={"TMPDIR": str(results.parent)})


@pytest.mark.slow
async def test_a_terminated_cluster_stops_its_workers_and_exits_cleanly(tmp_path: Path) -> None:
    async with cluster_process(tmp_path / "results.db") as (url, process):
        async with http() as client:
            assert (await client.get(f"{url}/healthz")).json()["ok"] is True
        process.terminate()
        assert process.wait(WAIT_S) == 0  # not killed by its own SIGTERM raised again


@pytest.mark.slow
async def test_a_cluster_killed_and_started_again_restores_each_room_once(tmp_path: Path) -> None:
    results = tmp_path / "results.db"
    async with cluster_process(results) as (url, process):
        rooms = [await create(url, house_seller="hardliner") for _ in range(4)]
        with anyio.fail_after(WAIT_S):
            for room in rooms:
                await play_in(url, room["tokens"]["buyer"], finish=False)
        process.kill()  # the front dies at once; its workers stop when its pipe closes
        process.wait(WAIT_S)
    for index in (0, 1):
        names = sorted(p.stem for p in journal_directory(results, index).glob("*.jsonl"))
        assert names == sorted(r["room"] for r in rooms[index::2])
    async with cluster_process(results) as (url, process):
        with anyio.fail_after(WAIT_S):
            for room in rooms:
                async with (
                    http(room["tokens"]["buyer"]) as h,
                    Client(streamable_http_client(f"{url}/mcp", http_client=h)) as client,
                ):
                    state = await ok(client, "get_state")
                    offers = state["observation"]["live_offers"]
                    assert [o["by"] for o in offers if o["by"] == "buyer"] == ["buyer"]
                    await ok(client, "walk_away")
    assert sorted(stored_rows(results)) == sorted(f"{r['room']}/1" for r in rooms)


@pytest.mark.slow
async def test_a_single_servers_open_rooms_go_on_in_worker_0_of_a_cluster(tmp_path: Path) -> None:
    results = tmp_path / "results.db"
    async with serve_process(results) as (url, process):
        room = await create(url, house_seller="hardliner")
        token = room["tokens"]["buyer"]
        assert owner_of(token, 2) is None  # a single server's tokens carry no prefix
        with anyio.fail_after(WAIT_S):
            await play_in(url, token, finish=False)
        process.kill()
        process.wait(WAIT_S)
    async with cluster_process(results) as (url, process):
        with anyio.fail_after(WAIT_S):
            async with (
                http(token) as h,
                Client(streamable_http_client(f"{url}/mcp", http_client=h)) as client,
            ):
                state = await ok(client, "get_state")
                assert [o["by"] for o in state["observation"]["live_offers"]].count("buyer") == 1
                await ok(client, "walk_away")
    assert list(stored_rows(results)) == [f"{room['room']}/1"]

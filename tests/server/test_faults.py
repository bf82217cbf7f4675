"""Faults: clients that vanish, a server killed mid-run, an interrupted async tournament, and
the clock's edges (an accept due exactly at the deadline, two accepts of crossing offers at once).

Every negotiation ends and is recorded; nothing finished is lost or written twice.
LLM endpoint faults (500s, 429s, hangs, garbage bodies, malformed tool calls) are in
tests/cli/test_cli_llm.py and tests/agents/test_llm_agent.py; here only what they leave out:
the retry bound counted at the endpoint, intermittent errors over HTTP, an endpoint that is down.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_support import (
    ADMIN,
    acts,
    client_for,
    free_port,
    house_room,
    http_server,
    ok,
    scenario,
    secret_of,
    share_schema_validators,
    text_of,
    tls,
)

from dealroom.cli import main as cli_main
from dealroom.play.jobs import ChunkPlayer, Job
from dealroom.play.progress import Progress
from dealroom.play.tournament import Tournament, TournamentConfig
from dealroom.protocol import MakeOffer, Role
from dealroom.protocol.record import NegotiationRecord
from dealroom.server.cluster_owners import owning
from dealroom.server.negotiation import RoomLimits
from dealroom.server.room import Room
from dealroom.server.room_settings import RoomSettings
from dealroom.store.results import ResultsStore
from fake_openai import Status, negotiator, scripted, serve

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _shared_validators(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)


async def play_out(client: Client, timeout_s: float = 20) -> dict[str, Any]:
    """Wait (never acting) until the negotiation ends; the seat's outcome."""
    while True:
        update = await ok(client, "wait_for_opponent", timeout_s=timeout_s)
        if update["outcome"] is not None:
            return update["outcome"]


# -- clients that vanish ------------------------------------------------------------------------


async def test_a_client_that_disconnects_mid_negotiation_is_ended_by_the_deadline_and_recorded(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path, limits=RoomLimits(idle_s=0.2)) as server:
        room = await server.create_room(secret=secret_of(3).hex(), deadline=40)
        with anyio.fail_after(30):
            async with server.seat(room["tokens"]["seller"]) as seller:
                state = await ok(seller, "get_state")
                async with server.seat(room["tokens"]["buyer"]) as buyer:
                    await ok(buyer, "make_offer", price=100)
                # The buyer is gone for good, mid-negotiation. The seller plays on alone.
                ask = state["observation"]["scenario"]["list_price"] * 1.2
                made = await ok(seller, "make_offer", price=ask)
                outcome = await play_out(seller)
        stored = server.registry.writer.store.get(f"{room['room']}/1")  # type: ignore[union-attr]
    assert made["ok"] is True
    assert (outcome["status"], outcome["end_reason"], outcome["time"]) == (
        "no_deal",
        "deadline",
        40,
    )
    assert stored is not None and stored.record.outcome.end_reason == "deadline"
    assert [(e.type, e.by) for e in stored.record.events] == [
        ("offer_made", "buyer"),
        ("offer_made", "seller"),
        ("negotiation_ended", None),
    ]


async def test_a_connection_dropped_during_a_long_poll_leaves_the_room_intact(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path, limits=RoomLimits(idle_s=30)) as server:
        room = await server.create_room(secret=secret_of(5).hex())
        tokens = room["tokens"]
        with anyio.fail_after(30):
            async with server.seat(tokens["seller"]) as seller:
                await ok(seller, "get_state")
                with anyio.move_on_after(0.3) as scope:  # the client gives up mid-request
                    await seller.call_tool("wait_for_opponent", {"timeout_s": 30})
            assert scope.cancelled_caught
            async with server.seat(tokens["buyer"]) as buyer:
                await ok(buyer, "make_offer", price=1234.5)
                async with server.seat(tokens["seller"]) as seller:  # back, on a new connection
                    update = await ok(seller, "wait_for_opponent", timeout_s=20)
                    offers = [(o["by"], o["price"]) for o in update["live_offers"]]
                    ended = await ok(buyer, "walk_away")
        stored = server.registry.writer.store.get(f"{room['room']}/1")  # type: ignore[union-attr]
    assert (update["woke"], offers) == ("news", [("buyer", 1234.5)])
    assert ended["outcome"]["end_reason"] == "walk_away"
    assert stored is not None and stored.record.outcome.ended_by == "buyer"


async def test_a_negotiation_whose_clients_all_vanished_is_run_to_its_end_and_recorded(
    tmp_path: Path,
) -> None:
    async with http_server(tmp_path, limits=RoomLimits(idle_s=0.1, abandon_s=0.3)) as server:
        room = await server.create_room(secret=secret_of(2).hex())
        with anyio.fail_after(20):
            for role in ("buyer", "seller"):
                async with server.seat(room["tokens"][role]) as client:
                    await ok(client, "make_offer", price=900 if role == "buyer" else 9000)
            key = f"{room['room']}/1"
            assert server.registry.writer.store.get(key) is None  # type: ignore[union-attr]
            await anyio.sleep(0.4)
            await server.registry.tick()  # what the server's reaper does every second
            await server.registry.writer.flush()  # type: ignore[union-attr]  (and its writer)
        stored = server.registry.writer.store.get(key)  # type: ignore[union-attr]
    assert stored is not None and stored.record.outcome.end_reason == "deadline"
    assert [e.by for e in stored.record.events if e.type == "offer_made"] == ["buyer", "seller"]


# -- the server process killed ------------------------------------------------------------------


@asynccontextmanager
async def serve_process(
    results: Path, *flags: str, env: Mapping[str, str] | None = None, files: int | None = None
) -> AsyncIterator[tuple[str, subprocess.Popen[bytes]]]:
    """``dealroom serve --transport http [flags]`` in its own process (``env`` added to the
    environment; ``files``: its open-file limit, soft and hard); (root URL, process). Waits up
    to a minute for it: a cluster's workers take a few seconds to start."""
    port = free_port()
    command = [sys.executable, "-c", "import sys; from dealroom.cli import main; sys.exit(main())"]
    command += ["serve", "--transport", "http", "--port", str(port), "--results", str(results)]
    command += flags
    if files is not None:
        command = ["sh", "-c", f'ulimit -n {files} && exec "$0" "$@"', *command]
    environment = {**os.environ, "DEALROOM_ADMIN_TOKEN": ADMIN, **(env or {})}
    process = subprocess.Popen(command, env=environment, stderr=subprocess.DEVNULL)  # noqa: ASYNC220
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx2.AsyncClient(verify=tls()) as http:
            with anyio.fail_after(60):
                while True:
                    try:
                        if (await http.get(f"{url}/healthz")).status_code == 200:
                            break
                    except httpx2.HTTPError:
                        pass
                    await anyio.sleep(0.05)
        yield url, process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)


async def open_room(url: str) -> tuple[str, str]:
    async with httpx2.AsyncClient(verify=tls()) as http:
        response = await http.post(
            f"{url}/admin/rooms",
            json={"index": 1, "house_seller": "hardliner"},
            headers={"Authorization": f"Bearer {ADMIN}"},
        )
    assert response.status_code == 201, response.text
    body = response.json()
    return body["room"], body["tokens"]["buyer"]


async def play_in(url: str, token: str, *, finish: bool) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, verify=tls(), timeout=30) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
    ):
        await ok(client, "make_offer", price=700)
        if finish:
            await ok(client, "walk_away")


def stored_rows(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return dict(db.execute("SELECT key, record FROM negotiations"))


async def test_a_killed_server_loses_nothing_finished_and_a_restarted_one_adds_to_the_store(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results.db"
    with anyio.fail_after(60):
        async with serve_process(results) as (url, process):
            finished = []
            for _ in range(3):
                room, token = await open_room(url)
                await play_in(url, token, finish=True)
                finished.append(f"{room}/1")
            for _ in range(2):  # still running when the server dies
                _, token = await open_room(url)
                await play_in(url, token, finish=False)
            process.send_signal(signal.SIGKILL)
            process.wait(10)
        before = stored_rows(results)
        assert sorted(before) == sorted(finished)

        async with serve_process(results) as (url, process):
            room, token = await open_room(url)
            await play_in(url, token, finish=True)
            process.terminate()
            process.wait(10)
    after = stored_rows(results)
    assert sorted(after) == sorted([*finished, f"{room}/1"])
    assert {key: after[key] for key in before} == before


async def test_a_second_server_on_the_same_store_says_at_once_which_process_serves_it(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results.db"
    port = free_port()
    command = [sys.executable, "-c", "import sys; from dealroom.cli import main; sys.exit(main())"]
    command += ["serve", "--transport", "http", "--port", str(port), "--results", str(results)]
    with anyio.fail_after(60):
        async with serve_process(results) as (url, first):
            second = subprocess.Popen(  # noqa: ASYNC220
                command,
                env={**os.environ, "DEALROOM_ADMIN_TOKEN": ADMIN},
                stderr=subprocess.PIPE,
                text=True,
            )
            try:
                assert second.stderr is not None
                started = time.monotonic()
                line = await anyio.to_thread.run_sync(second.stderr.readline)
                said_after = time.monotonic() - started
            finally:
                second.kill()
                second.wait(10)
                second.stderr.close()  # type: ignore[union-attr]
    assert "another process serves these rooms: waiting for it to stop" in line, line
    assert f"pid {first.pid}, serving {url}" in line, line
    assert said_after < 10, said_after  # at once (it once said nothing for 30 s)


async def test_a_terminated_server_shuts_down_in_order_and_owns_its_rooms_until_then(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results.db"
    journals = Path(f"{results}.rooms")
    with anyio.fail_after(60):
        async with serve_process(results) as (url, process):
            room, token = await open_room(url)
            await play_in(url, token, finish=False)
            # While it serves, no other process may take its rooms (it would restore them too).
            refused = pytest.raises(OSError, match="another process still serves these rooms")
            with refused, owning(journals, wait_s=0.2):
                pass
            process.terminate()
            # Not killed by its own SIGTERM raised again: it closed its rooms and its store.
            assert process.wait(30) == 0
        with owning(journals, wait_s=0.2):  # released
            pass
        async with serve_process(results) as (url, process):
            async with httpx2.AsyncClient(verify=tls()) as http:
                got = await http.get(
                    f"{url}/admin/rooms/{room}", headers={"Authorization": f"Bearer {ADMIN}"}
                )
            assert got.status_code == 200, got.text  # the open room came back


# -- an interrupted async (LLM-style) tournament ------------------------------------------------


class Interrupted(Exception):
    pass


async def test_an_interrupted_async_tournament_resumes_without_loss_or_duplicates(
    tmp_path: Path,
) -> None:
    config = TournamentConfig(agents=("boulware", "conceder", "micro"), per_pair=2)
    player = ChunkPlayer()
    played: list[str] = []

    async def play_job(job: Job) -> NegotiationRecord:
        played.append(job.key)
        await anyio.sleep(0.001 * (job.index % 3))
        return player.play(job)

    def stop_at_ten(progress: Progress) -> None:
        if progress.done == 10:
            raise Interrupted

    path = tmp_path / "async.db"
    with ResultsStore(path) as store:
        with pytest.raises(ExceptionGroup) as raised:  # from the runner's task group
            await Tournament(config, store).run_async(play_job, limit=4, on_progress=stop_at_ten)
        assert raised.group_contains(Interrupted)
        kept = len(store.keys("tournament"))
        # Negotiations that finished while the interrupt spread are stored too (never lost).
        assert 10 <= kept <= 10 + 4
        progress = await Tournament(config, store).run_async(play_job, limit=4, resume=True)
        total = len(config.jobs())
        assert (progress.skipped, progress.done, progress.new_rows) == (
            kept,
            total - kept,
            total - kept,
        )
        stored = {row.key: row.record for row in store.iter("tournament")}
    assert set(stored) == {job.key for job in config.jobs()}
    for job in config.jobs()[::5]:
        assert stored[job.key] == player.play(job)


# -- the clock's edges --------------------------------------------------------------------------


@pytest.mark.parametrize(("wake_at", "deal"), [(27, True), (28, False)])
async def test_an_accept_that_would_land_at_the_deadline_never_lands_and_there_is_no_deal(
    wake_at: float, deal: bool, tmp_path: Path
) -> None:
    # The house seller offers at t = 6 and then only waits. The buyer wakes at ``wake_at`` and
    # accepts: an accept lands after 1 s of thinking and its own 1 s, at 29 or at 30. Nothing
    # can land at 30 (t >= deadline), so on waking at 28 the buyer already finds it over.
    with ResultsStore(tmp_path / "r.db") as store:
        house = acts(MakeOffer(price=Decimal("1500.00")), wait=1000)
        room = house_room(opponent=house, deadline=30, store=store)
        async with client_for(room, "buyer") as client:
            first = await ok(client, "wait_for_opponent", timeout_s=20)
            assert (first["woke"], first["now"]) == ("news", 6)
            woke = await ok(client, "wait_for_opponent", timeout_s=wake_at - 6)
            accepted = await client.call_tool("accept", {"offer_id": "o1"})
        stored = store.get("room-test/1")
    assert stored is not None
    if deal:
        assert (woke["woke"], woke["now"]) == ("timeout", 27)
        assert not accepted.is_error, text_of(accepted)
        assert stored.record.outcome.status == "deal" and stored.record.outcome.time == 29
        return
    assert (woke["woke"], woke["now"], woke["outcome"]["end_reason"]) == ("ended", 30, "deadline")
    assert accepted.is_error and "negotiation_closed" in text_of(accepted)
    assert (stored.record.outcome.status, stored.record.outcome.time) == ("no_deal", 30)
    assert "offer_accepted" not in [e.type for e in stored.record.events]


async def test_an_accept_at_the_wall_clock_deadline_is_refused_and_ends_without_a_deal() -> None:
    now = [100.0]
    house = acts(MakeOffer(price=Decimal("1500.00")), wait=1000)
    room = house_room(opponent=house, deadline=30, clock="wall")
    room = Room(
        "wall",
        RoomSettings(
            scenarios=lambda i: scenario(0, index=i, deadline=30),
            occupants=room.settings.occupants,
            clock="wall",
        ),
        timer=lambda: now[0],
    )
    async with client_for(room, "buyer") as client:
        await ok(client, "get_state")  # the clock starts at the first call: t = 0
        now[0] += 29.999
        update = await ok(client, "wait_for_opponent", timeout_s=0)
        theirs = [o["offer_id"] for o in update["live_offers"] if o["by"] == "seller"]
        assert theirs, update
        now[0] += 0.001  # exactly the deadline
        result = await client.call_tool("accept", {"offer_id": theirs[0]})
        state = await ok(client, "get_state")
    outcome = state["observation"]["outcome"]
    assert (outcome["status"], outcome["end_reason"]) == ("no_deal", "deadline"), text_of(result)
    assert result.is_error or result.structured_content["ok"] is False  # type: ignore[index]
    assert "offer_accepted" not in [e.type for e in room.current.referee.events]


async def offer_then_accept(client: Client, role: Role) -> tuple[Any, dict[str, Any]]:
    """Make an offer that crosses the other side's, then accept theirs as soon as it is seen.

    Returns the accept's result (None if the negotiation ended first) and the seat's outcome.
    """
    state = await ok(client, "get_state")
    list_price = state["observation"]["scenario"]["list_price"]
    update = await ok(client, "make_offer", price=list_price * (1.1 if role == "buyer" else 0.9))
    while update["outcome"] is None:
        theirs = [o for o in update["live_offers"] if o["by"] != role]
        if theirs:
            result = await client.call_tool("accept", {"offer_id": theirs[0]["offer_id"]})
            final = await ok(client, "get_state")
            return result, final["observation"]["outcome"]
        update = await ok(client, "wait_for_opponent", timeout_s=20)
    return None, update["outcome"]


@pytest.mark.parametrize("clock", ["virtual", "wall"])
async def test_simultaneous_accepts_of_crossing_offers_make_exactly_one_deal(
    clock: str, tmp_path: Path
) -> None:
    async with http_server(tmp_path, limits=RoomLimits(idle_s=5)) as server:
        for seed in range(3):
            room = await server.create_room(secret=secret_of(seed).hex(), clock=clock, deadline=60)
            seen: dict[Role, tuple[Any, dict[str, Any]]] = {}

            async def play(
                role: Role,
                tokens: dict[str, str] = room["tokens"],
                seen: dict[Role, tuple[Any, dict[str, Any]]] = seen,
            ) -> None:
                async with server.seat(tokens[role]) as client:
                    seen[role] = await offer_then_accept(client, role)

            with anyio.fail_after(20):
                async with anyio.create_task_group() as group:
                    group.start_soon(play, "buyer")
                    group.start_soon(play, "seller")
            stored = server.registry.writer.store.get(f"{room['room']}/1")  # type: ignore[union-attr]
            assert stored is not None
            accepted = [e for e in stored.record.events if e.type == "offer_accepted"]
            assert len(accepted) == 1, stored.record.events
            outcome = stored.record.outcome
            assert (outcome.status, outcome.end_reason) == ("deal", "accepted")
            for role, (result, seat_outcome) in seen.items():
                assert outcome.price is not None
                assert (seat_outcome["status"], seat_outcome["price"]) == (
                    "deal",
                    float(outcome.price),
                )
                if result is None:
                    continue
                won = role == accepted[0].by
                if won:
                    assert not result.is_error and result.structured_content["ok"] is True
                else:  # refused, or overtaken by the other accept
                    assert result.is_error or result.structured_content["ok"] is False
            assert sum(r is not None for r, _ in seen.values()) >= 1


# -- LLM endpoint faults not covered in tests/cli/test_cli_llm.py ---------------------------------

FAST_MODEL = ["--model-timeout", "1", "--model-attempts", "2", "--model-backoff", "0.01"]


def llm_match(capsys: pytest.CaptureFixture[str], base_url: str) -> tuple[int, dict[str, Any]]:
    argv = ["match", "--buyer", "llm:fake", "--seller", "boulware", "--base-url", base_url]
    capsys.readouterr()
    status = cli_main([*argv, "--json", *FAST_MODEL])
    return status, json.loads(capsys.readouterr().out)


def test_a_failing_endpoint_is_tried_exactly_as_often_as_allowed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with serve(scripted([], then=Status(500))) as fake:
        status, body = llm_match(capsys, fake.base_url)
    assert status == 1
    assert len(fake.requests) == 2, "no retries beyond --model-attempts (the client's own too)"
    assert body["extra"]["players"]["buyer"]["failed_attempts"] == 2


def test_intermittent_endpoint_errors_are_retried_and_the_match_plays_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    brain, count = negotiator(), [0]

    def flaky(request: dict[str, Any]) -> Any:
        count[0] += 1
        return Status(503) if count[0] in (1, 3) else brain(request)

    with serve(flaky) as fake:
        status, body = llm_match(capsys, fake.base_url)
    assert status == 0 and "errors" not in body["extra"]
    assert body["outcome"]["end_reason"] == "accepted"
    data = body["extra"]["players"]["buyer"]
    assert (data["failed_attempts"], data["model_calls"]) == (2, len(fake.requests) - 2)


def test_an_endpoint_that_is_down_is_a_recorded_error_at_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    started = time.monotonic()
    status, body = llm_match(capsys, f"http://127.0.0.1:{free_port()}/v1")
    assert time.monotonic() - started < 20
    assert status == 1
    assert "connection error: ClientConnectorError" in body["extra"]["errors"]["buyer"]
    assert (body["outcome"]["end_reason"], body["outcome"]["ended_by"]) == ("walk_away", "buyer")


# -- slow clients -------------------------------------------------------------------------------


async def test_two_slow_clients_in_turn_do_not_end_the_negotiation() -> None:
    # Each client thinks longer than the idle limit while the other is in a call: first the
    # buyer (while the seller's message waits for it), then the seller (before the buyer's
    # offer). Each is then counted as waiting in turn; neither is gone.
    room = Room(
        "pair",
        RoomSettings(scenarios=lambda i: scenario(3, index=i), limits=RoomLimits(idle_s=0.05)),
    )
    async with client_for(room, "seller") as seller, client_for(room, "buyer") as buyer:
        with anyio.fail_after(10):
            await ok(seller, "send_message", text="Hello.")  # held until the buyer idles
            await anyio.sleep(0.2)  # the seller thinks, longer than the idle limit
            made = await ok(buyer, "make_offer", price=500)
    assert made["ok"] is True, made["error"]
    assert room.current.is_open
    assert [e.type for e in room.current.referee.events] == ["message_sent", "offer_made"]

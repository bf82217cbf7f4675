"""Room journals on a hostile machine: a full disk, a damaged file, a server killed at the worst
moment. A restored room is never behind the results store, and one bad journal never stops the
others from being restored.

The full disk is real where the machine allows a mount (a 1 MiB tmpfs, ``store_faults``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_support import ADMIN, house_resolver, ok, share_schema_validators, tls
from test_faults import open_room, play_in, serve_process, stored_rows

from dealroom.protocol import MakeOffer, RoomRequest, WalkAway
from dealroom.server.cluster_owners import journal_directory, owning
from dealroom.server.journal import Journals
from dealroom.server.room_error import RoomError
from dealroom.server.rooms import RoomRegistry
from store_faults import fill, mount_tmpfs, unmount

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _shared_validators(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)


async def test_a_journal_that_missed_inputs_is_never_restored_behind_the_store(
    tmp_path: Path, registries: Callable[[Path], RoomRegistry]
) -> None:
    path = tmp_path / "r.db"
    first = registries(path)
    created = first.create(RoomRequest(index=1, house_seller="hardliner"))
    seat = first.seat(created.room, "buyer")
    await seat.act(MakeOffer(price=Decimal(100)))
    journal = Journals.beside(path).directory / f"{created.room}.jsonl"
    missed = journal.read_text()  # what a journal that stopped here holds
    await seat.act(WalkAway())
    await first.rooms[created.room].records.save()
    journal.write_text(missed)

    second = registries(path)
    assert second.restore() == 0
    assert created.room not in second.rooms
    assert second.seat_for_token(created.tokens["buyer"]) is None
    assert not journal.exists() and journal.with_name(journal.name + ".stopped").exists()
    assert registries(path).restore() == 0  # set aside: never replayed again
    stored = second.writer.store.get(f"{created.room}/1")  # type: ignore[union-attr]
    assert stored is not None and stored.record.outcome.end_reason == "walk_away"


async def test_a_server_killed_after_its_journal_failed_on_a_full_disk_never_goes_back_in_time(
    tmp_path: Path,
) -> None:
    disk = tmp_path / "disk"
    if not mount_tmpfs(disk):
        pytest.skip("needs root and mount(8) for a small tmpfs")
    results = disk / "results.db"
    journals = Journals.beside(results).directory
    try:
        with anyio.fail_after(60):
            async with serve_process(results) as (url, process):
                room, token = await open_room(url)
                headers = {"Authorization": f"Bearer {token}"}
                async with (
                    httpx2.AsyncClient(headers=headers, verify=tls(), timeout=30) as http,
                    Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
                ):
                    await ok(client, "make_offer", price=700)
                    filler = fill(disk)
                    for _ in range(3):  # past the journal's last page: a line is lost
                        await ok(client, "send_message", text="x" * 2000)
                    filler.unlink()  # space comes back: the walk-away is stored
                    await ok(client, "walk_away")
                process.send_signal(signal.SIGKILL)
                process.wait(10)
            assert list(stored_rows(results)) == [f"{room}/1"]
            assert not (journals / f"{room}.jsonl").exists()

            async with serve_process(results) as (url, process):
                async with httpx2.AsyncClient(verify=tls()) as http:
                    response = await http.post(f"{url}/mcp", json={}, headers=headers)
                assert response.status_code == 401  # the room is gone, not back in negotiation 1
                process.terminate()
                process.wait(10)
        assert list(stored_rows(results)) == [f"{room}/1"]
    finally:
        shutil.rmtree(journals, ignore_errors=True)
        unmount(disk)


def test_journals_and_their_owner_lock_are_private_whatever_the_umask(tmp_path: Path) -> None:
    store = tmp_path / "results.db"
    old = os.umask(0)
    try:
        for index in (0, 1):  # a single server's (or worker 0's) journals, and worker 1's
            directory = journal_directory(store, index)
            with owning(directory, wait_s=1):
                journal = Journals(directory).create(f"room-{index}", {"request": {}})
                assert journal is not None
                journal.append(1, ["start", 0.0])
                assert mode(journal.path) == mode(directory / ".owner") == 0o600
                assert mode(directory) == 0o700
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- damaged journals and spool files -------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000
"""JSON that parses to nothing but nests too deep for any parser: RecursionError."""


def damage(store: Path, good: str) -> dict[str, str]:
    """Beside ``good``'s journal, journals that each fail in another way, and a spool file
    nested too deep; the damaged rooms' ids and what their failure is called."""
    journals = Journals.beside(store).directory
    header = json.loads((journals / f"{good}.jsonl").read_text().splitlines()[0])
    house_move = {"n": 1, "op": ["submit", "seller", {"type": "walk_away"}, 0.0]}
    misfit = json.dumps({**header, "room": "room-misfit"}) + "\n" + json.dumps(house_move) + "\n"
    (journals / "room-misfit.jsonl").write_text(misfit)  # parses, but not for this room
    (journals / "room-deep.jsonl").write_text(DEEP + "\n")
    body = json.dumps({**header, "room": "room-deepline"}) + "\n" + DEEP + "\n{}\n"
    (journals / "room-deepline.jsonl").write_text(body)
    spool = Path(f"{store}.pending")
    spool.mkdir(exist_ok=True)
    (spool / "deep.json").write_text(DEEP)
    return {
        "room-misfit": "AssertionError",
        "room-deep": "RecursionError",
        "room-deepline": "RecursionError",
    }


async def test_a_damaged_journal_or_spool_file_skips_itself_and_the_other_rooms_are_restored(
    tmp_path: Path, registries: Callable[[Path], RoomRegistry]
) -> None:
    path = tmp_path / "r.db"
    first = registries(path)
    good = first.create(RoomRequest(index=1, house_seller="hardliner"))
    await first.seat(good.room, "buyer").act(MakeOffer(price=Decimal(100)))
    damaged = damage(path, good.room)

    second = registries(path)  # recovers the spool: the deep file is skipped and left
    assert second.restore() == 1
    assert list(second.rooms) == [good.room]
    assert second.unrestored.keys() == damaged.keys()
    for room, kind in damaged.items():
        assert kind in second.unrestored[room] and "\n" not in second.unrestored[room]
    assert (Path(f"{path}.pending") / "deep.json").exists()


async def test_a_server_starts_past_damaged_journals_and_room_show_says_which_were_not_restored(
    tmp_path: Path, registries: Callable[[Path], RoomRegistry]
) -> None:
    results = tmp_path / "results.db"
    first = registries(results)
    good = first.create(RoomRequest(index=1, house_seller="hardliner"))
    await first.seat(good.room, "buyer").act(MakeOffer(price=Decimal(100)))
    damaged = damage(results, good.room)
    first.close()
    first.writer.store.close()  # type: ignore[union-attr]
    with anyio.fail_after(30):
        async with serve_process(results) as (url, process):
            async with httpx2.AsyncClient(verify=tls()) as http:
                admin = {"Authorization": f"Bearer {ADMIN}"}
                shown = await http.get(f"{url}/admin/rooms/{good.room}", headers=admin)
                assert shown.status_code == 200
                for room, kind in damaged.items():
                    response = await http.get(f"{url}/admin/rooms/{room}", headers=admin)
                    assert response.status_code == 410, room
                    assert "not restored" in response.json()["error"] and kind in response.text
            command = [sys.executable, "-c", SHOW, "room", "show", "--server", url, "room-misfit"]
            env = {**os.environ, "DEALROOM_ADMIN_TOKEN": ADMIN}
            shown_cli = subprocess.run(command, env=env, capture_output=True, text=True, timeout=30)  # noqa: ASYNC221
            process.terminate()
            process.wait(10)
    assert shown_cli.returncode == 2
    (line,) = shown_cli.stderr.splitlines()
    assert "HTTP 410" in line and "not restored" in line and "AssertionError" in line


SHOW = "import sys; from dealroom.cli import main; sys.exit(main())"


# -- file descriptors -----------------------------------------------------------------------------


@pytest.mark.slow
async def test_a_thousand_rooms_under_a_512_open_file_limit_hold_no_descriptor_and_all_journal(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results.db"
    admin = {"Authorization": f"Bearer {ADMIN}"}
    with anyio.fail_after(120):
        async with serve_process(results, files=512) as (url, process):
            async with httpx2.AsyncClient(verify=tls()) as http:
                tokens = []
                for index in range(1_000):
                    body = {"index": index, "house_seller": "hardliner"}
                    response = await http.post(f"{url}/admin/rooms", json=body, headers=admin)
                    assert response.status_code == 201, (index, response.text)
                    tokens.append(response.json()["tokens"]["buyer"])
            descriptors = len(os.listdir(f"/proc/{process.pid}/fd"))
            journals = list(Journals.beside(results).directory.glob("*.jsonl"))
            await play_in(url, tokens[-1], finish=True)  # the last room plays
            process.terminate()
            process.wait(10)
    assert len(journals) == 1_000
    assert descriptors < 100


def test_a_room_that_cannot_journal_is_refused_and_nothing_is_opened(tmp_path: Path) -> None:
    blocked = tmp_path / "rooms"
    blocked.write_text("a file where the journals' directory should be")
    registry = RoomRegistry(writer=None, resolve_house=house_resolver, journals=Journals(blocked))
    with pytest.raises(RoomError) as refused:
        registry.create(RoomRequest(house_seller="hardliner"))
    assert refused.value.code == "journal_unavailable" and "\n" not in str(refused.value)
    assert registry.rooms == {} and registry.seat_for_token("x") is None

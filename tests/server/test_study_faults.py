"""A study on a hostile machine: a disk full for a moment, a server killed while its journal was
behind. A study's state is small and in memory, so nothing of it is lost: its journal is written
whole again once the disk allows, and a study is never set aside at a restart.

The full disk is real where the machine allows a mount (a 1 MiB tmpfs, ``store_faults``), and a
stand-in that fails the study journal's appends elsewhere.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp_support import ADMIN, HttpServer, http_server, tls
from test_study import SECRET, registry, solo

from dealroom.protocol import RoomCreated, RoomRequest, SessionErrorCode, WalkAway
from dealroom.protocol.study import StudyRequest
from dealroom.server import journal as journal_module
from dealroom.server.journal import WholeJournal
from dealroom.server.room_error import RoomError
from dealroom.server.rooms import RoomRegistry
from dealroom.server.seat import RoomSeat
from dealroom.server.study_export import EXPORTS, export_csv
from store_faults import Disk, fill, mount_tmpfs, unmount


def full_study_disk(monkeypatch: pytest.MonkeyPatch, disk: Disk) -> None:
    """While ``disk`` is full, every append to a study's journal fails as a full disk does."""
    append = journal_module._append  # pyright: ignore[reportPrivateUsage]

    def failing(path: Path, data: bytes) -> None:
        if disk.full and path.name.startswith("study-"):
            raise OSError(errno.ENOSPC, "No space left on device")
        append(path, data)

    monkeypatch.setattr(journal_module, "_append", failing)


def agree_and_look(rooms: RoomRegistry, token: str) -> None:
    ticket = rooms.studies.lookup(token)
    assert ticket is not None and ticket.who is not None
    ticket.study.agree(ticket.who)
    ticket.study.page(ticket.who, "open")


def test_a_failed_write_to_a_study_journal_loses_nothing_once_the_disk_has_room_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = Disk()
    full_study_disk(monkeypatch, disk)
    rooms = registry(tmp_path)
    created = rooms.studies.create(solo())
    agree_and_look(rooms, created.participants["p01"])
    disk.full = True
    agree_and_look(rooms, created.participants["p02"])  # consent, a room, a page event: lost?
    disk.full = False
    rooms.studies.catch_up()  # the reaper's tick: the journal is written whole
    study = rooms.studies.studies["s1"]
    before = {name: export_csv(study, name) for name in EXPORTS}
    journals = tmp_path / "rooms" / "studies"
    assert [p.name for p in journals.iterdir()] == ["study-s1.jsonl"]  # nothing set aside

    again = registry(tmp_path)
    again.restore()
    assert again.studies.unrestored == {}
    for label in ("p01", "p02"):
        back = again.studies.lookup(created.participants[label])
        assert back is not None and back.who is not None, label
        was = study.participants[label]
        assert (back.who.agreed, back.who.page, back.who.seats) == (was.agreed, was.page, was.seats)
        assert back.study.current(back.who) is not None  # their room too
    assert again.studies.lookup(created.token) is not None  # the study page's link
    assert {name: export_csv(again.studies.studies["s1"], name) for name in EXPORTS} == before


@pytest.mark.anyio
async def test_the_reaper_writes_a_journal_behind_whole_without_trying_every_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = Disk()
    appends: list[str] = []
    append = journal_module._append  # pyright: ignore[reportPrivateUsage]

    def counted(path: Path, data: bytes) -> None:
        if path.name.startswith("study-"):
            appends.append(data.decode())
            if disk.full:
                raise OSError(errno.ENOSPC, "No space left on device")
        append(path, data)

    tries: list[bool] = []
    write_whole = journal_module._write_whole  # pyright: ignore[reportPrivateUsage]

    def whole(path: Path, header: Any, entries: Any) -> bool:
        tries.append(disk.full)
        return False if disk.full else write_whole(path, header, entries)

    monkeypatch.setattr(journal_module, "_append", counted)
    monkeypatch.setattr(journal_module, "_write_whole", whole)
    rooms = registry(tmp_path)
    created = rooms.studies.create(solo())
    study = rooms.studies.studies["s1"]
    journal = study.journal
    assert isinstance(journal, WholeJournal)
    disk.full = True
    agree_and_look(rooms, created.participants["p01"])  # the first append fails
    ticket = rooms.studies.lookup(created.participants["p01"])
    assert ticket is not None and ticket.who is not None
    for _ in range(20):  # behind: appended nowhere, each one not retried
        ticket.study.page(ticket.who, "hidden")
    assert len(appends) == 1 and journal.behind
    for _ in range(5):  # five ticks within a second: one try
        await rooms.tick()
    assert tries == [True]
    disk.full = False
    journal._retry_at = 0.0  # pyright: ignore[reportPrivateUsage]  (its second has passed)
    await rooms.tick()
    assert tries == [True, False] and not journal.behind
    again = registry(tmp_path)
    again.restore()
    back = again.studies.lookup(created.participants["p01"])
    assert back is not None and back.who is not None and back.who.page == ticket.who.page


def test_a_server_killed_while_its_study_journal_is_behind_restarts_with_the_study(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = Disk()
    full_study_disk(monkeypatch, disk)
    rooms = registry(tmp_path)
    created = rooms.studies.create(solo())
    agree_and_look(rooms, created.participants["p01"])
    disk.full = True
    agree_and_look(rooms, created.participants["p02"])
    # killed here: no catch-up, no close

    again = registry(tmp_path)
    again.restore()
    assert "s1" in again.studies.studies and again.studies.unrestored == {}
    first = again.studies.lookup(created.participants["p01"])
    assert first is not None and first.who is not None and first.who.agreed is not None
    assert again.studies.lookup(created.participants["p02"]) is not None  # the link still works
    assert again.studies.lookup(created.token) is not None


@pytest.mark.anyio
async def test_a_study_on_a_really_full_disk_is_written_whole_once_space_returns(
    tmp_path: Path,
) -> None:
    disk = tmp_path / "disk"
    if not mount_tmpfs(disk):
        pytest.skip("needs root and mount(8) for a small tmpfs")
    try:
        rooms = registry(disk)
        created = rooms.studies.create(solo(participants=["p01", "p02", "p03"]))
        agree_and_look(rooms, created.participants["p01"])
        filler = fill(disk)
        ticket = rooms.studies.lookup(created.participants["p01"])
        assert ticket is not None and ticket.who is not None
        for _ in range(40):  # past the journal's last page: a line is lost
            ticket.study.page(ticket.who, "hidden")
            ticket.study.page(ticket.who, "visible")
        journal = ticket.study.journal
        assert isinstance(journal, WholeJournal) and journal.behind
        await rooms.studies.tick()  # still full: it stays behind, and serving goes on
        assert journal.behind
        filler.unlink()
        journal._retry_at = 0.0  # pyright: ignore[reportPrivateUsage]  (its wait has passed)
        await rooms.studies.tick()
        assert not journal.behind
        events = list(ticket.who.page)

        again = registry(disk)
        again.restore()
        back = again.studies.lookup(created.participants["p01"])
        assert back is not None and back.who is not None and back.who.page == events
        assert again.studies.lookup(created.participants["p03"]) is not None  # never opened
        assert not list((disk / "rooms" / "studies").glob("*.stopped"))
    finally:
        shutil.rmtree(disk / "rooms", ignore_errors=True)
        unmount(disk)


@pytest.mark.anyio
async def test_a_study_journal_written_whole_restores_every_match_result_and_wait(
    tmp_path: Path,
) -> None:
    rooms = registry(tmp_path)
    request = StudyRequest(
        id="pairs", participants=("a", "b", "c"), matching="pairs", negotiations=2, secret=SECRET
    )
    created = rooms.studies.create(request)
    study = rooms.studies.studies["pairs"]
    a, b, c = (study.participants[label] for label in "abc")
    for who in (a, c):
        study.arrive(who)
        study.page(who, "open")
    first = study.current(a)
    assert first is not None
    await RoomSeat(*first).act(WalkAway())
    assert study.next(a)
    study.arrive(b)
    assert study.next(c)  # c waits
    journal = study.journal
    assert isinstance(journal, WholeJournal)
    journal.behind = True
    assert journal.catch_up()
    before = {name: export_csv(study, name) for name in EXPORTS}

    again = registry(tmp_path)
    again.restore()
    back = again.studies.studies["pairs"]
    for label in "abc":
        was, now = study.participants[label], back.participants[label]
        assert (now.seats, now.results, now.page) == (was.seats, was.results, was.page)
        assert now.waiting_since == was.waiting_since and now.opened == was.opened
    assert back.spectators == study.spectators and back.sitting(first[0].id)
    assert {name: export_csv(back, name) for name in EXPORTS} == before
    assert again.studies.lookup(created.participants["c"]) is not None


# -- rooms that cannot be opened ------------------------------------------------------------------


def unjournaled_rooms(monkeypatch: pytest.MonkeyPatch, server: HttpServer, disk: Disk) -> None:
    """While ``disk`` is full, every room a study opens is refused as a full disk refuses it."""
    studies = server.registry.studies
    create = studies._create_room  # pyright: ignore[reportPrivateUsage]

    def failing(request: RoomRequest) -> RoomCreated:
        if disk.full:
            raise RoomError(SessionErrorCode.JOURNAL_UNAVAILABLE, "the disk is full")
        return create(request)

    monkeypatch.setattr(studies, "_create_room", failing)


@pytest.mark.anyio
async def test_a_participant_whose_room_cannot_be_opened_waits_and_gets_it_once_it_can(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    disk = Disk(full=True)
    # Recorded at the logger itself (``capture_logs`` misses a logger structlog has cached).
    warnings: list[str] = []
    monkeypatch.setattr(
        "dealroom.server.study.log.warning", lambda event, **kw: warnings.append(event)
    )
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        unjournaled_rooms(monkeypatch, server, disk)
        pairs = {"id": "p", "participants": ["a", "b"], "matching": "pairs", "secret": SECRET}
        for body in (solo().model_dump(mode="json"), pairs):
            response = await http.post(
                f"{server.url}/admin/studies",
                json=body,
                headers={"Authorization": f"Bearer {ADMIN}"},
            )
            assert response.status_code == 201, response.text
            tokens = response.json()["participants"]
            for token in tokens.values():
                headers = {"Authorization": f"Bearer {token}"}
                if body["id"] == "s1":
                    await http.post(f"{server.url}/web/api/seat/consent", headers=headers)
                view = await http.get(f"{server.url}/web/api/seat", headers=headers)
                assert view.status_code == 200, view.text  # not a 500
                assert view.json()["kind"] == "lobby" and not view.json()["needs_consent"]
        await server.registry.tick()  # still full: nothing opens, nothing breaks
        disk.full = False
        await server.registry.tick()  # the reaper tries again
        for study in server.registry.studies.studies.values():
            for who in study.participants.values():
                assert study.current(who) is not None, (study.id, who.label)
    assert "Traceback" not in capsys.readouterr().out
    assert len(warnings) == 2 and "cannot be opened now" in warnings[0]  # one a study, not a second


# -- journals set aside ---------------------------------------------------------------------------


def test_a_room_whose_journal_was_set_aside_says_so_after_a_restart(tmp_path: Path) -> None:
    rooms = registry(tmp_path)
    created = rooms.create(RoomRequest(house_seller="boulware"))
    journal = rooms.rooms[created.room].journal.file
    assert journal is not None
    journal.stop()  # what a failed write does to a room's journal
    again = registry(tmp_path)
    again.restore()
    why = again.unrestored[created.room]  # GET /admin/rooms/ID answers 410 with it, not 404
    assert "set aside" in why and f"{created.room}.jsonl.stopped" in why and "\n" not in why


def test_a_study_journal_set_aside_by_an_older_server_is_restored_and_written_whole(
    tmp_path: Path,
) -> None:
    rooms = registry(tmp_path)
    created = rooms.studies.create(solo())
    agree_and_look(rooms, created.participants["p01"])
    rooms.close()
    path = tmp_path / "rooms" / "studies" / "study-s1.jsonl"
    with path.open("ab") as file:
        file.write(b'{"n":0,"op":["page","p01","hid')  # torn by a short write
    path.rename(path.with_name(path.name + ".stopped"))  # as the older server set it aside

    again = registry(tmp_path)
    again.restore()
    back = again.studies.lookup(created.participants["p01"])
    assert back is not None and back.who is not None and back.who.agreed is not None
    assert again.studies.lookup(created.participants["p02"]) is not None
    assert path.read_bytes().endswith(b"\n") and not path.with_name(path.name + ".stopped").exists()
    back.study.page(back.who, "hidden")  # appended after a whole line: read back next time
    third = registry(tmp_path)
    third.restore()
    assert [e[1] for e in third.studies.studies["s1"].participants["p01"].page] == [
        "open",
        "hidden",
    ]

"""Room journals: every open room survives a restart of its server.

The referee and the schedule are deterministic: a negotiation is fully determined by its room's
configuration and the inputs its remote seats gave the schedule, in order (an action and the
wall time it arrived, a sleep, a cancel, thinking time, a seat counted as absent, events shown
to a seat, and the wall-clock steps that changed something). A room appends each input, as one
JSON line, to its journal before the call that made it returns; a server that starts again
replays every journal into a fresh room (``Room.replay``), house agents deciding exactly as they
did, so clients reconnect with their tokens and go on. Tokens are journaled as SHA-256 digests
only.

A journal is one file per room, ``<store>.rooms/<room>.jsonl`` (0600 in a 0700 directory, as
private as the store: ``dealroom.store.private``): a header line (the room's
request, token digests, when it was created) and then ``{"n": negotiation, "op": [...]}``
lines. Each line is written through to the operating system at once, in one ``write`` on a
descriptor opened for it alone (it survives the process being killed; not a power loss; and a
room holds no open file between its inputs). A room's journal is removed when the server
forgets the room.

A journal that misses an input can never be replayed: it would rebuild the room as it was
before that input, behind what its seats saw and what the results store holds. So the first
write that fails (a full disk) sets the journal aside (``<room>.jsonl.stopped``, never replayed;
deleted if it cannot be renamed) and the room plays on without one: it will not survive a
restart, but nothing is ever restored behind the store (``RoomRegistry.restore`` checks that
too, for a server killed between the failure and the rename).

A study's journal is a ``WholeJournal``: a study's state is small and all in memory, so a failed
write leaves its journal behind, never aside, and the journal is written whole again as soon as
the disk allows (a study is never lost to a moment of full disk).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import structlog

from dealroom.engine.schedule import Scheduler
from dealroom.protocol import ACTION_ADAPTER, Action, Agent, Referee, Role
from dealroom.protocol.wire import ClockKind
from dealroom.store.private import open_private, private_dir

log = structlog.stdlib.get_logger(__name__)

Op = list[Any]
"""One input of a negotiation: ``["submit", role, action, wall]``, ``["sleep", role, timeout,
wall]``, ``["cancel", role]``, ``["think", role, seconds]``, ``["absent", role]``,
``["delivered", role, seen]``, ``["advance", wall]`` or ``["start", epoch_seconds]``; and one
input of the room rather than the negotiation, ``["consent", role, when]`` (an experiment's
participant agreed, ``Consent.agree``)."""


class JournaledScheduler(Scheduler):
    """A ``Scheduler`` that hands every input it is given to ``journal`` as it is made (an
    ``advance`` only when it changed something: one that did not need not be replayed)."""

    def __init__(
        self,
        referee: Referee,
        houses: Mapping[Role, Agent],
        *,
        clock: ClockKind,
        journal: Callable[[Op], None],
    ) -> None:
        super().__init__(referee, houses, clock=clock)
        self._journal = journal
        self.replaying = False
        """True while the journal is being replayed into it (nothing is journaled twice)."""

    def note(self, op: Op) -> None:
        """Journal an input that is not the schedule's own (``start``)."""
        if not self.replaying:
            self._journal(op)

    def submit(self, role: Role, action: Action, wall: float) -> None:
        super().submit(role, action, wall)
        self.note(["submit", role, action.model_dump(mode="json"), wall])

    def sleep(self, role: Role, timeout: float, wall: float) -> None:
        super().sleep(role, timeout, wall)
        self.note(["sleep", role, timeout, wall])

    def cancel(self, role: Role) -> None:
        super().cancel(role)
        self.note(["cancel", role])

    def think(self, role: Role, seconds: float) -> None:
        super().think(role, seconds)
        self.note(["think", role, seconds])

    def set_absent(self, role: Role) -> None:
        super().set_absent(role)
        self.note(["absent", role])

    def delivered(self, role: Role, seen: int) -> None:
        super().delivered(role, seen)
        self.note(["delivered", role, seen])

    def advance(self, wall: float = 0.0) -> None:
        before = self.version
        super().advance(wall)
        if self.version != before:
            self.note(["advance", wall])


def apply_op(sched: Scheduler, op: Sequence[Any]) -> None:
    """Give the schedule one journaled input (``delivered`` and ``start`` are the caller's)."""
    match op:
        case ["submit", role, action, wall]:
            sched.submit(role, ACTION_ADAPTER.validate_python(action), wall)
        case ["sleep", role, timeout, wall]:
            sched.sleep(role, timeout, wall)
        case ["cancel", role]:
            sched.cancel(role)
        case ["think", role, seconds]:
            sched.think(role, seconds)
        case ["absent", role]:
            sched.set_absent(role)
        case ["delivered", role, seen]:
            sched.delivered(role, seen)
        case ["advance", wall]:
            sched.advance(wall)
        case ["start", _]:
            pass
        case _:
            raise ValueError(f"not a journal entry: {op!r}")


@dataclass(frozen=True, slots=True)
class JournalFile:
    """One room's journal as read back: its header and its entries, oldest first."""

    header: Mapping[str, Any]
    entries: tuple[tuple[int, Op], ...]


STOPPED_SUFFIX = ".stopped"
"""Added to the name of a journal that missed an input (it is never replayed)."""


class RoomJournal:
    """The journal of one room, appended to one line at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stopped = False
        """True once a write failed: the journal was set aside and takes no more lines."""
        self._closed = False

    def append(self, number: int, op: Op) -> None:
        """Write one entry through to the OS. A failed write is logged once and the journal is
        set aside (``stop``): the room plays on, but is no longer restorable."""
        if self.stopped or self._closed:
            return
        line = (json.dumps({"n": number, "op": op}, separators=(",", ":")) + "\n").encode()
        try:
            _append(self.path, line)
        except OSError as exc:
            log.error(
                "room journal write failed; the room will not survive a restart",
                path=str(self.path),
                error=str(exc),
            )
            self.stop()

    def stop(self) -> None:
        """Set the journal aside for good: renamed ``<room>.jsonl.stopped`` (never replayed),
        or deleted if it cannot be renamed."""
        self.stopped = True
        aside = self.path.with_name(self.path.name + STOPPED_SUFFIX)
        try:
            os.replace(self.path, aside)
        except OSError:
            with contextlib.suppress(OSError):
                self.path.unlink(missing_ok=True)
            return
        self.path = aside

    def close(self) -> None:
        """Stop writing (the file stays)."""
        self._closed = True

    def remove(self) -> None:
        """Stop writing and delete the journal (the room is forgotten)."""
        self.close()
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)


WHOLE_RETRY_MAX_S = 60.0
"""Longest wait between two tries to write a journal whole while the disk stays full."""


class WholeJournal(RoomJournal):
    """The journal of something whose whole state is small and in memory (a study): a failed
    append never sets it aside. It falls *behind* instead (logged once; later entries are not
    appended, the state holds them), and ``catch_up_soon`` (the reaper's tick) or ``catch_up``
    (at once: the server's stop) writes the whole journal again from ``whole()``, the header and
    every entry the state stands for, into a temporary file renamed over the old one (atomic:
    the file on disk is always the old journal or the new one whole). So a moment of full disk
    loses nothing, and a server killed while behind restarts from the last whole journal (a
    prefix of the inputs), never from nothing.

    The reaper's tries cost the event loop nothing much: none while the disk has less room than
    the journal last took, the serializing and writing in a worker thread, and after a failed
    try the next waits twice as long (1 s, 2 s, ... ``WHOLE_RETRY_MAX_S``). Measured: a study
    of 2,000 participants with 100 page events each (203,000 entries, 14 MB) is written whole in
    1.7 s, the event loop held at most 0.42 s (building the entries); 200 with 50 each, 0.17 s
    and 0.1 s."""

    def __init__(
        self, path: Path, whole: Callable[[], tuple[Mapping[str, Any], Sequence[Op]]]
    ) -> None:
        super().__init__(path)
        self.behind = False
        """True while the file misses inputs the state holds (a write failed)."""
        self._whole = whole
        self._missed = 0
        """Entries not appended while behind (a whole write made meanwhile misses them)."""
        self._writing = False
        self._retry_at = 0.0
        self._retry_s = 1.0

    def append(self, number: int, op: Op) -> None:
        """Write one entry (the state already holds it); while behind, nothing (the whole
        journal, written later, holds it)."""
        if self._closed:
            return
        if self.behind:
            self._missed += 1
            return
        line = (json.dumps({"n": number, "op": op}, separators=(",", ":")) + "\n").encode()
        try:
            _append(self.path, line)
        except OSError as exc:
            self.behind = True
            log.error(
                "journal write failed; kept in memory, written whole once the disk allows",
                path=str(self.path),
                error=str(exc),
            )

    def catch_up(self) -> bool:
        """If behind, write the whole journal again now; True once the file holds the state."""
        if not self.behind:
            return True
        if self._writing:
            return False
        missed = self._missed
        header, entries = self._whole()
        return self._done(_write_whole(self.path, header, entries), missed)

    async def catch_up_soon(self) -> None:
        """The reaper's try (see the class docstring): if behind and its time has come."""
        if not self.behind or self._writing or time.monotonic() < self._retry_at:
            return
        if not _room_for(self.path):
            self._done(False, self._missed)
            return
        missed = self._missed
        header, entries = self._whole()
        self._writing = True
        try:
            written = await anyio.to_thread.run_sync(_write_whole, self.path, header, entries)
        finally:
            self._writing = False
        self._done(written, missed)

    def _done(self, written: bool, missed: int) -> bool:
        if not written:
            self._retry_at = time.monotonic() + self._retry_s
            self._retry_s = min(self._retry_s * 2, WHOLE_RETRY_MAX_S)
            return False
        self._retry_at, self._retry_s = 0.0, 1.0
        if self._missed != missed:  # entries came while it was written: once more, at once
            return False
        self.behind = False
        log.info("journal written whole again", path=str(self.path))
        return True

    def close(self) -> None:
        """Stop writing, once the file holds the state if the disk allows."""
        if not self._closed:
            self.catch_up()
        super().close()


def _write_whole(path: Path, header: Mapping[str, Any], entries: Sequence[Op]) -> bool:
    """Write a journal whole (a temporary file renamed over ``path``); False if it cannot."""
    lines = [json.dumps(dict(header), sort_keys=True)]
    lines += [json.dumps({"n": 0, "op": op}, separators=(",", ":")) for op in entries]
    data = ("\n".join(lines) + "\n").encode()
    temporary = path.with_name(path.name + ".new")
    try:
        fd = open_private(temporary)
        try:
            if os.write(fd, data) != len(data):
                raise OSError(errno.ENOSPC, "short write to a journal")
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        log.debug("journal still behind", path=str(path), error=str(exc))
        return False
    return True


def _room_for(path: Path) -> bool:
    """Whether the disk of ``path`` has room for it again (as large as it is, and 64 KiB)."""
    try:
        size = path.stat().st_size
        disk = os.statvfs(path.parent)
    except OSError:
        return True  # cannot tell: try
    return disk.f_bavail * disk.f_frsize >= size + 65_536


def _append(path: Path, data: bytes) -> None:
    """Append ``data`` to an existing file in one write; OSError if not all of it landed."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    try:
        if os.write(fd, data) != len(data):
            raise OSError(errno.ENOSPC, "short write to a room journal")
    finally:
        os.close(fd)


class Journals:
    """The directory of a server's room journals."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    @classmethod
    def beside(cls, store_path: str | Path) -> Journals:
        """The journals of the server whose store is at ``store_path``: ``<store>.rooms/``."""
        return cls(Path(f"{store_path}.rooms"))

    def create(self, room: str, header: Mapping[str, Any]) -> RoomJournal | None:
        """A new room's journal with its header written; None (logged) if it cannot be."""
        path = self.directory / f"{room}.jsonl"
        text = json.dumps({"created": time.time(), **header}, sort_keys=True) + "\n"
        created = False
        try:
            private_dir(self.directory, own=True)
            with os.fdopen(open_private(path, exclusive=True), "w", encoding="utf-8") as out:
                created = True
                out.write(text)
        except OSError as exc:
            log.error(
                "cannot create a room journal; the room will not survive a restart",
                room=room,
                error=str(exc),
            )
            if created:  # a header cut short by a full disk is no journal
                with contextlib.suppress(OSError):
                    path.unlink()
            return None
        return RoomJournal(path)

    def set_aside(self) -> list[Path]:
        """The journals set aside in the directory (``<name>.jsonl.stopped``: each missed an
        input and is never replayed), oldest first."""
        if not self.directory.is_dir():
            return []
        paths = self.directory.glob(f"*.jsonl{STOPPED_SUFFIX}")
        return sorted(paths, key=lambda p: p.stat().st_mtime_ns)

    def load(self) -> Iterator[tuple[Path, JournalFile | str]]:
        """Every journal in the directory, oldest first, read back; or, for a file that cannot
        be read (damaged, nested too deep to parse, anything), why not (logged; the file is
        left in place). A torn last line (the process was killed mid-write) is dropped: its
        call never returned."""
        if not self.directory.is_dir():
            return
        paths = sorted(self.directory.glob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
        for path in paths:
            try:
                read: JournalFile | str = _read(path)
            except Exception as exc:  # one bad file must not stop the others being read
                read = reason_of(exc)
                log.error("unreadable room journal left in place", path=str(path), error=read)
            yield path, read


def reason_of(exc: BaseException) -> str:
    """One line saying why a file could not be used."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _read(path: Path) -> JournalFile:
    lines = path.read_text(encoding="utf-8").split("\n")
    header = json.loads(lines[0])
    entries: list[tuple[int, Op]] = []
    body = lines[1:]
    for i, line in enumerate(body):
        if not line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            if i >= len(body) - 2:  # only the last line can be torn
                break
            raise
        entries.append((int(entry["n"]), list(entry["op"])))
    return JournalFile(header=header, entries=tuple(entries))

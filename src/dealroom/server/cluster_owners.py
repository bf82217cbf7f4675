"""Who owns what in a cluster (``dealroom.server.cluster``): the prefix of each worker's tokens
and each worker's journal directory. Kept apart from the front so that a worker imports none of
the front's client stack."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
from collections.abc import Generator
from pathlib import Path

import structlog

from dealroom.store.private import open_private, private_dir

log = structlog.stdlib.get_logger(__name__)

_PREFIX = re.compile(r"w(\d{1,4})\.")


def token_prefix(index: int) -> str:
    """The prefix of every token that worker ``index`` issues."""
    return f"w{index}."


def owner_of(token: str, workers: int) -> int | None:
    """The worker a token names, or None if its prefix names none of ``workers``."""
    found = _PREFIX.match(token)
    if found is None or int(found.group(1)) >= workers:
        return None
    return int(found.group(1))


def journal_directory(store: Path, index: int) -> Path:
    """Worker ``index``'s room journals: worker 0 keeps the single server's ``<store>.rooms``
    (so a server restarted with or without workers finds its rooms), worker i ``.../w<i>``."""
    root = Path(f"{store}.rooms")
    return root if index == 0 else root / f"w{index}"


def stray_journals(store: Path, workers: int) -> list[int]:
    """Worker indices at or past ``workers`` that left room journals (whose rooms a cluster
    of ``workers`` would not restore)."""
    root = Path(f"{store}.rooms")
    if not root.is_dir():
        return []
    found: list[int] = []
    for path in root.glob("w*"):
        index = path.name[1:]
        if index.isdigit() and int(index) >= workers and any(path.glob("*.jsonl")):
            found.append(int(index))
    return sorted(found)


@contextlib.contextmanager
def owning(directory: Path, *, wait_s: float = 30.0, owner: str = "") -> Generator[None]:
    """Hold ``directory``'s owner lock (a server or a cluster's worker owns its journals: no two
    processes replay the same rooms, e.g. a server started twice on one store, or restarted
    while the one before it still stops). Waits up to ``wait_s`` for another owner to go, and
    says so at once (a warning naming it: its pid and ``owner``, e.g. the URL it serves, which
    each owner writes into the lock file); OSError naming it if it does not go."""
    private_dir(directory, own=True)
    with os.fdopen(open_private(directory / ".owner", truncate=False), "a") as lock:
        deadline, waited = time.monotonic() + wait_s, False
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                other = _owner(directory / ".owner")
                if not waited:
                    waited = True
                    log.warning(
                        "another process serves these rooms: waiting for it to stop",
                        owner=other,
                        wait_s=wait_s,
                        rooms=str(directory),
                    )
                if time.monotonic() >= deadline:
                    raise OSError(
                        f"{directory}: another process still serves these rooms ({other})"
                    ) from None
                time.sleep(0.1)
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()}" + (f", {owner}" if owner else ""))
        lock.flush()
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _owner(path: Path) -> str:
    """Who holds the lock, as it wrote itself into the file (an older version wrote nothing)."""
    try:
        with path.open(encoding="utf-8", errors="replace") as file:
            return file.read(200).strip() or "one that does not say which"
    except OSError:
        return "one that does not say which"

"""Files private to their owner: results stores, spools and room journals, whatever the umask.

A store holds every negotiation's outcome and both sides' values; a room journal holds its
room's secret. A seat's host may let the agent read files (another account on the machine, or
a tool that reads the disk), so every such file is created 0600 and every directory dealroom
creates for them 0700, set with ``chmod`` after creation, as the umask can only narrow a mode
and a process may run under a umask of 000. Directories that are dealroom's own (the spool,
the journals, the default store's directory) are narrowed to 0700 when they already exist;
others (the directory of a store the user named) are left as they are.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

FILE_MODE = 0o600
"""Every store, spool and journal file: read and written by its owner only."""

DIR_MODE = 0o700
"""Every directory dealroom creates for them."""


def private_dir(path: Path, *, own: bool = False) -> None:
    """Create ``path`` and its missing parents, each 0700. With ``own`` (the directory is
    dealroom's alone), an existing ``path`` of this user is narrowed to 0700 too."""
    missing: list[Path] = []
    at = path
    while not at.exists():
        missing.append(at)
        at = at.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIR_MODE)
        except FileExistsError:  # another process made it (its mode is its own to set)
            continue
        os.chmod(directory, DIR_MODE)
    if own and not missing:
        narrow(path, DIR_MODE)


def narrow(path: Path, mode: int) -> None:
    """Take ``path`` (if it is there and this user's) down to ``mode``."""
    with contextlib.suppress(OSError):
        status = os.stat(path)
        if status.st_uid == os.geteuid() and status.st_mode & 0o777 != mode:
            os.chmod(path, mode)


def open_private(path: Path, *, exclusive: bool = False, truncate: bool = True) -> int:
    """A descriptor writing ``path``, created 0600 (with ``exclusive``, FileExistsError if it
    is there; else an existing file of this user is narrowed to 0600, and with ``truncate``
    emptied). The caller closes it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC
    flags |= os.O_EXCL if exclusive else (os.O_TRUNC if truncate else 0)
    fd = os.open(path, flags, FILE_MODE)
    try:
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd

"""Model calls as they are paid for: a journal beside a results store (``<store>.paid.jsonl``).

A negotiation's usage is stored with it when it ends; its model calls were paid for as they
returned. A tournament killed in between (``kill -9``, a crash) pays for them again when
``--resume`` replays the negotiation, and without this journal nobody would know. Every model
call of a tournament's seats is appended here the moment it returns, one JSON line: ``run``,
``key`` (the negotiation), ``attempt`` (one per play of it; the stored row names the attempt it
kept), ``role``, ``agent`` and the call's tokens and cost. ``dealroom report`` adds the calls
of attempts no stored row kept as "paid, not stored".

Lines are appended with one ``write`` each on a file opened ``O_APPEND`` (0600, as the store):
a process killed mid-run leaves every line it wrote; a torn last line (a machine that lost
power) is skipped when read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

SUFFIX = ".paid.jsonl"


def paid_path(store: Path) -> Path:
    """The journal beside a results store."""
    return store.with_name(store.name + SUFFIX)


def append(path: Path, line: Mapping[str, Any]) -> None:
    """Append one call (best effort: a journal that cannot be written loses only this count)."""
    data = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError:
        return
    try:
        os.write(fd, data)
    except OSError:
        pass
    finally:
        os.close(fd)


def read(path: Path, run: str | None = None) -> Iterator[dict[str, Any]]:
    """Every journaled call (of ``run``, if given); lines that do not parse are skipped."""
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError:
        return
    with handle:
        for text in handle:
            try:
                line = json.loads(text)
            except (ValueError, RecursionError):
                continue
            if isinstance(line, dict):
                entry = cast(dict[str, Any], line)
                if run is None or entry.get("run") == run:
                    yield entry


__all__ = ["SUFFIX", "append", "paid_path", "read"]

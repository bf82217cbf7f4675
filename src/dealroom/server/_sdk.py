"""The MCP SDK's private parts dealroom relies on, checked at start.

Two places reach past the SDK's public API: the HTTP session cap wraps the session manager's
admission step (``http_limits.cap_sessions_per_seat``), and the stdio wire runs the app's
low-level server on its own streams (``stdio_wire``). Each checks what it uses first, so another
``mcp`` version fails at start in one line, never in a request.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence

from dealroom.protocol.errors import DealroomError


class UnsupportedMCP(DealroomError):
    """The installed ``mcp`` lacks a private part dealroom uses (another version than the one
    it was written for)."""

    kind = "unsupported_mcp"


def check_internals(target: object, names: Sequence[str]) -> None:
    """Raise ``UnsupportedMCP`` (one line: the version, what is missing, what to do) unless
    ``target`` has every one of ``names``."""
    missing = [name for name in names if not hasattr(target, name)]
    if missing:
        raise UnsupportedMCP(
            f"mcp {importlib.metadata.version('mcp')}: {type(target).__name__} has no "
            f"{', '.join(missing)}, which dealroom uses; install the mcp version dealroom "
            "pins (pip install -e . picks it)"
        )

"""``dealroom seat``: a stdio MCP server that plays one seat of an HTTP room (for stdio hosts)."""

from __future__ import annotations

import argparse
import os
import sys

import anyio

from dealroom.cli._common import Commands, usage_error

SEAT_TOKEN_ENV = "DEALROOM_SEAT_TOKEN"


def add(commands: Commands) -> None:
    """Register the subcommand."""
    parser = commands.add_parser(
        "seat",
        help="stdio MCP server forwarding to one seat of an HTTP room",
        description=f"Relay stdio MCP to a seat of an HTTP room. The seat token is read from "
        f"${SEAT_TOKEN_ENV}.",
    )
    parser.add_argument(
        "--server", required=True, help="the room server, e.g. http://127.0.0.1:8765 (or .../mcp)"
    )
    parser.set_defaults(handler=run)


def mcp_url(server: str) -> str:
    """The MCP endpoint of a server URL (``/mcp`` appended when there is no path)."""
    url = server.rstrip("/")
    return url if url.endswith("/mcp") else f"{url}/mcp"


def run(args: argparse.Namespace) -> int:
    """Relay until the host closes stdin."""
    token = os.environ.get(SEAT_TOKEN_ENV)
    if not token:
        raise usage_error(f"set {SEAT_TOKEN_ENV} to the seat token from `dealroom room create`")
    from dealroom.server.mcp_proxy import serve_proxy

    def refused(line: str) -> None:
        sys.stderr.write(f"dealroom seat: error: {line}\n")

    try:
        anyio.run(lambda: serve_proxy(mcp_url(args.server), token, on_refused=refused))
    except Exception as exc:  # one line for the host's log, not a traceback
        sys.stderr.write(f"dealroom seat: stopped: {type(exc).__name__}: {exc}\n")
        return 1
    return 0

"""The MCP SDK's private parts dealroom uses are checked at start: another mcp fails in one line."""

from __future__ import annotations

import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from dealroom.server._sdk import UnsupportedMCP, check_internals
from dealroom.server.http_limits import cap_sessions_per_seat


def test_the_installed_mcp_has_every_private_part_dealroom_uses() -> None:
    manager = StreamableHTTPSessionManager(MCPServer("t")._lowlevel_server)  # pyright: ignore[reportPrivateUsage]
    cap_sessions_per_seat(manager, 2)  # checks, then wraps
    check_internals(MCPServer("t"), ("_lowlevel_server",))


def test_an_mcp_without_them_is_refused_in_one_line_naming_what_is_missing() -> None:
    class Manager:  # what another SDK version's manager may look like
        _session_owners = None

    with pytest.raises(UnsupportedMCP, match=r"^mcp \S+: Manager has no _admit_session, ") as info:
        cap_sessions_per_seat(Manager(), 2)  # type: ignore[arg-type]
    assert "\n" not in str(info.value) and info.value.code == "unsupported_mcp"
    assert "_server_instances" in str(info.value)

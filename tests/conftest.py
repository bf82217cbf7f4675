"""Shared fixtures."""

import pytest

from coverage_support import measure_stdio_servers

measure_stdio_servers()


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (the MCP SDK and openai-agents are asyncio-based)."""
    return "asyncio"

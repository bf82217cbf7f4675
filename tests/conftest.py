"""Shared fixtures."""

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (the MCP SDK and openai-agents are asyncio-based)."""
    return "asyncio"

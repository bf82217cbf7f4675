"""Shared fixtures, and the suite's Hypothesis settings."""

import pytest
from hypothesis import settings

from coverage_support import measure_stdio_servers

measure_stdio_servers()

# No per-example deadline: a test asserts behaviour, not speed (benchmarks/ measures speed), and
# on a loaded machine a 200 ms deadline fails examples that are merely slow.
settings.register_profile("dealroom", deadline=None)
settings.load_profile("dealroom")


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (the MCP SDK and openai-agents are asyncio-based)."""
    return "asyncio"

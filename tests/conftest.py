"""Shared fixtures, and the suite's Hypothesis settings."""

import importlib.util
import sys
from collections.abc import Iterator

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


# Inspect AI in the tests: one leak of its own, closed here.
# Inspect 0.3.285 never closes the receiving end of each sample's event stream
# (``inspect_ai.hooks._hooks.start_sample_event_emitter``; ``drain_sample_events`` only drops the
# reference), so every sample leaves a ``ResourceWarning`` for the garbage collector, which the
# suite's ``filterwarnings = ["error"]`` turns into a failure at some later, unrelated point. The
# fixture closes that stream once the sample has drained; nothing of dealroom's is patched.
# A test that imports Inspect itself (in its body) is known by its name, so the stream of its
# first sample is closed too (the leak once failed the first Inspect test of a process).
@pytest.fixture(autouse=True)
def _close_inspect_sample_event_streams(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[None]:
    wanted = "inspect_ai" in sys.modules or "inspect" in request.node.nodeid.lower()
    if not wanted or importlib.util.find_spec("inspect_ai") is None:
        yield
        return
    from inspect_ai.hooks import _hooks
    from inspect_ai.log._samples import sample_active

    drain = _hooks.drain_sample_events

    async def drain_and_close() -> None:
        active = sample_active()
        receive = active.event_receive if active is not None else None
        try:
            await drain()
        finally:
            if receive is not None:
                receive.close()

    monkeypatch.setattr(_hooks, "drain_sample_events", drain_and_close)
    yield

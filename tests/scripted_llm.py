"""For LLM seats driven by ``agents.testing.ScriptedModel``: a retry policy that never waits
long, and tool calls with ids unique across the test session."""

from __future__ import annotations

import itertools
from typing import Any

from agents.testing import function_call

from dealroom.agents.llm import RetryPolicy

FAST_RETRY = RetryPolicy(attempts=3, initial_s=0.001, max_s=0.002, timeout_s=5)
_ids = itertools.count()


def call(name: str, arguments: dict[str, Any] | str | None = None) -> Any:
    """A model's call of tool ``name`` (``arguments`` as a dict, or raw text the model wrote)."""
    return function_call(name, {} if arguments is None else arguments, call_id=f"c{next(_ids)}")

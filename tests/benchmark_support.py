"""Load a script of benchmarks/ as a module, for tests of its functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load_benchmark(name: str, module: str | None = None) -> ModuleType:
    """``benchmarks/NAME.py`` as a module named ``module`` (default: ``NAME``)."""
    module = module or name
    spec = importlib.util.spec_from_file_location(module, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[module] = loaded  # dataclasses look their module up
    try:
        spec.loader.exec_module(loaded)
    finally:
        del sys.modules[module]
    return loaded

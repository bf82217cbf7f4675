"""Every script of benchmarks/ imports, and every dealroom name it imports exists.

A benchmark runs rarely and imports much of dealroom inside its functions (``gpu_train``'s
evaluation did, from a module that had moved on): importing the module catches what it imports
at the top, and reading each ``from dealroom... import NAME`` anywhere in it catches the rest.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

from benchmark_support import BENCHMARKS, load_benchmark

SCRIPTS = sorted(p.stem for p in BENCHMARKS.glob("*.py"))


def dealroom_imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name) of each dealroom import in a file, at any depth; name None for
    ``import dealroom.x``."""
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "dealroom":
            found += [(node.lineno, node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [
                (node.lineno, alias.name, None)
                for alias in node.names
                if alias.name.split(".")[0] == "dealroom"
            ]
    return found


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_dealroom_name_a_benchmark_imports_exists(name: str) -> None:
    path = BENCHMARKS / f"{name}.py"
    missing: list[str] = []
    for line, module, attribute in dealroom_imports(path):
        try:
            loaded = importlib.import_module(module)
        except ImportError as exc:
            missing.append(f"{path.name}:{line}: {module} ({exc})")
            continue
        if attribute is not None and not hasattr(loaded, attribute):
            try:
                importlib.import_module(f"{module}.{attribute}")
            except ImportError:
                missing.append(f"{path.name}:{line}: {module} has no {attribute}")
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_benchmark_imports(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # As ``python benchmarks/NAME.py`` runs it: its own folder first on the path (siblings).
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    before = set(sys.modules)
    try:
        load_benchmark(name, f"_benchmark_{name}")
    finally:
        for added in set(sys.modules) - before:
            if (getattr(sys.modules[added], "__file__", None) or "").startswith(str(BENCHMARKS)):
                del sys.modules[added]

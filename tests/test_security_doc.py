"""docs/security.md names the tests that prove each guarantee: every name must exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "security.md"


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    }


def references() -> list[tuple[str, str | None]]:
    """(file, test or None) for every `tests/...` reference; `::test` alone reuses the file."""
    found: list[tuple[str, str | None]] = []
    for line in DOC.read_text().splitlines():
        current: str | None = None
        for match in re.finditer(r"`(tests/[\w/.]+\.py)?(?:::(\w+))?`", line):
            file, test = match.groups()
            if file is None and test is None:
                continue
            current = file or current
            assert current is not None, f"a bare ::{test} needs a file before it: {line}"
            found.append((current, test))
    return found


def test_every_test_named_in_the_security_page_exists() -> None:
    refs = references()
    assert len(refs) > 10
    for file, test in refs:
        path = ROOT / file
        assert path.is_file(), file
        if test is not None:
            assert test in _tests_in(path), f"{file}::{test}"

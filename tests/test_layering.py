"""Dependencies point one way: protocol <- server <- sdk <- agents / cli."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dealroom"

# What each layer may import from dealroom.
ALLOWED = {
    "protocol": {"protocol"},
    "server": {"protocol", "server", "_logging"},
    "sdk": {"protocol", "server", "sdk", "_logging"},
    "agents": {"protocol", "server", "sdk", "agents", "_logging"},
}


def _dealroom_imports(path: Path) -> set[str]:
    layers = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "dealroom" and len(parts) > 1:
                layers.add(parts[1])
    return layers


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below_it(layer: str) -> None:
    for path in sorted((SRC / layer).rglob("*.py")):
        bad = _dealroom_imports(path) - ALLOWED[layer]
        assert not bad, f"{path.relative_to(SRC)} imports dealroom.{sorted(bad)}"


def test_protocol_imports_nothing_but_the_standard_library_and_pydantic() -> None:
    code = (
        "import sys; import dealroom.protocol; "
        "print(sorted({m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = set(ast.literal_eval(out))
    third_party = {"mcp", "agents", "openai", "structlog", "anyio", "httpx2", "numpy"}
    assert not loaded & third_party

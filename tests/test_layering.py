"""Dependencies point one way, in ORDER: each package imports only itself and those before it."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dealroom"

ORDER = [
    "protocol",  # wire models and the rules: stdlib and pydantic only
    "_logging",  # structlog set-up, called by entry points only
    "engine",  # the pure simulation: clocks, scheduler, play-out, fork
    "store",  # the results store
    "analysis",  # metrics, reports, transcripts
    "server",  # MCP: live negotiations, rooms, tokens, transports
    "client",  # MCP clients of a seat
    "play",  # players, runners, the agent registry, tournaments
    "training",  # rewards, SFT export, TRL / Gymnasium / PettingZoo adapters
    "agents",  # scripted strategies, the LLM seat, the human seat
    "testing",  # test doubles shipped to users
    "cli",  # the command line
]


def _layer(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


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


def test_every_package_has_a_place_in_the_order() -> None:
    found = {_layer(p) for p in SRC.rglob("*.py")} - {"__init__"}
    assert found == set(ORDER)


@pytest.mark.parametrize("layer", ORDER)
def test_each_layer_imports_only_the_layers_below_it(layer: str) -> None:
    allowed = set(ORDER[: ORDER.index(layer) + 1])
    paths = [p for p in sorted(SRC.rglob("*.py")) if _layer(p) == layer]
    assert paths
    for path in paths:
        bad = _dealroom_imports(path) - allowed
        assert not bad, f"{path.relative_to(SRC)} imports dealroom.{sorted(bad)}"


def _third_party_loaded_by(module: str) -> set[str]:
    code = f"import sys; import {module}; print(sorted({{m.split('.')[0] for m in sys.modules}}))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    third_party = {"mcp", "agents", "openai", "structlog", "anyio", "httpx2", "numpy", "starlette"}
    return set(ast.literal_eval(out)) & third_party


def test_protocol_imports_nothing_but_the_standard_library_and_pydantic() -> None:
    assert not _third_party_loaded_by("dealroom.protocol")


def test_the_engine_runs_without_an_event_loop_or_mcp() -> None:
    assert not _third_party_loaded_by("dealroom.engine.match")

"""Dependencies point one way, in ORDER: each package imports only itself and those before it;
no module imports the root package, and no import, deferred ones included, closes a cycle."""

import ast
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dealroom"

ORDER = [
    "_version",  # the version string, read by the build too
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
    "harnesses",  # Inspect AI and OpenEnv: dealroom inside other tools
    "testing",  # test doubles shipped to users
    "sdk",  # the agent SDK's one namespace: names from client, play, agents, testing
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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(nodes: Iterable[ast.AST]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import that runs at some time (at import, or deferred inside a function), but not
    those under ``if TYPE_CHECKING:``, which never run."""
    for node in nodes:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from _runtime_imports(node.orelse)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        else:
            yield from _runtime_imports(ast.iter_child_nodes(node))


def import_graph(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """Module name -> the modules of ``sources`` it imports (a package's ``__init__`` is named
    for its package; ``from a import b`` is ``a.b`` where that is a module, else ``a``)."""
    graph: dict[str, set[str]] = {}
    for name, source in sources.items():
        found: set[str] = set()
        for node in _runtime_imports([ast.parse(source)]):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    found.add(full if full in sources else node.module)
        graph[name] = {m for m in found if m in sources and m != name}
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = [stack.pop()]
            while component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _package_sources() -> dict[str, str]:
    return {_module_name(p): p.read_text(encoding="utf-8") for p in sorted(SRC.rglob("*.py"))}


def test_no_import_closes_a_cycle_deferred_imports_included() -> None:
    assert cycles(import_graph(_package_sources())) == []


def test_the_cycle_check_finds_a_deferred_cycle_and_ignores_type_checking_imports() -> None:
    sources = {
        "dealroom.a": "from dealroom.b import f\n",
        "dealroom.b": "def f():\n    from dealroom.a import g\n",
        "dealroom.c": "if TYPE_CHECKING:\n    import dealroom.a\n",
    }
    assert cycles(import_graph(sources)) == [["dealroom.a", "dealroom.b"]]
    sources["dealroom.a"] = "import dealroom.c\n"
    assert cycles(import_graph(sources)) == []


def test_no_module_of_the_library_imports_the_root_package() -> None:
    """``dealroom/__init__`` is the users' flat namespace; inside, each name comes from its home."""
    graph = import_graph(_package_sources())
    importers = sorted(m for m, deps in graph.items() if "dealroom" in deps)
    assert importers == []


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


MAX_LINES = 500


def test_no_module_is_over_500_lines() -> None:
    """A module a reader takes in at one sitting: past this, split it by job."""
    long = {
        str(p.relative_to(SRC)): n
        for p in sorted(SRC.rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}

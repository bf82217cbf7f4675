"""One meaning per name: no public class, function or constant is defined in two modules.

A second ``Seat`` or ``open_store`` with another meaning is what this catches: a reader who
meets a name should find one definition. The few names below are one idea shaped per layer (a
subcommand module's ``add``/``run`` entry points, a module's ``log``), listed on purpose;
one-letter type variables are not counted.
"""

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "dealroom"

PER_MODULE = {"add", "run", "log"}
"""Every CLI subcommand module has ``add`` and ``run``; every logging module its ``log``."""

SAME_IDEA = {
    # the one briefing, and the server's form of it taking an Observation
    "briefing": {"protocol/briefing.py", "server/texts.py"},
    # the mean over rows, and one outcome's share
    "surplus_share": {"analysis/metrics.py", "training/rewards.py"},
    # the CLI's copies keep `dealroom room` and the parser free of httpx and mcp imports
    "base_url": {"cli/room.py", "play/remote.py"},
    "SEAT_TOKEN_ENV": {"cli/seat.py", "client/seat.py"},
    # the stdlib remote seat client imports nothing of dealroom (a test checks the two agree)
    "MODEL_TOOLS_URI": {"server/mcp_app.py", "training/remote.py"},
}


def _public_definitions() -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(SRC.rglob("*.py")):
        module = path.relative_to(SRC).as_posix()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names: list[str] = []
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            for name in names:
                if not name.startswith("_") and len(name) > 1:  # not a TypeVar
                    found[name].add(module)
    return found


def test_no_public_name_is_defined_in_two_modules() -> None:
    twice = {
        name: modules
        for name, modules in _public_definitions().items()
        if len(modules) > 1 and name not in PER_MODULE and SAME_IDEA.get(name) != modules
    }
    assert not twice, twice


WORDS = {"Backend": "play/backends.py"}
"""Words of class names that mean one idea, and the one module defining such classes: a
"backend" is where a tournament's jobs run (serial, processes, Ray). What a served seat's tools
act on is a ``ServedSeat`` (``server/seat.py``)."""


def test_a_word_with_one_meaning_names_classes_of_one_module() -> None:
    elsewhere = {
        (word, name, module)
        for name, modules in _public_definitions().items()
        for word, home in WORDS.items()
        if word in name and name[0].isupper()
        for module in modules
        if module != home
    }
    assert not elsewhere, elsewhere


def test_the_listed_exceptions_still_exist() -> None:
    found = _public_definitions()
    stale = {name for name, modules in SAME_IDEA.items() if found.get(name) != modules}
    assert not stale, stale

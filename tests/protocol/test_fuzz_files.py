"""Garbage scenario and results files: one line on stderr and exit status 2, never a traceback.

Scenario files go through ``loads_jsonl`` (which must raise nothing but ScenarioFileError) and
``dealroom match --scenario``; results files through ``dealroom report``, ``replay`` and
``export-sft``: text, empty, truncated, corrupted pages, another program's SQLite file, a row
whose record is not JSON, a directory.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dealroom.cli import main
from dealroom.protocol import Scenario
from dealroom.protocol.generator import ScenarioFileError, generate, loads_jsonl

FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
VALID = [json.loads(s.model_dump_json()) for s in generate(3, seed=5)]
MATCH = ["match", "--buyer", "boulware", "--seller", "conceder", "--scenario"]

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**40), max_value=10**40),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=20),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=5,
)


def _paths(value: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if not isinstance(value, dict):
        return [prefix]
    found = [prefix] if prefix else []
    for key, inner in value.items():
        found += _paths(inner, (*prefix, key))
    return found


@st.composite
def mutated_line(draw: st.DrawFn) -> str:
    """A valid scenario with one field replaced, deleted or added, or its text cut short."""
    scenario = json.loads(json.dumps(draw(st.sampled_from(VALID))))
    path = draw(st.sampled_from(_paths(scenario)))
    parent = scenario
    for key in path[:-1]:
        parent = parent[key]
    how = draw(st.sampled_from(["replace", "delete", "add", "cut", "special"]))
    if how == "replace":
        parent[path[-1]] = draw(json_values)
    elif how == "delete":
        del parent[path[-1]]
    elif how == "add":
        parent[draw(st.text(min_size=1, max_size=8))] = draw(json_values)
    text = json.dumps(scenario)
    if how == "cut":
        text = text[: draw(st.integers(min_value=0, max_value=len(text) - 1))]
    elif how == "special":
        bad = draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", '"\\ud800"', "[]"]))
        text = text.replace(json.dumps(parent[path[-1]]), bad, 1)
    return text


scenario_texts = st.one_of(
    st.text(max_size=200),
    st.lists(mutated_line(), min_size=1, max_size=3).map("\n".join),
    st.lists(st.one_of(mutated_line(), st.just(json.dumps(VALID[0]))), max_size=4).map("\n".join),
)


@FUZZ
@given(text=scenario_texts)
def test_loads_jsonl_raises_nothing_but_scenario_file_errors(text: str) -> None:
    try:
        scenarios = list(loads_jsonl(text))
    except ScenarioFileError as exc:
        assert str(exc).startswith("line ") and "\n" not in str(exc)
    else:
        assert all(isinstance(s, Scenario) for s in scenarios)


def run_cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    """Run the CLI in process: (exit status, stderr). An exception escaping is a failure."""
    capsys.readouterr()
    status = main(argv)
    return status, capsys.readouterr().err


def assert_one_line_error(status: int, err: str, what: str) -> None:
    assert status == 2, f"{what}: exit {status}, stderr {err[:500]!r}"
    assert err.count("\n") == 1 and err.startswith("dealroom: error: "), f"{what}: {err[:500]!r}"
    assert "Traceback" not in err


@FUZZ
@given(data=st.one_of(st.binary(max_size=300), scenario_texts.map(str.encode)))
def test_match_with_a_garbage_scenario_file_fails_in_one_line(
    data: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "scenarios.jsonl"
    path.write_bytes(data)
    status, err = run_cli(capsys, [*MATCH, str(path)])
    if status != 0:  # a file that happens to hold a valid first scenario plays
        assert_one_line_error(status, err, repr(data[:200]))


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\n\n   \n",
        b"\xff\xfe\x00garbage",
        b"[]",
        b"{}",
        b"null",
        json.dumps(VALID).encode(),  # one JSON array, not JSON lines
        json.dumps(VALID[0]).encode()[:-1],
        b"\xef\xbb\xbf" + json.dumps(VALID[0]).encode(),  # a UTF-8 byte-order mark
        json.dumps({**VALID[0], "buyer_value": "1e999"}).encode(),
        json.dumps({**VALID[0], "list_price": 10**400}).encode(),
        json.dumps({**VALID[0], "deadline": -1}).encode(),
        b'{"id": "\\ud800"}',
    ],
    ids=lambda c: repr(c[:24]),
)
def test_known_bad_scenario_files_fail_in_one_line(
    content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "scenarios.jsonl"
    path.write_bytes(content)
    status, err = run_cli(capsys, [*MATCH, str(path)])
    assert_one_line_error(status, err, repr(content[:60]))


def test_a_missing_or_unreadable_scenario_path_fails_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for path in [tmp_path / "missing.jsonl", tmp_path]:
        status, err = run_cli(capsys, [*MATCH, str(path)])
        assert_one_line_error(status, err, str(path))


# -- results files ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("store") / "good.db"
    argv = ["tournament", "--agents", "boulware,conceder", "--per-pair", "10", "--out", str(path)]
    assert main(argv) == 0
    with sqlite3.connect(path) as db:  # fold the WAL into the file, as a copied store would be
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def _text(good: Path, path: Path) -> None:
    del good
    path.write_text("negotiations, but in a spreadsheet\n")


def _empty(good: Path, path: Path) -> None:
    del good
    path.write_bytes(b"")


def _truncated(good: Path, path: Path) -> None:
    path.write_bytes(good.read_bytes()[: good.stat().st_size // 3])


def _header_only(good: Path, path: Path) -> None:
    path.write_bytes(good.read_bytes()[:100])


def _corrupted_pages(good: Path, path: Path) -> None:
    data = bytearray(good.read_bytes())
    for i in range(8192, len(data), 7):
        data[i] = (data[i] * 31 + 7) % 256
    path.write_bytes(bytes(data))


def _other_program(good: Path, path: Path) -> None:
    del good
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE photos (id INTEGER, name TEXT)")


def _bad_record(good: Path, path: Path) -> None:
    shutil.copy(good, path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE negotiations SET record = '{garbage' WHERE rowid = 3")


def _bad_config(good: Path, path: Path) -> None:
    shutil.copy(good, path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET config = 'not json'")


def _directory(good: Path, path: Path) -> None:
    del good
    path.mkdir()


BAD_STORES: dict[str, Callable[[Path, Path], None]] = {
    "text": _text,
    "empty": _empty,
    "truncated": _truncated,
    "header-only": _header_only,
    "corrupted-pages": _corrupted_pages,
    "other-program": _other_program,
    "bad-record": _bad_record,
    "bad-config": _bad_config,
    "directory": _directory,
}


@pytest.mark.parametrize("kind", sorted(BAD_STORES))
def test_report_replay_and_export_on_a_bad_results_file_fail_in_one_line(
    kind: str, good_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.db"
    BAD_STORES[kind](good_store, path)
    status, err = run_cli(capsys, ["report", str(path), "--resamples", "10"])
    assert_one_line_error(status, err, f"{kind}: dealroom report")
    # These may still do their job where the damage is elsewhere (another row, the run's
    # configuration, an empty file); if not, one line and exit 2.
    for argv in (
        ["export-sft", str(path), "--out", str(tmp_path / "sft.jsonl")],
        ["replay", str(path), "tournament/mid/00002/boulware/conceder"],
    ):
        status, err = run_cli(capsys, argv)
        if status != 0:
            assert_one_line_error(status, err, f"{kind}: dealroom {argv[0]}")


def test_the_good_store_itself_reports(
    good_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _ = run_cli(capsys, ["report", str(good_store), "--resamples", "10"])
    assert status == 0


@FUZZ
@given(data=st.binary(min_size=1, max_size=2000), keep=st.integers(min_value=0, max_value=4096))
def test_report_on_random_bytes_or_a_random_prefix_of_a_store_fails_in_one_line(
    data: bytes,
    keep: int,
    good_store: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "random.db"
    for content in (data, good_store.read_bytes()[:keep] + data):
        path.unlink(missing_ok=True)
        path.write_bytes(content)
        status, err = run_cli(capsys, ["report", str(path), "--resamples", "10"])
        assert_one_line_error(status, err, repr(content[:40]))

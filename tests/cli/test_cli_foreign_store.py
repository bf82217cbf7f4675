"""Reading commands never write into a file that is not a dealroom results store."""

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from dealroom.cli import main


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "{db}"],
        ["replay", "{db}", "some-key"],
        ["export-sft", "{db}", "--out", "{out}"],
    ],
)
def test_reading_commands_leave_a_foreign_sqlite_file_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    db = tmp_path / "other.db"
    with closing(sqlite3.connect(db)) as con:
        con.execute("CREATE TABLE notes (text TEXT)")
        con.commit()
    args = [a.format(db=db, out=tmp_path / "out.jsonl") for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a dealroom results store" in err
    with closing(sqlite3.connect(db)) as con:
        tables = [name for (name,) in con.execute("SELECT name FROM sqlite_master")]
    assert tables == ["notes"]

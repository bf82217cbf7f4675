"""docs/web.md's commands fit together as a reader runs them, one after another."""

import re
from pathlib import Path

DOC = (Path(__file__).resolve().parents[1] / "docs" / "web.md").read_text(encoding="utf-8")


def test_the_followed_tournament_writes_the_store_the_server_of_the_steps_serves() -> None:
    served = re.findall(r"^\s*dealroom serve --transport http .*--results (\S+)", DOC, re.M)
    written = re.findall(r"^dealroom tournament .*--out (\S+)", DOC, re.M)
    assert served and written, "the page starts a server with a store and runs a tournament"
    assert set(written) <= set(served), (written, served)

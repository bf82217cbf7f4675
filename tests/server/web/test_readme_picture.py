"""docs/readme_picture.py draws the README's picture as written: an ordinary negotiation's room
page, saved by the browser tests' headless Chromium."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest
from browser_support import needs_browser

pytestmark = [needs_browser(), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "docs" / "readme_picture.py"
PICTURE = "docs/images/web-room-deal.png"


def test_the_readme_shows_the_picture_the_script_draws() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"]({PICTURE})" in readme
    assert "docs/readme_picture.py" in readme
    assert "web-room-ended.png" not in readme  # the security fixture: a script tag, both lose


def test_the_picture_script_draws_a_deal_inside_the_zone(tmp_path: Path) -> None:
    out = tmp_path / "picture.png"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == f"{out}: deal at 1217.51, buyer surplus 116.88\n"
    head = out.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert width == 1200 and height > 900

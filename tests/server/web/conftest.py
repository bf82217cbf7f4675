"""The web tests share the server tests' helpers (tests/server/mcp_support.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

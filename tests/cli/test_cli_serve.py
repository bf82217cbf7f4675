"""``dealroom serve --transport http`` started for real: what it says when it cannot serve."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

SERVE = [sys.executable, "-c", "import sys; from dealroom.cli import main; sys.exit(main())"]
SERVE += ["serve", "--transport", "http"]


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port another socket listens on."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield int(other.getsockname()[1])


def serve(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEALROOM_ADMIN_TOKEN": "a" * 32, "TMPDIR": str(tmp_path)}
    command = [*SERVE, "--results", str(tmp_path / "results.db"), *flags]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.slow
def test_a_port_in_use_is_one_line_and_exit_2(
    tmp_path: Path, taken_port: int, workers: str
) -> None:
    done = serve(tmp_path, "--port", str(taken_port), "--workers", workers)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"dealroom: error: port {taken_port} on 127.0.0.1 is in use (--port)\n"


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.slow
def test_a_server_says_in_one_line_on_stderr_where_it_serves(tmp_path: Path, workers: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    env = {**os.environ, "DEALROOM_ADMIN_TOKEN": "a" * 32, "TMPDIR": str(tmp_path)}
    command = [*SERVE, "--results", str(tmp_path / "results.db"), "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--workers", workers],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(60, process.kill)  # a server that never says it is ready
    watchdog.start()
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
    finally:
        watchdog.cancel()
        process.terminate()
        out, _ = process.communicate(timeout=60)
    url = f"http://127.0.0.1:{port}"
    pages = "room, seat, tournament, study"
    assert first == f"dealroom: serving MCP at {url}/mcp, web pages at {url}/web/ ({pages})\n"
    assert (process.returncode, out) == (0, "")


def test_a_market_seller_is_a_house_seat_of_a_served_market_room() -> None:
    from dealroom.cli import build_parser
    from dealroom.cli._serving import market_room_player
    from dealroom.play.players import Player

    args = build_parser(["serve"]).parse_args(["serve", "--transport", "http"])
    built: dict[str, Player] = {}
    for spec in ["auctioneer", "sequential:e=2", "linear"]:  # the registry builds each
        assert market_room_player(spec, args, built) is None, spec
    assert built == {}

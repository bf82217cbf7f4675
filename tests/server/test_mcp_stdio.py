"""`dealroom serve` launched exactly as Claude Desktop launches it: a stdio subprocess with the
restricted environment MCP hosts pass (HOME, LOGNAME, PATH, SHELL, TERM, USER)."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from decimal import Decimal
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_support import ok, secret_with_gains

from dealroom.store.results import ResultsStore

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
DEALROOM = Path(sys.executable).parent / "dealroom"
HOST_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")


@asynccontextmanager
async def desktop_session(home: Path, stdout_log: Path, *args: str) -> AsyncIterator[Client]:
    """Launch `dealroom serve ARGS` the way a desktop MCP host does (stdout copied to a log)."""
    env = {k: os.environ[k] for k in HOST_ENV if k in os.environ}
    env["HOME"] = str(home)
    command = [str(DEALROOM), "--log-level", "INFO", "serve", *args]
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(HERE / "stdio_tee.py"), str(stdout_log), "--", *command],
        env=env,
    )
    async with Client(params, mode="legacy") as client:
        yield client


def assert_only_json_rpc(stdout_log: Path) -> None:
    lines = stdout_log.read_bytes().splitlines()
    assert lines, "the server wrote nothing"
    for line in lines:
        message = json.loads(line)  # fails on anything that is not a JSON line
        assert message.get("jsonrpc") == "2.0", line[:200]


def stored(home: Path) -> dict[str, str]:
    with ResultsStore(home / ".local/share/dealroom/results.db") as store:
        return {row.key: row.record.outcome.end_reason for row in store.iter()}


async def play_buyer_to_a_deal(client: Client) -> dict[str, object]:
    state = await ok(client, "get_state")
    value = Decimal(str(state["observation"]["private_value"]))
    bid = Decimal(str(state["observation"]["scenario"]["list_price"])) * Decimal("0.5")
    await ok(client, "make_offer", price=float(bid), message="Cash, today.")
    while True:
        update = await ok(client, "wait_for_opponent", timeout_s=15)
        if update["outcome"] is not None:
            return update
        theirs = [o for o in update["live_offers"] if o["by"] == "seller"]
        if theirs and Decimal(str(theirs[0]["price"])) < value:
            return await ok(client, "accept", offer_id=theirs[0]["offer_id"])
        bid = min(bid * Decimal("1.05"), value * Decimal("0.98"))
        result = await ok(client, "make_offer", price=float(round(bid, 2)))
        if result["outcome"] is not None:
            return result


async def test_a_desktop_host_plays_to_a_deal_and_another_session_to_the_deadline(
    tmp_path: Path,
) -> None:
    secret = secret_with_gains()
    with anyio.fail_after(60):
        log1 = tmp_path / "stdout-1.log"
        async with desktop_session(
            tmp_path, log1, "--role", "buyer", "--opponent", "conceder", "--secret", secret.hex()
        ) as client:
            briefing = await client.get_prompt("briefing")
            assert "You are the buyer" in briefing.messages[0].content.text  # type: ignore[union-attr]
            final = await play_buyer_to_a_deal(client)
        outcome = final["outcome"]
        assert isinstance(outcome, dict) and outcome["status"] == "deal"
        assert Decimal(str(outcome["surplus"])) > 0
        assert_only_json_rpc(log1)
        first = stored(tmp_path)
        assert list(first.values()) == ["accepted"]

        # A restart on the same results store, played to the deadline.
        log2 = tmp_path / "stdout-2.log"
        args = ["--role", "seller", "--opponent", "hardliner", "--deadline", "30"]
        async with desktop_session(tmp_path, log2, *args) as client:
            state = await ok(client, "get_state")
            second_id = state["observation"]["scenario"]["id"]
            assert re.fullmatch(r"mid-[0-9a-f]{16}", second_id)  # opaque: no seed, no index
            update = await ok(client, "wait_for_opponent", timeout_s=20)
            while update["woke"] != "ended":
                update = await ok(client, "wait_for_opponent", timeout_s=20)
        assert update["outcome"]["end_reason"] == "deadline"
        assert_only_json_rpc(log2)
    second = stored(tmp_path)
    assert len(second) == 2 and set(first) < set(second), "nothing lost, nothing duplicated"
    assert sorted(second.values()) == ["accepted", "deadline"]

"""`dealroom serve --opponent llm:MODEL`: an LLM as the house agent of a stdio server.

The server is a real subprocess, launched as a desktop MCP host launches it; the LLM's endpoint
is the loopback fake (``tests/fake_openai.py``) answering with scripted tool calls.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_support import ok, secret_with_gains
from test_mcp_stdio import assert_only_json_rpc, desktop_session

from dealroom.store.results import ResultsStore
from fake_openai import Status, negotiator, scripted, serve

pytestmark = pytest.mark.anyio

FAST = ("--model-timeout", "1", "--model-attempts", "2", "--model-backoff", "0.01")


def stored(home: Path) -> list[tuple[str, Any, Any]]:
    """(key, record, extra) of every stored negotiation."""
    with ResultsStore(home / ".local/share/dealroom/results.db") as store:
        return [(row.key, row.record, row.extra) for row in store.iter()]


async def offer_and_wait(client: Client, state: dict[str, Any]) -> dict[str, Any]:
    """Offer 80% of the list price, then wait until the negotiation ends."""
    price = Decimal(str(state["observation"]["scenario"]["list_price"])) * Decimal("0.8")
    update = await ok(client, "make_offer", price=float(round(price, 2)))
    while update["outcome"] is None:
        update = await ok(client, "wait_for_opponent", timeout_s=15)
    return update


async def test_an_llm_house_agent_answers_the_client_through_its_tools_for_a_whole_series(
    tmp_path: Path,
) -> None:
    secret = secret_with_gains()
    with serve(negotiator()) as fake, anyio.fail_after(40):
        log = tmp_path / "stdout.log"
        args = ["--role", "buyer", "--opponent", "llm:fake", "--base-url", fake.base_url]
        async with desktop_session(tmp_path, log, *args, "--secret", secret.hex()) as client:
            first = await offer_and_wait(client, await ok(client, "get_state"))
            second = await offer_and_wait(client, await ok(client, "new_negotiation"))
        called = {c["function"]["name"] for r in fake.requests for c in _calls(r)}
    assert [u["outcome"]["status"] for u in (first, second)] == ["deal", "deal"]
    assert {"make_offer", "wait_for_opponent"} <= called  # the accept ended it: never echoed
    assert_only_json_rpc(log)
    rows = stored(tmp_path)
    assert [row[0].rsplit("/", 1)[1] for row in rows] == ["1", "2"]
    for _, record, extra in rows:
        assert (record.buyer, record.seller) == ("mcp", "llm:fake")
        assert record.outcome.end_reason == "accepted"
        moves = [(e.type, e.by) for e in record.events]
        # The model opens (1 s of thinking, 1 s to offer), then accepts the client's offer.
        assert moves[:3] == [
            ("offer_made", "seller"),
            ("offer_made", "buyer"),
            ("offer_accepted", "seller"),
        ]
        assert "errors" not in extra
        assert extra["players"]["seller"]["model_calls"] >= 1  # the model's usage is stored


async def test_a_failing_llm_house_agent_walks_away_and_the_error_is_stored(
    tmp_path: Path,
) -> None:
    with serve(scripted([], then=Status(500))) as fake, anyio.fail_after(30):
        log = tmp_path / "stdout.log"
        args = ["--role", "buyer", "--opponent", "llm:fake", "--base-url", fake.base_url, *FAST]
        async with desktop_session(tmp_path, log, *args) as client:
            await ok(client, "get_state")
            update = await ok(client, "wait_for_opponent", timeout_s=15)
            while update["outcome"] is None:
                update = await ok(client, "wait_for_opponent", timeout_s=15)
    assert update["outcome"]["end_reason"] == "walk_away"
    assert_only_json_rpc(log)
    ((_, record, extra),) = stored(tmp_path)
    assert (record.outcome.end_reason, record.outcome.ended_by) == ("walk_away", "seller")
    assert "HTTP 500" in extra["errors"]["seller"]


def _calls(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for m in request.get("messages", []) for c in m.get("tool_calls") or []]

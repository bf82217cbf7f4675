"""An HTTP room's house seat played by an LLM (``house_seller: "llm:MODEL"``): the server plays
it in process with its LLM flags, against a person on the web seat page or an MCP client. The
server is a real ``dealroom serve --transport http`` process; the model is the loopback fake."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp_support import ADMIN, secret_with_gains, tls
from test_faults import serve_process

from dealroom.store.results import ResultsStore
from fake_openai import negotiator, serve

pytestmark = pytest.mark.anyio


async def create(http: httpx2.AsyncClient, url: str, **request: Any) -> httpx2.Response:
    headers = {"Authorization": f"Bearer {ADMIN}"}
    return await http.post(f"{url}/admin/rooms", json=request, headers=headers)


async def call(
    http: httpx2.AsyncClient, url: str, token: str, tool: str, **arguments: Any
) -> dict[str, Any]:
    body = {"tool": tool, "arguments": arguments}
    headers = {"Authorization": f"Bearer {token}"}
    response = await http.post(f"{url}/web/api/seat/call", json=body, headers=headers)
    assert response.status_code == 200, response.text
    reply = dict(response.json())
    assert "error" not in reply, reply
    return reply


async def test_a_person_on_the_web_page_plays_an_llm_house_seat(tmp_path: Path) -> None:
    results = tmp_path / "results.db"
    secret = secret_with_gains()
    with serve(negotiator()) as fake, anyio.fail_after(60):
        flags = ("--base-url", fake.base_url, "--model-timeout", "5")
        async with (
            serve_process(results, *flags) as (url, _),
            httpx2.AsyncClient(verify=tls(), timeout=30) as http,
        ):
            bad = await create(http, url, house_seller="no-such-agent")
            assert bad.status_code == 400, bad.text
            created = await create(
                http, url, house_seller="llm:fake", secret=secret.hex(), participant="p01"
            )
            assert created.status_code == 201, created.text
            token = created.json()["tokens"]["buyer"]
            assert set(created.json()["tokens"]) == {"buyer"}
            state = (await call(http, url, token, "get_state"))["result"]
            price = Decimal(str(state["observation"]["scenario"]["list_price"])) * Decimal("0.8")
            update = await call(http, url, token, "make_offer", price=float(round(price, 2)))
            while update["result"]["outcome"] is None:
                update = await call(http, url, token, "wait_for_opponent", timeout_s=10)
            assert update["result"]["outcome"]["status"] == "deal"
            with anyio.fail_after(10):
                # Stored by the call that ended it (the model's accept), off the event loop, then
                # completed with the model's last reply once the model's seat has it.
                while True:
                    if completed(results):
                        break
                    await anyio.sleep(0.05)
        assert fake.requests  # the model was asked, through the server's LLM flags
    with ResultsStore(results, create=False) as store:
        (row,) = store.iter("p01")
    # A participant id names the run; the seat is `person` only in a study or a consent room.
    assert (row.record.buyer, row.record.seller) == ("mcp", "llm:fake")
    assert any(e.by == "seller" for e in row.record.events)
    assert row.extra["players"]["buyer"]["conversation"]["messages"][1]["tool_calls"]
    llm = row.extra["players"]["seller"]  # the model's usage and conversation, as in a match
    assert llm["name"] == "llm:fake" and llm["model_calls"] >= 1
    assert llm["model_calls"] + llm["failed_attempts"] <= len(fake.requests)
    assert [m["role"] for m in llm["conversation"]["messages"][:2]] == ["user", "assistant"]
    assert row.record.outcome.ended_by == "seller"  # the model's own call ended it
    assert llm["tool_calls"]["accept"] == 1
    *_, accepting, reply = llm["conversation"]["messages"]
    assert accepting["tool_calls"][-1]["function"]["name"] == "accept"
    assert reply["role"] == "tool" and reply["tool_call_id"] == accepting["tool_calls"][-1]["id"]


def completed(results: Path) -> bool:
    """True once the room stored the negotiation with the model's whole conversation."""
    with ResultsStore(results, create=False) as store:
        rows = list(store.iter("p01"))
    if not rows:
        return False
    messages = rows[0].extra["players"]["seller"]["conversation"]["messages"]
    return messages[-1]["role"] == "tool"

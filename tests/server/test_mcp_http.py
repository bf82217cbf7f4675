"""Streamable HTTP on loopback: rooms, seat tokens, the admin API, the seat proxy."""

from __future__ import annotations

import json
import os
import re
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp_support import (
    ADMIN,
    house_resolver,
    http_server,
    ok,
    refused,
    secret_with_gains,
    share_schema_validators,
    text_of,
    tls,
)

from dealroom.cli import main as cli_main
from dealroom.protocol import DEFAULT_RULES, Role, RoomRequest, WalkAway, model_seat
from dealroom.server.mcp_app import MODEL_TOOLS_URI, build_app
from dealroom.server.mcp_http import WRONG_SEAT_TOKEN
from dealroom.server.mcp_proxy import UpstreamSeat
from dealroom.server.negotiation import RoomLimits
from dealroom.server.rooms import RoomRegistry

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _shared_validators(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)


RPC_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


async def haggle(client: Client, role: Role) -> dict[str, Any]:
    """A simple remote player: opens far out, concedes 5% per round, accepts a crossing offer."""
    state = await ok(client, "get_state")
    assert state["observation"]["role"] == role
    value = Decimal(str(state["observation"]["private_value"]))
    price = value * Decimal("0.6" if role == "buyer" else "1.4")
    step = Decimal("1.05" if role == "buyer" else "0.95")
    while True:
        result = await ok(client, "make_offer", price=float(round(price, 2)))
        if result["outcome"] is not None:
            return result["outcome"]
        update = await ok(client, "wait_for_opponent", timeout_s=20)
        while update["woke"] == "pending":
            update = await ok(client, "wait_for_opponent", timeout_s=20)
        if update["outcome"] is not None:
            return update["outcome"]
        theirs = [o for o in update["live_offers"] if o["by"] != role]
        their = Decimal(str(theirs[0]["price"])) if theirs else None
        if their is not None and (their <= price if role == "buyer" else their >= price):
            accepted = await client.call_tool("accept", {"offer_id": theirs[0]["offer_id"]})
            if not accepted.is_error:
                return accepted.structured_content["outcome"]  # type: ignore[index]
        price = min(price * step, value) if role == "buyer" else max(price * step, value)


async def test_two_clients_with_the_two_seat_tokens_play_each_other_to_an_outcome(
    tmp_path: Path,
) -> None:
    secret = secret_with_gains()
    async with http_server(tmp_path) as server:
        room = await server.create_room(secret=secret.hex())
        assert set(room["tokens"]) == {"buyer", "seller"}
        outcomes: dict[str, Any] = {}

        async def play(role: Role) -> None:
            async with server.seat(room["tokens"][role]) as client:
                outcomes[role] = await haggle(client, role)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(play, "buyer")
                group.start_soon(play, "seller")
        stored = server.registry.writer.store.get(f"{room['room']}/1")  # type: ignore[union-attr]
    assert outcomes["buyer"]["status"] == outcomes["seller"]["status"] == "deal"
    assert outcomes["buyer"]["price"] == outcomes["seller"]["price"]
    assert stored is not None and stored.record.buyer == stored.record.seller == "mcp"
    assert stored.extra["clock"] == "virtual"


async def test_a_missing_or_wrong_seat_token_gets_401(tmp_path: Path) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        await server.create_room()
        for headers, challenge in [
            ({}, 'Bearer realm="dealroom"'),  # no credentials: no error code (RFC 6750, 3.1)
            ({"Authorization": "Basic dXNlcjpwYXNz"}, 'Bearer realm="dealroom"'),
            ({"Authorization": "Bearer nope"}, 'Bearer error="invalid_token"'),
            ({"Authorization": f"Bearer {ADMIN}"}, 'Bearer error="invalid_token"'),
        ]:
            response = await http.post(server.mcp, json=INITIALIZE, headers=RPC_HEADERS | headers)
            assert response.status_code == 401, headers
            assert response.headers["www-authenticate"].startswith(challenge), headers
            assert ("invalid_token" in response.text) is ("error=" in challenge)
            if "error=" in challenge:  # a token was sent: say what is wrong with it
                assert response.json()["error_description"] == WRONG_SEAT_TOKEN
                assert WRONG_SEAT_TOKEN in response.headers["www-authenticate"]


async def test_a_seat_can_never_act_for_the_other(tmp_path: Path) -> None:
    async with http_server(tmp_path, limits=RoomLimits(idle_s=0.2)) as server:
        room = await server.create_room()
        tokens = room["tokens"]
        async with server.seat(tokens["buyer"]) as buyer:
            state = await ok(buyer, "get_state")
            made = await ok(buyer, "make_offer", price=500)
            own = await refused(buyer, "accept", offer_id="o1")
        assert state["observation"]["role"] == "buyer"
        assert [e["by"] for e in made["events"]] == ["buyer"]
        assert own.startswith("own_offer: ")

        # A session opened with one seat's token cannot be used with the other's.
        async with httpx2.AsyncClient(verify=tls()) as http:
            auth = {"Authorization": f"Bearer {tokens['seller']}"}
            opened = await http.post(server.mcp, json=INITIALIZE, headers=RPC_HEADERS | auth)
            session = opened.headers["mcp-session-id"]
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
            hijack = RPC_HEADERS | {
                "Authorization": f"Bearer {tokens['buyer']}",
                "Mcp-Session-Id": session,
                "Mcp-Protocol-Version": "2025-11-25",
            }
            response = await http.post(server.mcp, json=call, headers=hijack)
        assert response.status_code == 404


async def test_fifty_rooms_play_at_once_on_one_server(tmp_path: Path) -> None:
    async with http_server(tmp_path) as server:
        rooms = [await server.create_room(index=i, house_seller="accept-any") for i in range(50)]
        outcomes: list[str] = []

        async def play(room: dict[str, Any]) -> None:
            async with server.seat(room["tokens"]["buyer"]) as client:
                state = await ok(client, "get_state")
                price = state["observation"]["scenario"]["list_price"] * 0.8
                await ok(client, "make_offer", price=round(price, 2))
                update = await ok(client, "wait_for_opponent", timeout_s=30)
                outcomes.append(update["outcome"]["status"])

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                for room in rooms:
                    group.start_soon(play, room)
        keys = server.registry.writer.store.keys()  # type: ignore[union-attr]
    assert outcomes == ["deal"] * 50
    assert keys == {f"{room['room']}/1" for room in rooms}


async def test_the_admin_api_refuses_requests_without_the_admin_token(tmp_path: Path) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        url = f"{server.url}/admin/rooms"
        assert (await http.post(url, json={})).status_code == 401
        wrong = {"Authorization": "Bearer wrong"}
        assert (await http.post(url, json={}, headers=wrong)).status_code == 401
        created = await server.create_room()
        seat = {"Authorization": f"Bearer {created['tokens']['buyer']}"}
        assert (await http.post(url, json={}, headers=seat)).status_code == 401
        assert (await http.get(f"{url}/{created['room']}", headers=seat)).status_code == 401
        admin = {"Authorization": f"Bearer {ADMIN}"}
        bad = await http.post(url, json={"house_buyer": "no-such-agent"}, headers=admin)
        assert bad.status_code == 400 and "no-such-agent" in bad.json()["error"]
        worse = await http.post(url, json={"tier": "ultra"}, headers=admin)
        assert worse.status_code == 400 and worse.json()["error"].startswith("tier")
        shown = await http.get(f"{url}/{created['room']}", headers=admin)
        assert shown.status_code == 200 and shown.json()["negotiations"][0]["open"] is True
        assert (await http.get(f"{server.url}/healthz")).json() == {"ok": True}
    async with http_server(tmp_path / "off", admin_token=None) as server:
        async with httpx2.AsyncClient(verify=tls()) as http:
            response = await http.post(f"{server.url}/admin/rooms", json={}, headers=admin)
        assert response.status_code == 403


async def test_dns_rebinding_protection_rejects_a_foreign_host_header(tmp_path: Path) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        room = await server.create_room()
        headers = RPC_HEADERS | {
            "Authorization": f"Bearer {room['tokens']['buyer']}",
            "Host": "evil.example",
        }
        response = await http.post(server.mcp, json=INITIALIZE, headers=headers)
    assert response.status_code == 421


async def test_room_create_prints_the_room_and_one_token_per_open_seat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", ADMIN)
    async with http_server(tmp_path) as server:
        argv = ["room", "create", "--server", server.url, "--house-seller", "boulware", "--json"]
        code = await anyio.to_thread.run_sync(cli_main, argv)
        created = json.loads(capsys.readouterr().out)
        assert code == 0 and set(created) == {"room", "tokens", "spectator", "links"}
        assert list(created["tokens"]) == ["buyer"]
        assert set(created["links"]) == {"buyer", "spectator"}
        async with server.seat(created["tokens"]["buyer"]) as client:
            state = await ok(client, "get_state")
        assert state["observation"]["role"] == "buyer"
    monkeypatch.delenv("DEALROOM_ADMIN_TOKEN")
    assert cli_main(["room", "create", "--server", "http://127.0.0.1:9"]) == 2


async def test_room_create_json_prints_what_the_readme_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    (shown,) = re.findall(r"room create --server \S+ --tier high --json\n\s*# (.*)\n", readme)
    monkeypatch.setenv("DEALROOM_ADMIN_TOKEN", ADMIN)
    async with http_server(tmp_path) as server:
        argv = ["room", "create", "--server", server.url, "--tier", "high", "--json"]
        assert await anyio.to_thread.run_sync(cli_main, argv) == 0
    printed = capsys.readouterr().out
    created = json.loads(printed)
    for token in [*created["tokens"].values(), created["spectator"]]:
        printed = printed.replace(token, "...")
    printed = printed.replace(created["room"], json.loads(shown)["room"])
    assert printed == shown.replace("http://127.0.0.1:8765", server.url) + "\n"


async def test_the_seat_proxy_relays_a_stdio_host_to_its_room(tmp_path: Path) -> None:
    async with http_server(tmp_path) as server:
        room = await server.create_room(house_seller="accept-any")
        env = {k: os.environ[k] for k in ("HOME", "PATH", "USER") if k in os.environ}
        env["DEALROOM_SEAT_TOKEN"] = room["tokens"]["buyer"]
        dealroom = Path(sys.executable).parent / "dealroom"
        params = StdioServerParameters(
            command=str(dealroom), args=["seat", "--server", server.url], env=env
        )
        with anyio.fail_after(30):
            async with Client(params, mode="legacy") as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                state = await ok(client, "get_state")
                refusal = await refused(client, "accept", offer_id="o7")
                await ok(client, "make_offer", price=100)
                update = await ok(client, "wait_for_opponent", timeout_s=10)
                briefing = await client.get_prompt("briefing")
                model_tools = await client.read_resource(MODEL_TOOLS_URI)
    assert "new_negotiation" in tools and state["observation"]["role"] == "buyer"
    assert refusal.startswith("offer_not_found: ")
    assert update["outcome"]["status"] == "deal"
    assert "You are the buyer" in briefing.messages[0].content.text  # type: ignore[union-attr]
    relayed = model_tools.contents[0].text  # type: ignore[union-attr]
    assert json.loads(relayed) == model_seat.tools(DEFAULT_RULES)  # the room server's, relayed


async def test_the_seat_proxy_reports_an_unreachable_room_server_as_a_tool_error() -> None:
    class Down:
        async def call_tool(self, name: str, arguments: dict[str, Any]) -> None:
            raise httpx2.ConnectError("connection refused")

    seat = UpstreamSeat(Down(), "http://127.0.0.1:9/mcp")  # type: ignore[arg-type]
    async with Client(build_app(lambda: seat)) as client:
        result = await client.call_tool("get_state", {})
    assert result.is_error
    assert "upstream_unavailable: " in text_of(result)


async def test_finished_rooms_are_forgotten_after_a_while_and_their_tokens_stop_working(
    tmp_path: Path,
) -> None:
    now = [0.0]
    registry = RoomRegistry(
        writer=None, resolve_house=house_resolver, retain_s=60, timer=lambda: now[0]
    )
    created = registry.create(RoomRequest(house_seller="hardliner"))
    token = created.tokens["buyer"]
    assert registry.seat_for_token(token) == (created.room, "buyer")
    assert registry.seat_for_token(token + "x") is None
    assert registry.seat_for_token("") is None
    await registry.seat(created.room, "buyer").act(WalkAway())
    await registry.tick()
    now[0] = 61.0
    await registry.tick()
    assert created.room not in registry.rooms
    assert registry.seat_for_token(token) is None

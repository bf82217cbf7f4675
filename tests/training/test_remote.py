"""The remote adapter speaks MCP streamable HTTP to bearer-token servers, with stdlib only.

A stub server (the MCP SDK's real transport and auth, a few tools) pins the wire details; the
real dealroom room server checks the adapter end to end. Both run under uvicorn on loopback.
"""

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import AnyHttpUrl, BaseModel

from dealroom.protocol.tools import seat_tools
from dealroom.training.remote import HttpSeatClient, RemoteError

SRC = Path(__file__).resolve().parents[2] / "src"


class Verifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        if token.startswith("seat-"):
            return AccessToken(token=token, client_id="room1", subject=token[5:], scopes=["seat"])
        return None


class Offered(BaseModel):
    seat: str
    price: float
    message: str | None


def stub_server() -> MCPServer:
    app = MCPServer(
        "stub",
        token_verifier=Verifier(),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl("http://127.0.0.1"),
            resource_server_url=AnyHttpUrl("http://127.0.0.1/mcp"),
            required_scopes=["seat"],
            validate_token_resource=False,
        ),
    )

    @app.tool(description="Make a binding offer.")
    async def make_offer(price: float, message: str | None = None) -> Offered:
        if price <= 0:
            raise ToolError("price_out_of_range: The price must be above 0.")
        token = get_access_token()
        assert token is not None
        return Offered(seat=token.subject or "", price=price, message=message)

    @app.tool(description="Wait for the other side.")
    async def wait_for_opponent(timeout_s: float = 5.0) -> str:
        return f"waited {timeout_s:g} s"

    return app


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(
        stub_server().streamable_http_app(), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "stub server did not start"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(timeout=10)


def test_a_seat_calls_tools_and_reads_structured_results(url: str) -> None:
    with HttpSeatClient(url, token="seat-buyer") as seat:
        assert {tool["name"] for tool in seat.list_tools()} == {"make_offer", "wait_for_opponent"}
        result = seat.make_offer(12.5, "Cash today.")
        assert not result.is_error and result.error_code is None
        assert result.structured == {"seat": "buyer", "price": 12.5, "message": "Cash today."}
        assert seat.wait_for_opponent(timeout_s=2).text == "waited 2 s"


def test_a_refused_call_is_a_result_with_its_code(url: str) -> None:
    with HttpSeatClient(url, token="seat-seller") as seat:
        result = seat.make_offer(-1)
        assert result.is_error and result.error_code == "price_out_of_range"


def test_a_bad_token_is_a_remote_error_with_status_401(url: str) -> None:
    with pytest.raises(RemoteError, match="check the seat token") as info:
        HttpSeatClient(url, token="nobody").connect()
    assert info.value.status == 401


def test_an_unreachable_server_is_a_remote_error() -> None:
    with pytest.raises(RemoteError, match="cannot reach"):
        HttpSeatClient("http://127.0.0.1:9/mcp", token="seat-buyer", timeout=2).connect()


def test_the_adapter_runs_without_any_third_party_package(url: str) -> None:
    # -S: no site-packages at all, as in a venv that holds verifiers instead of dealroom's deps.
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(SRC)!r})\n"
        "from dealroom.training.remote import HttpSeatClient\n"
        f"with HttpSeatClient({url!r}, token='seat-buyer') as seat:\n"
        "    result = seat.make_offer(7.0)\n"
        "stdlib = set(sys.stdlib_module_names) | {'__main__'}\n"
        "third = sorted({m.split('.')[0] for m in sys.modules} - stdlib)\n"
        "print(json.dumps({'structured': result.structured, 'third': third}))\n"
    )
    run = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    out = json.loads(run.stdout)
    assert out["structured"]["price"] == 7.0
    assert out["third"] == ["dealroom"]


@pytest.fixture(scope="module")
def dealroom_url() -> Iterator[str]:
    """A real dealroom HTTP room server (MCP at /mcp, admin API), on a loopback port."""
    from dealroom.agents import resolve
    from dealroom.server.mcp_http import build_http_app
    from dealroom.server.rooms import RoomRegistry

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    registry = RoomRegistry(writer=None, resolve_house=resolve)
    app = build_http_app(registry, admin_token="admin-secret", host="127.0.0.1", port=port)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "dealroom server did not start"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def buyer_token(base: str) -> str:
    request = urllib.request.Request(
        f"{base}/admin/rooms",
        data=json.dumps({"house_seller": "boulware"}).encode(),
        headers={"Authorization": "Bearer admin-secret", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)["tokens"]["buyer"]


def test_a_seat_on_a_real_dealroom_server_negotiates_through_the_adapter(
    dealroom_url: str,
) -> None:
    with HttpSeatClient(f"{dealroom_url}/mcp", token=buyer_token(dealroom_url)) as seat:
        names = {tool["name"] for tool in seat.list_tools()}
        assert names == {tool.name for tool in seat_tools(series=True)}  # a house seller: a series
        offered = seat.make_offer(1000.0, "Cash today.")
        assert not offered.is_error and offered.structured is not None
        assert offered.structured["ok"] is True
        assert any(e["by"] == "buyer" for e in offered.structured["events"])
        refused = seat.accept("o999")
        assert refused.is_error and refused.error_code == "offer_not_found"
        state = seat.get_state()
        assert state.structured is not None
        assert state.structured["observation"]["role"] == "buyer"
        assert "seller_cost" not in state.text


def test_a_seat_reads_what_a_model_reads_through_the_adapter(dealroom_url: str) -> None:
    """The briefing prompt and the model_tools resource: the opening and the tools of the one
    model seat, as dealroom's own MCP client reads them from the same seat."""
    from dealroom.protocol import DEFAULT_RULES, model_seat
    from dealroom.server.mcp_app import MODEL_TOOLS_URI
    from dealroom.training import remote

    with HttpSeatClient(f"{dealroom_url}/mcp", token=buyer_token(dealroom_url)) as seat:
        briefing = seat.briefing()
        tools = seat.model_tools()
        state = seat.get_state()
    assert remote.MODEL_TOOLS_URI == MODEL_TOOLS_URI
    assert tools == model_seat.tools(DEFAULT_RULES)
    assert briefing.startswith("You are the buyer")
    assert state.structured is not None
    value = state.structured["observation"]["private_value"]
    assert f"{value:,.2f}" in briefing  # the seat's own value, and only its own

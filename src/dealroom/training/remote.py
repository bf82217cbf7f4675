"""Reach a seat on a dealroom HTTP server from any venv: the standard library only.

verifiers and OpenEnv pin ``mcp<2`` / ``mcp==2.0`` and ``openai<3``, which cannot share a venv
with dealroom (``mcp>=2.3``, ``openai>=3``). This module speaks MCP's streamable-HTTP transport
(JSON-RPC 2.0 over POST, with the ``initialize`` handshake of protocol revisions up to
2025-11-25, which every dealroom server answers) with nothing but ``urllib`` and ``json``, so it
runs beside any of them. Copy this one file into the other project, or ``pip install --no-deps
dealroom`` there and import ``dealroom.training.remote``: neither pulls in a dependency.

Usage::

    with HttpSeatClient("http://127.0.0.1:8000/mcp", token="<seat token>") as seat:
        print(seat.get_state().text)
        result = seat.make_offer(1200.0, "Cash today.")
        if result.is_error:
            print(result.error_code, result.text)   # e.g. price_out_of_range
        update = seat.wait_for_opponent()
        print(update.structured)               # the server's structured result, if any
        seat.briefing(), seat.model_tools()    # what a model reads: its opening and its tools

Errors:

    RemoteError            the server could not be reached or answered outside the protocol
      .status: int | None  the HTTP status, when there was one (401: bad or missing token)
    McpError(RemoteError)  a JSON-RPC error response (unknown tool, bad arguments, ...)
      .code: int

A refused *action* is not an exception: it comes back as a ToolResult with ``is_error`` true
and the referee's ``code: message`` text.
"""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict, cast

PROTOCOL_VERSION = "2025-11-25"
"""Requested MCP revision (the newest with the initialize handshake); the server may pick an
older one, which is then sent on every request."""

_ACCEPT = "application/json, text/event-stream"

MODEL_TOOLS_URI = "dealroom://seat/model_tools"
"""The resource of a seat's tools as a model reads them (``dealroom.server.mcp_app``)."""

_Json = dict[str, Any]
"""A JSON object as received: its values are whatever the server sent (checked where read)."""


class _Request(TypedDict):
    """A JSON-RPC request, or a notification (no ``id``): what this client sends."""

    jsonrpc: Literal["2.0"]
    method: str
    id: NotRequired[int]
    params: NotRequired[_Json]


def _object(value: object) -> _Json | None:
    """``value`` as a JSON object, None if it is not one."""
    return cast(_Json, value) if isinstance(value, dict) else None


def _array(value: object) -> list[object]:
    """``value`` as a JSON array, empty if it is not one."""
    return cast(list[object], value) if isinstance(value, list) else []


class RemoteError(Exception):
    """The server could not be reached, refused the request, or answered outside the protocol."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class McpError(RemoteError):
    """A JSON-RPC error response."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"JSON-RPC error {code}: {message}")
        self.code = code
        self.data = data


@dataclass(frozen=True)
class ToolResult:
    """One tool call's result: its text, its structured content and whether it was refused."""

    text: str
    structured: dict[str, Any] | None = None
    is_error: bool = False
    raw: dict[str, Any] = field(default_factory=dict[str, Any], repr=False)

    @property
    def error_code(self) -> str | None:
        """The stable code of a refused call (``offer_not_live``, ...), else None."""
        if not self.is_error:
            return None
        text = self.text
        if text.startswith("Error executing tool ") and ": " in text:
            text = text.split(": ", 1)[1]
        code, sep, _ = text.partition(": ")
        return code if sep and code.replace("_", "").isalnum() else "error"


def _sse_messages(body: str) -> list[_Json]:
    """JSON-RPC messages from a text/event-stream body (comments and pings skipped)."""
    messages: list[_Json] = []
    data: list[str] = []
    for line in [*body.splitlines(), ""]:
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif not line and data:
            payload = "\n".join(data)
            data = []
            try:
                message = _object(json.loads(payload))
            except json.JSONDecodeError:
                continue
            if message is not None:
                messages.append(message)
    return messages


class McpHttpClient:
    """A minimal MCP streamable-HTTP client: initialize, list_tools, call_tool, close."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 120.0,
        client_name: str = "dealroom-remote",
    ) -> None:
        self.url = url
        self.timeout = timeout
        self._token = token
        self._client_name = client_name
        self._session: str | None = None
        self._version: str | None = None
        self._next_id = 0
        self.server_info: dict[str, Any] = {}

    # -- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> McpHttpClient:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connect(self) -> None:
        """Run the initialize handshake (done on first use if not called)."""
        if self._version is not None:
            return
        result = self._rpc(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": self._client_name, "version": "1"},
            },
        )
        self._version = str(result.get("protocolVersion") or PROTOCOL_VERSION)
        self.server_info = dict(_object(result.get("serverInfo")) or {})
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> None:
        """End the session on the server (best effort)."""
        if self._session is None:
            return
        request = urllib.request.Request(self.url, method="DELETE", headers=self._headers())
        # Best effort: the session expires on the server anyway.
        with contextlib.suppress(urllib.error.URLError, OSError):
            urllib.request.urlopen(request, timeout=self.timeout).close()
        self._session = None
        self._version = None

    # -- requests -------------------------------------------------------------------------

    def list_tools(self) -> list[dict[str, Any]]:
        """Every tool the server offers this seat (name, description, inputSchema, ...)."""
        self.connect()
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            result = self._rpc("tools/list", {"cursor": cursor} if cursor else {})
            tools += [
                tool for item in _array(result.get("tools")) if (tool := _object(item)) is not None
            ]
            cursor = result.get("nextCursor")
            if not cursor:
                return tools

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Call one tool; a refused call is a ToolResult with ``is_error``, not an exception."""
        self.connect()
        result = self._rpc("tools/call", {"name": name, "arguments": arguments or {}})
        parts = [
            part for item in _array(result.get("content")) if (part := _object(item)) is not None
        ]
        texts = [str(part.get("text", "")) for part in parts if part.get("type") == "text"]
        return ToolResult(
            text="\n".join(texts),
            structured=_object(result.get("structuredContent")),
            is_error=bool(result.get("isError", False)),
            raw=result,
        )

    def get_prompt(self, name: str) -> str:
        """A prompt's text: its messages' text contents, one per line."""
        self.connect()
        result = self._rpc("prompts/get", {"name": name})
        messages = [
            m for item in _array(result.get("messages")) if (m := _object(item)) is not None
        ]
        contents = [_object(message.get("content")) or {} for message in messages]
        return "\n".join(str(c.get("text", "")) for c in contents if c.get("type") == "text")

    def read_resource(self, uri: str) -> str:
        """A resource's text contents, joined."""
        self.connect()
        result = self._rpc("resources/read", {"uri": uri})
        contents = [
            c for item in _array(result.get("contents")) if (c := _object(item)) is not None
        ]
        return "".join(str(content.get("text", "")) for content in contents)

    # -- wire -----------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": _ACCEPT}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        if self._session:
            headers["Mcp-Session-Id"] = self._session
        if self._version:
            headers["MCP-Protocol-Version"] = self._version
        return headers

    def _rpc(self, method: str, params: _Json) -> _Json:
        self._next_id += 1
        request_id = self._next_id
        replies = self._post(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        )
        for reply in replies:
            if reply.get("id") != request_id:
                continue  # a notification or a server request on the stream
            if "error" in reply:
                error = _object(reply["error"]) or {}
                raise McpError(
                    int(error.get("code", 0)), str(error.get("message", "")), error.get("data")
                )
            return _object(reply.get("result")) or {}
        raise RemoteError(f"no response to {method} from {self.url}")

    def _post(self, message: _Request) -> list[_Json]:
        data = json.dumps(message).encode("utf-8")
        request = urllib.request.Request(
            self.url, data=data, method="POST", headers=self._headers()
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                session = response.headers.get("Mcp-Session-Id")
                if session:
                    self._session = session
                kind = response.headers.get("Content-Type", "")
                body = response.read().decode("utf-8")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:300]
            hint = " (check the seat token)" if exc.code in (401, 403) else ""
            raise RemoteError(
                f"HTTP {exc.code} from {self.url}{hint}: {detail}", exc.code
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            raise RemoteError(f"cannot reach {self.url}: {exc}") from None
        if not body.strip():
            return []  # 202 Accepted for notifications
        if kind.startswith("text/event-stream"):
            return _sse_messages(body)
        try:
            parsed: object = json.loads(body)
        except json.JSONDecodeError:
            raise RemoteError(f"not JSON from {self.url}: {body[:200]!r}") from None
        items = _array(parsed) or [parsed]  # a batch, or one message
        return [reply for item in items if (reply := _object(item)) is not None]


class HttpSeatClient(McpHttpClient):
    """One seat of a negotiation on a dealroom HTTP server, with the seat's tools as methods.

    The methods mirror ``dealroom.protocol.tools`` (names and arguments; a test checks them,
    since this module imports nothing of dealroom's). ``ToolResult.text`` is the model-facing
    text of ``dealroom.protocol.seat_text``.

    Every method returns a :class:`ToolResult`; ``call(name, **arguments)`` reaches any other
    tool the server offers.
    """

    def __enter__(self) -> HttpSeatClient:
        self.connect()
        return self

    def call(self, name: str, **arguments: Any) -> ToolResult:
        """Any tool by name, with None-valued arguments left out."""
        return self.call_tool(name, {k: v for k, v in arguments.items() if v is not None})

    def make_offer(self, price: float, message: str | None = None) -> ToolResult:
        """Make a binding offer at ``price``."""
        return self.call("make_offer", price=price, message=message)

    def accept(self, offer_id: str) -> ToolResult:
        """Accept the other side's live offer."""
        return self.call("accept", offer_id=offer_id)

    def reject(self, offer_id: str, message: str | None = None) -> ToolResult:
        """Reject the other side's live offer."""
        return self.call("reject", offer_id=offer_id, message=message)

    def send_message(self, text: str) -> ToolResult:
        """Send cheap talk."""
        return self.call("send_message", text=text)

    def walk_away(self, message: str | None = None) -> ToolResult:
        """Leave the negotiation without a deal."""
        return self.call("walk_away", message=message)

    def wait_for_opponent(self, timeout_s: float | None = None) -> ToolResult:
        """Wait for the other side's next move, at most ``timeout_s`` on the clock."""
        return self.call("wait_for_opponent", timeout_s=timeout_s)

    def get_state(self) -> ToolResult:
        """The seat's current view."""
        return self.call("get_state")

    def new_negotiation(self) -> ToolResult:
        """Start the next negotiation of a series."""
        return self.call("new_negotiation")

    # -- what a model reads ---------------------------------------------------------------

    def briefing(self) -> str:
        """The seat's briefing (the ``briefing`` prompt): a model's only opening message."""
        return self.get_prompt("briefing")

    def model_tools(self) -> list[dict[str, Any]]:
        """The seat's tools as a model is offered them (the ``model_tools`` resource: OpenAI
        function schemas in name order, what the ``llm:`` seat offers), not MCP's listing."""
        tools = _array(json.loads(self.read_resource(MODEL_TOOLS_URI)))
        return [tool for item in tools if (tool := _object(item)) is not None]

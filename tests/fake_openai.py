"""A loopback OpenAI-compatible chat-completions endpoint with scripted replies, for tests.

Runs a stdlib HTTP server on 127.0.0.1 (a free port) in a thread. Each POST to
``/v1/chat/completions`` is answered by a *brain*: a function from the request body to a reply
(tool calls, text, an HTTP error status, a hang, or a malformed body). Every request is kept in
``requests``; ``GET /v1/models`` (the cheap check a roster makes of each endpoint) answers a
model list and is kept in ``probes``. Nothing here touches the network beyond loopback.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class ToolCalls:
    """Reply with these tool calls: (name, arguments) with arguments a dict or raw JSON text;
    ``text`` beside them, and ``fields`` added to the message (e.g. a ``reasoning`` text)."""

    calls: tuple[tuple[str, dict[str, Any] | str], ...]
    output_tokens: int = 7
    text: str | None = None
    fields: dict[str, Any] | None = None


@dataclass(frozen=True)
class Text:
    """Reply with a plain assistant message (``fields`` added to it)."""

    text: str
    output_tokens: int = 3
    fields: dict[str, Any] | None = None


@dataclass(frozen=True)
class Raw:
    """Reply 200 with this JSON body as it is (a completion of any shape)."""

    body: Any


@dataclass(frozen=True)
class Status:
    """Reply with an HTTP error."""

    code: int = 500


@dataclass(frozen=True)
class Hang:
    """Do not answer for this long (the client should time out first)."""

    seconds: float = 30.0


@dataclass(frozen=True)
class Garbage:
    """Reply 200 with a body that is not JSON."""

    body: bytes = b"{this is not json"


Reply = ToolCalls | Text | Status | Hang | Garbage | Raw
Brain = Callable[[dict[str, Any]], Reply]


@dataclass
class FakeOpenAI:
    """The running endpoint: ``base_url`` for clients, ``requests`` seen so far."""

    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    probes: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    in_flight: int = 0
    peak: int = 0
    """The most chat completions answered at once."""


def scripted(replies: list[Reply], then: Reply | None = None) -> Brain:
    """A brain that answers with ``replies`` in order, then ``then`` forever (default: text)."""
    queue = list(replies)
    lock = threading.Lock()

    def brain(request: dict[str, Any]) -> Reply:
        del request
        with lock:
            if queue:
                return queue.pop(0)
        return then or Text("I wait.")

    return brain


def _completion(request: dict[str, Any], reply: ToolCalls | Text, n: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if isinstance(reply, Text):
        finish = "stop"
    else:
        message["tool_calls"] = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for i, (name, args) in enumerate(reply.calls)
        ]
        finish = "tool_calls"
    message.update(reply.fields or {})
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": 11,
            "completion_tokens": reply.output_tokens,
            "total_tokens": 11 + reply.output_tokens,
        },
    }


class _Server(ThreadingHTTPServer):
    # The default listen backlog (5) drops connection attempts under a burst of concurrent
    # clients, which then wait a second for the SYN to be retried.
    request_queue_size = 1024


@contextmanager
def serve(brain: Brain, *, keep_alive: bool = False) -> Iterator[FakeOpenAI]:
    """Run the endpoint for the duration of the block (``keep_alive``: HTTP/1.1 connections
    stay open between requests, as a real endpoint's do)."""
    state = FakeOpenAI(base_url="")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        # Keep-alive on demand, as OpenAI's API, vLLM and llama.cpp keep connections (every
        # reply has a length); tests default to a connection per request, so that a client a
        # test leaves unclosed holds no socket open.
        protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"
        # TCP_NODELAY, as asyncio servers (uvicorn) set it: the headers and the body go out as
        # two writes, and Nagle's algorithm held the body until the client's delayed ACK of the
        # headers, about 40 ms later.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

        def _send(self, code: int, body: bytes) -> None:
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up first (a scripted hang)

        def do_GET(self) -> None:
            with lock:
                state.probes.append(self.path)
            if not self.path.endswith("/models"):
                self._send(404, b'{"error": {"message": "not found"}}')
                return
            self._send(200, b'{"object": "list", "data": [{"id": "fake", "object": "model"}]}')

        def do_POST(self) -> None:
            _arrival.at = time.perf_counter()
            length = int(self.headers.get("Content-Length", "0"))
            request = json.loads(self.rfile.read(length) or b"{}")
            with lock:
                state.requests.append(request)
                n = len(state.requests)
            if not self.path.endswith("/chat/completions"):
                self._send(404, b'{"error": {"message": "not found"}}')
                return
            with lock:
                state.in_flight += 1
                state.peak = max(state.peak, state.in_flight)
            try:
                reply = brain(request)
            finally:
                with lock:
                    state.in_flight -= 1
            match reply:
                case Status(code=code):
                    self._send(code, json.dumps({"error": {"message": "scripted"}}).encode())
                case Hang(seconds=seconds):
                    state.stop.wait(seconds)
                    self._send(500, b'{"error": {"message": "hung"}}')
                case Garbage(body=body):
                    self._send(200, body)
                case Raw(body=body):
                    self._send(200, json.dumps(body).encode())
                case ToolCalls() | Text():
                    self._send(200, json.dumps(_completion(request, reply, n)).encode())

    server = _Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


_arrival = threading.local()
"""When the request its thread serves arrived (before its body was read and parsed)."""


def with_latency(brain: Brain, seconds: float) -> Brain:
    """Every reply exactly ``seconds`` after its request arrived (the endpoint serves each in a
    thread; reading and parsing the request are inside the latency, as on a real server)."""

    def slow(request: dict[str, Any]) -> Reply:
        start = getattr(_arrival, "at", None) or time.perf_counter()
        reply = brain(request)
        threading.Event().wait(max(0.0, seconds - (time.perf_counter() - start)))
        return reply

    return slow


def flaky(brain: Brain, every: int, reply: Reply | None = None) -> Brain:
    """Every ``every``-th request fails (default: HTTP 500), the others go to ``brain``."""
    count = 0
    lock = threading.Lock()

    def answer(request: dict[str, Any]) -> Reply:
        nonlocal count
        with lock:
            count += 1
            fail = count % every == 0
        return (reply or Status(500)) if fail else brain(request)

    return answer


def tool_names_by_call_id(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Which tool each call id in a conversation called."""
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
    return names


def last_tool_result(request: dict[str, Any]) -> tuple[str, str] | None:
    """(tool name, output) of the conversation's last message, if it is a tool result."""
    messages = request.get("messages", [])
    if not messages or messages[-1].get("role") != "tool":
        return None
    last = messages[-1]
    content = last.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content)
    return tool_names_by_call_id(messages).get(last["tool_call_id"], "?"), str(content)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content)
    return content if isinstance(content, str) else ""


_OFFER = re.compile(r"(seller|buyer|you) (o\d+) at \$")


def _latest_state(messages: list[dict[str, Any]], role: str) -> dict[str, Any] | None:
    """The live offers of the newest seat update (the model-facing text's ``live offers:``
    line) in a conversation."""
    for message in reversed(messages):
        line = next((x for x in _text(message).splitlines() if x.startswith("live offers: ")), None)
        if line is None:
            continue
        offers = [
            {"by": role if by == "you" else by, "offer_id": offer_id}
            for by, offer_id in _OFFER.findall(line)
        ]
        return {"live_offers": offers}
    return None


def _list_price(messages: list[dict[str, Any]]) -> float:
    for message in messages:
        found = re.search(r"[Ll]ist price:? \$([0-9,.]+)", _text(message))
        if found:
            return float(found.group(1).replace(",", "").rstrip("."))
    return 100.0


def answered_tools(messages: list[dict[str, Any]]) -> list[str]:
    """The tools whose results the conversation holds, in order (named by their call ids)."""
    names: dict[str, str] = {}
    out: list[str] = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
        if message.get("role") == "tool":
            out.append(message.get("name") or names.get(message.get("tool_call_id", ""), ""))
    return out


def seat_role(request: dict[str, Any]) -> str:
    """The seat an LLM plays, read from its briefing (the first user message, or the
    instructions)."""
    for message in request.get("messages", []):
        if message.get("role") in ("system", "user") and "You are the seller" in _text(message):
            return "seller"
    return "buyer"


def negotiator(*, price: float | None = None, accept_from_wake: int = 2) -> Brain:
    """A brain that plays whichever seat its briefing names, sensibly, through the tools.

    On each wake (the briefing, or a wait_for_opponent result) it accepts the other side's live
    offer from wake ``accept_from_wake`` on, else offers ``price`` (default: the list price) and
    waits, in one response; after any other tool result it waits.
    """

    def brain(request: dict[str, Any]) -> Reply:
        messages = request.get("messages", [])
        names = answered_tools(messages)
        if not messages or (
            messages[-1].get("role") == "tool" and names[-1] != "wait_for_opponent"
        ):
            return ToolCalls((("wait_for_opponent", {}),))
        role = seat_role(request)
        wake = 1 + names.count("wait_for_opponent")
        state = _latest_state(messages, role) or {}
        theirs = [o for o in state.get("live_offers", []) if o.get("by") != role]
        if theirs and wake >= accept_from_wake:
            return ToolCalls((("accept", {"offer_id": theirs[0]["offer_id"]}),))
        offer = price if price is not None else _list_price(messages)
        return ToolCalls(
            (
                ("make_offer", {"price": offer, "message": "A fair price."}),
                ("wait_for_opponent", {}),
            )
        )

    return brain


_BUYER_BID = re.compile(r"buyer (o\d+) at \$([0-9,]+\.\d\d)")


def market_bids(text: str) -> dict[str, tuple[str, float]]:
    """Each buyer's live bid (offer id, price) on the ``live offers:`` line of a market
    seller's tool result."""
    line = next((x for x in text.splitlines() if x.startswith("live offers: ")), "")
    bids: dict[str, tuple[str, float]] = {}
    for part in line.removeprefix("live offers: ").rstrip(".").split("; "):
        buyer, _, offers = part.partition(": ")
        if found := _BUYER_BID.search(offers):
            bids[buyer] = (found.group(1), float(found.group(2).replace(",", "")))
    return bids


def market_seller(*, waits: int = 4, ask: float = 1.3) -> Brain:
    """A brain in a market's seller seat that probes every buyer and sells: it asks every
    buyer the briefing names ``ask`` times the list price, waits ``waits`` times, reads every
    thread with get_state and accepts the highest live bid; after the sale it replies in text."""

    def brain(request: dict[str, Any]) -> Reply:
        messages = request.get("messages", [])
        names = answered_tools(messages)
        if not names:
            briefing = _text(messages[0])
            buyers = re.search(r"buyers?: ([b\d, ]+)\.", briefing)
            assert buyers is not None, "the briefing names the buyers"
            price = round(ask * _list_price(messages), 2)
            return ToolCalls(
                tuple(
                    ("make_offer", {"buyer": b, "price": price})
                    for b in buyers.group(1).split(", ")
                )
            )
        if names[-1] == "accept":
            return Text("Sold.")
        if names.count("wait_for_opponent") < waits:
            return ToolCalls((("wait_for_opponent", {"timeout_s": 30}),))
        if names[-1] != "get_state":
            return ToolCalls((("get_state", {}),))
        bids = market_bids(_text(messages[-1]))
        if not bids:
            return ToolCalls((("wait_for_opponent", {"timeout_s": 30}),))
        buyer, (offer_id, _) = max(bids.items(), key=lambda item: item[1][1])
        return ToolCalls((("accept", {"buyer": buyer, "offer_id": offer_id}),))

    return brain


_SELLER_ASK = re.compile(r"seller (o\d+) at \$([0-9,]+\.\d\d)")


def market_buyer(*, start: float = 0.6, step: float = 1.1, wakes: int = 6) -> Brain:
    """A brain in a market's buyer seat: it bids ``start`` times the value its briefing names
    and waits; on each wake it accepts the seller's live offer if it is at most its value,
    else raises its bid by ``step`` (at most 95% of its value) and waits again; after
    ``wakes`` wakes, or once its thread is over, it replies in text."""

    def brain(request: dict[str, Any]) -> Reply:
        messages = request.get("messages", [])
        found = re.search(r"Your private value is \$([0-9,]+\.\d\d)", _text(messages[0]))
        assert found is not None, "the briefing names the buyer's value"
        value = float(found.group(1).replace(",", ""))
        names = answered_tools(messages)
        last = _text(messages[-1]) if names else ""
        if "outcome: " in last or names.count("wait_for_opponent") >= wakes:
            return Text("That is all from me.")
        asks = _SELLER_ASK.findall(next((x for x in last.splitlines() if "live offers" in x), ""))
        if asks and float(asks[0][1].replace(",", "")) <= value:
            return ToolCalls((("accept", {"offer_id": asks[0][0]}),))
        bid = round(min(0.95, start * step ** names.count("make_offer")) * value, 2)
        return ToolCalls((("make_offer", {"price": bid}), ("wait_for_opponent", {"timeout_s": 20})))

    return brain


def market_seats() -> Brain:
    """``market_seller`` in a market's seller seat, ``market_buyer`` in a buyer's (one model
    in several seats of one market)."""
    seller, buyer = market_seller(), market_buyer()

    def brain(request: dict[str, Any]) -> Reply:
        return (seller if seat_role(request) == "seller" else buyer)(request)

    return brain

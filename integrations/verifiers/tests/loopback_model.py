"""A loopback OpenAI-compatible chat-completions endpoint that plays a fixed policy.

The policy of dealroom's parity test (tests/test_model_seat_parity.py): offer 90% of the list
price with a message, wait, then answer in text. It reads only what the model reads (the
briefing's list price, its own earlier replies), so every surface that sends the same
conversation gets the same replies. Every request is kept (``requests``) as it arrived.

Run as a program (``python loopback_model.py PORT LOG``) it serves until killed and appends
each request to LOG, one JSON object a line.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast


def policy(messages: list[dict[str, Any]]) -> tuple[list[tuple[str, dict[str, Any]]], str]:
    """(tool calls, text) of the next reply, from the conversation as the model reads it."""
    calls = sum(1 for m in messages if m["role"] == "assistant")
    if calls == 0:
        text = str(messages[0]["content"])
        price = float(text.split("List price: $", 1)[1].split(" ", 1)[0].replace(",", ""))
        return [("make_offer", {"price": round(price * 0.9, 2), "message": "A fair price."})], ""
    if calls == 1:
        return [("wait_for_opponent", {"timeout_s": 30})], ""
    return [], "That is my offer."


def completion(request: dict[str, Any]) -> dict[str, Any]:
    """The chat completion the policy answers ``request`` with (call ids from the turn)."""
    messages: list[dict[str, Any]] = request["messages"]
    calls, text = policy(messages)
    turn = sum(1 for m in messages if m["role"] == "assistant")
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{turn}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for i, (name, arguments) in enumerate(calls)
        ]
    return {
        "id": f"chatcmpl-{turn}",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", "m"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


class LoopbackModel(ThreadingHTTPServer):
    """The endpoint: ``base_url`` ends in ``/v1``; ``requests`` holds every request body."""

    def __init__(self, port: int = 0, log: str | None = None) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.requests: list[dict[str, Any]] = []
        self.log = log
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    @property
    def model(self) -> LoopbackModel:
        return cast(LoopbackModel, self.server)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        with self.model.lock:
            self.model.requests.append(body)
            if self.model.log:
                with open(self.model.log, "a", encoding="utf-8") as out:
                    out.write(json.dumps(body) + "\n")
        self._send(200, completion(body))

    def do_GET(self) -> None:
        models = {"object": "list", "data": [{"id": "loopback", "object": "model"}]}
        self._send(200, models)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args  # quiet


@contextmanager
def serving(log: str | None = None) -> Iterator[LoopbackModel]:
    """The endpoint on a free loopback port, in a thread."""
    model = LoopbackModel(log=log)
    thread = threading.Thread(target=model.serve_forever, daemon=True)
    thread.start()
    try:
        yield model
    finally:
        model.shutdown()
        model.server_close()


if __name__ == "__main__":
    LoopbackModel(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None).serve_forever()

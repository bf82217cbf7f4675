"""A trained checkpoint behind a loopback OpenAI-compatible endpoint, for evaluation.

What is trained is what is served: the checkpoint's own chat template renders the conversation
(tools included) exactly as in training, and TRL's response parser reads its tool calls back,
so an ``llm:NAME`` seat in ``dealroom match`` or ``dealroom tournament --base-url URL`` plays the
model on the same surface it was trained on. One request is generated at a time (a small model
on a CPU or one GPU); ``temperature`` 0 is greedy decoding.

Only ``POST /v1/chat/completions`` (non-streaming) and ``GET /v1/models`` are served, on
127.0.0.1 by default. Needs the ``train`` extra.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import structlog

from dealroom.training.models import check_tool_template, lib, require_train_extra

log = structlog.get_logger(__name__)

MAX_BODY = 4 * 1024 * 1024
"""Largest request body accepted (bytes)."""


class ChatModel:
    """A transformers checkpoint answering chat-completions requests."""

    def __init__(self, path: str, name: str | None = None, max_new_tokens: int = 256) -> None:
        require_train_extra()
        transformers = lib("transformers")
        self.name = name or path.rstrip("/").rsplit("/", 1)[-1]
        self.max_new_tokens = max_new_tokens
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        check_tool_template(self.tokenizer)  # also installs TRL's response parser
        self.model = transformers.AutoModelForCausalLM.from_pretrained(path)
        self.model.eval()
        self._lock = threading.Lock()
        self._count = 0

    def complete(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """One chat completion (OpenAI's JSON shape) for a request body."""
        torch = lib("torch")
        messages = [_template_message(m) for m in body.get("messages") or []]
        if not messages:
            raise ValueError("messages must be a non-empty list")
        tools = body.get("tools") or None
        limit = int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
        raw_temperature = body.get("temperature")
        temperature = 1.0 if raw_temperature is None else float(raw_temperature)
        inputs = self.tokenizer.apply_chat_template(
            messages, tools=tools, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        sampling: dict[str, Any] = (
            {"do_sample": True, "temperature": temperature} if temperature > 0 else {}
        )
        with self._lock, torch.no_grad():
            self._count += 1
            n = self._count
            output = self.model.generate(
                **inputs,
                max_new_tokens=min(limit or self.max_new_tokens, self.max_new_tokens),
                pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
                **sampling,
            )
        prompt_tokens = int(inputs["input_ids"].shape[1])
        new = output[0][prompt_tokens:].tolist()
        prompt = inputs["input_ids"][0].tolist()
        return _completion(self.name, n, self._parse(new, prompt), prompt_tokens, len(new))

    def _parse(self, ids: list[int], prompt: list[int]) -> dict[str, Any]:
        try:
            parsed = self.tokenizer.parse_response(ids, prefix=prompt)
        except Exception:  # a malformed call reads as text, as it would from any API
            parsed = {"content": self.tokenizer.decode(ids, skip_special_tokens=True)}
        message: dict[str, Any] = {"role": "assistant", "content": parsed.get("content") or ""}
        calls = []
        for i, call in enumerate(parsed.get("tool_calls") or []):
            function = call.get("function", call)
            arguments = function.get("arguments", {})
            calls.append(
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {
                        "name": str(function.get("name", "")),
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments),
                    },
                }
            )
        if calls:
            message["tool_calls"] = calls
            message["content"] = message["content"] or None
        return message


def _template_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI request message as the chat template reads it (text content, object args)."""
    out = dict(message)
    content = out.get("content")
    if isinstance(content, list):
        out["content"] = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    elif content is None:
        out["content"] = ""
    calls = out.get("tool_calls")
    if calls:
        converted = []
        for call in calls:
            function = dict(call.get("function") or {})
            raw = function.get("arguments")
            if isinstance(raw, str):
                with contextlib.suppress(json.JSONDecodeError):  # else as the model wrote it
                    function["arguments"] = json.loads(raw) if raw.strip() else {}
            converted.append({**call, "function": function})
        out["tool_calls"] = converted
    return out


def _completion(
    model: str, n: int, message: dict[str, Any], prompt_tokens: int, completion_tokens: int
) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


@dataclass(frozen=True, slots=True)
class ServedEndpoint:
    """A running endpoint."""

    base_url: str
    server: ThreadingHTTPServer


def _handler(chat: ChatModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            log.debug("serve.request", line=format % args)

        def _send(self, code: int, payload: Mapping[str, Any]) -> None:
            body = json.dumps(payload).encode()
            try:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up

        def _error(self, code: int, message: str) -> None:
            self._send(code, {"error": {"message": message, "type": "invalid_request_error"}})

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": chat.name, "object": "model"}]})
            else:
                self._error(404, "not found")

        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._error(404, "not found")
                return
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                self._error(400, f"body must be 1 to {MAX_BODY} bytes")
                return
            try:
                body = json.loads(self.rfile.read(length))
                if not isinstance(body, dict):
                    raise ValueError("body must be a JSON object")
                if body.get("stream"):
                    raise ValueError("streaming is not supported")
                reply = chat.complete(body)
            except (ValueError, TypeError, KeyError) as exc:
                self._error(400, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
                return
            self._send(200, reply)

    return Handler


@contextmanager
def serve(chat: ChatModel, host: str = "127.0.0.1", port: int = 0) -> Iterator[ServedEndpoint]:
    """Serve ``chat`` in a background thread for the duration of the block."""
    server = ThreadingHTTPServer((host, port), _handler(chat))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    endpoint = ServedEndpoint(f"http://{host}:{server.server_address[1]}/v1", server)
    log.info("serve.started", base_url=endpoint.base_url, model=chat.name)
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)

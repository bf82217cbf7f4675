"""``train serve``'s HTTP side over real loopback sockets, with a stand-in model: requests
queue in order behind the one generating, one over the bound gets a one-line 503, a client that
left is never computed for (queued or mid-generation), and a prompt over the context is a
one-line 400. tests/training/test_trl_real.py serves a real checkpoint."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from dealroom.training.serving import (
    Cancelled,
    ContextTooLong,
    generation_budget,
    sampling_params,
    serve,
)

WAIT_S = 10.0
BODY = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode()


class Held:
    """A model whose each generation runs until released (or cancelled)."""

    name = "held"

    def __init__(self) -> None:
        self.started: list[str] = []
        self.release = threading.Event()
        self.running = threading.Event()
        self.cancelled = threading.Event()

    def complete(self, body: Mapping[str, Any], cancelled: Callable[[], bool]) -> dict[str, Any]:
        tag = str(body["messages"][0]["content"])
        if tag == "long":
            raise ContextTooLong("the prompt is 9,000 tokens and the model's context is 8,192")
        self.started.append(tag)
        self.running.set()
        deadline = time.monotonic() + WAIT_S
        while not self.release.wait(0.01):
            if cancelled():
                self.cancelled.set()
                raise Cancelled
            assert time.monotonic() < deadline, "never released"
        self.running.clear()
        return {"choices": [{"message": {"role": "assistant", "content": tag}}]}


@pytest.fixture
def held() -> Iterator[tuple[Held, Any]]:
    model = Held()
    with serve(model, max_queue=1) as endpoint:  # pyright: ignore[reportArgumentType]
        yield model, endpoint
        model.release.set()


def request(endpoint: Any, tag: str) -> tuple[int, dict[str, Any]]:
    port = int(endpoint.base_url.rsplit(":", 1)[1].split("/")[0])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
    body = json.dumps({"messages": [{"role": "user", "content": tag}]})
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    payload = json.loads(response.read())
    conn.close()
    return response.status, payload


def raw_request(endpoint: Any, tag: str) -> socket.socket:
    """A request sent on a plain socket, left open (the caller closes it to 'leave')."""
    port = int(endpoint.base_url.rsplit(":", 1)[1].split("/")[0])
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
    body = json.dumps({"messages": [{"role": "user", "content": tag}]}).encode()
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    sock.sendall(head.encode() + body)
    return sock


def in_background(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out


def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.01)


def test_requests_wait_in_order_and_one_over_the_bound_is_a_one_line_503(
    held: tuple[Held, Any],
) -> None:
    model, endpoint = held
    first, first_out = in_background(lambda: request(endpoint, "a"))
    assert model.running.wait(WAIT_S)
    second, second_out = in_background(lambda: request(endpoint, "b"))
    until(lambda: endpoint.queue.waiting() == 2)
    status, payload = request(endpoint, "c")
    assert status == 503
    message = payload["error"]["message"]
    assert "\n" not in message and message.startswith("busy: 1 requests already wait")
    model.release.set()
    first.join(WAIT_S)
    second.join(WAIT_S)
    assert [s for s, _ in first_out + second_out] == [200, 200]
    assert model.started == ["a", "b"]
    assert endpoint.queue.refused == 1


def test_a_queued_request_whose_client_left_is_never_generated(held: tuple[Held, Any]) -> None:
    model, endpoint = held
    first, first_out = in_background(lambda: request(endpoint, "a"))
    assert model.running.wait(WAIT_S)
    leaving = raw_request(endpoint, "gone")
    until(lambda: endpoint.queue.waiting() == 2)
    leaving.close()
    model.release.set()
    first.join(WAIT_S)
    until(lambda: endpoint.queue.dropped == 1)
    assert model.started == ["a"] and first_out[0][0] == 200


def test_a_generation_stops_when_its_client_leaves(held: tuple[Held, Any]) -> None:
    model, endpoint = held
    leaving = raw_request(endpoint, "gone")
    assert model.running.wait(WAIT_S)
    leaving.close()
    assert model.cancelled.wait(WAIT_S)
    until(lambda: endpoint.queue.dropped == 1)
    assert endpoint.queue.waiting() == 0
    model.release.set()
    assert request(endpoint, "next")[0] == 200  # the model is free again


def test_a_prompt_over_the_context_is_a_one_line_400(held: tuple[Held, Any]) -> None:
    _, endpoint = held
    status, payload = request(endpoint, "long")
    assert status == 400
    assert payload["error"]["message"].startswith("the prompt is 9,000 tokens")
    assert payload["error"]["code"] == "context_length_exceeded"  # OpenAI's, which clients know


def test_the_budget_is_what_the_context_leaves() -> None:
    assert generation_budget(100, 8192, 256) == 256
    assert generation_budget(8000, 8192, 256) == 192
    assert generation_budget(8000, None, 256) == 256
    with pytest.raises(ContextTooLong, match=r"8,192 tokens and the model's context is 8,192"):
        generation_budget(8192, 8192, 256)


def raw(endpoint: Any, data: bytes) -> bytes:
    """What the server answers to ``data`` sent as is on a new connection (nothing is sent
    for empty ``data``: a server that answers before reading resets a connection it was sent to)."""
    port = int(endpoint.base_url.rsplit(":", 1)[1].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        if data:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize(
    ("head", "body"),
    [
        ("Content-Length: abc\r\n", b"{}"),  # once a traceback and a closed connection
        ("", b"[" * 100_000 + b"]" * 100_000),  # nested 100,000 deep (the length is added)
    ],
)
def test_a_malformed_request_is_a_one_line_400(
    held: tuple[Held, Any], head: str, body: bytes
) -> None:
    _, endpoint = held
    length = "" if head else f"Content-Length: {len(body)}\r\n"
    data = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n{head}{length}\r\n".encode() + body
    answer = raw(endpoint, data)
    assert answer.startswith(b"HTTP/1.0 400") or answer.startswith(b"HTTP/1.1 400"), answer[:200]
    message = json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["message"]
    assert "\n" not in message


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, (0, 1.0)),
        ({"max_tokens": 32, "temperature": 0.7}, (32, 0.7)),
        ({"max_completion_tokens": 8}, (8, 1.0)),
        ({"temperature": 1e-320}, (0, 0.0)),  # would overflow the logits: greedy
    ],
)
def test_sampling_parameters_are_read_once_and_checked(
    body: dict[str, Any], expected: tuple[int, float]
) -> None:
    assert sampling_params(body) == expected


@pytest.mark.parametrize(
    "body",
    [{"max_tokens": float("inf")}, {"max_tokens": 10**400}, {"max_tokens": True},
     {"temperature": float("nan")}, {"temperature": 3}, {"temperature": "hot"}],
)  # fmt: skip
def test_bad_sampling_parameters_are_one_line_errors(body: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"max_tokens|temperature") as caught:
        sampling_params(body)
    assert "\n" not in str(caught.value)


def test_connections_past_the_bound_are_answered_busy_and_closed(
    held: tuple[Held, Any],
) -> None:
    _, endpoint = held
    port = int(endpoint.base_url.rsplit(":", 1)[1].split("/")[0])
    slow = [socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) for _ in range(64)]
    try:
        for sock in slow:  # each holds a half-sent request, and a thread
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
        until(lambda: endpoint.server._slots._value == 0)  # pyright: ignore[reportAttributeAccessIssue]
        answer = raw(endpoint, b"")  # answered on accept, before a byte is read
        assert answer.startswith(b"HTTP/1.1 503"), answer[:100]
        assert b"too many connections" in answer
    finally:
        for sock in slow:
            sock.close()
    until(lambda: endpoint.server._slots._value == 64)  # pyright: ignore[reportAttributeAccessIssue]
    assert raw(endpoint, b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.0 200")


class Filling:
    """A model with a small context: it offers, then waits, and refuses (as ``ChatModel``
    does) a conversation of more than ``fits`` messages."""

    name = "filling"

    def __init__(self, fits: int) -> None:
        self.fits = fits
        self.requests = 0

    def complete(self, body: Mapping[str, Any], cancelled: Callable[[], bool]) -> dict[str, Any]:
        del cancelled
        self.requests += 1
        messages = body["messages"]
        if len(messages) > self.fits:
            raise ContextTooLong(
                f"the prompt is {1_000 * len(messages):,} tokens and the model's context is "
                f"{1_000 * self.fits:,}: shorten the conversation"
            )
        name, arguments = (
            ("make_offer", {"price": 4000}) if len(messages) == 1 else ("wait_for_opponent", {})
        )
        call = {
            "id": f"call_{len(messages)}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        message = {"role": "assistant", "content": "", "tool_calls": [call]}
        return {
            "id": "x",
            "object": "chat.completion",
            "model": self.name,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }


def test_a_seat_whose_conversation_outgrows_the_context_ends_its_play_not_the_negotiation() -> None:
    """The LLM seat against train serve: the 400 that says the prompt does not fit ends the
    seat's play (``ended_by: "context"``, the endpoint's sentence kept), is not retried, and
    the negotiation plays on to its own end with no error: its live offer still stands."""
    import anyio

    from dealroom.agents import resolve
    from dealroom.agents.llm import LLMPlayer, LLMSettings
    from dealroom.play.players import ScriptedPlayer
    from dealroom.play.runner import play_match
    from dealroom.protocol.generator import scenario_at

    model = Filling(fits=5)

    async def main(base_url: str) -> Any:
        async with LLMPlayer.from_spec(
            "llm:filling", base_url=base_url, settings=LLMSettings()
        ) as seat:
            return await play_match(
                scenario_at(0, 0, "mid"), seat, ScriptedPlayer(resolve("boulware"), "boulware")
            )

    with serve(model) as endpoint:  # pyright: ignore[reportArgumentType]
        result = anyio.run(main, endpoint.base_url)
    data = result.extra["players"]["buyer"]
    assert result.errors == {}
    assert data["ended_by"] == "context"
    assert "the model's context is 5,000" in data["context_full"]
    assert (data["model_calls"], data["failed_attempts"]) == (3, 1)
    assert model.requests == 4  # three replies, one refusal, no retry
    assert result.record.outcome is not None
    assert result.record.outcome.end_reason != "walk_away"  # it was not made to walk away

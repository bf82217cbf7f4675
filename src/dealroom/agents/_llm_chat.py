"""The model behind an LLM seat, as the seat's turn loop sees it: a conversation that answers.

``SeatModel.conversation`` starts one seat's conversation for one negotiation (its tools, its
sampling settings); the seat adds its opening message and tool results and asks for the model's
reply (``respond``), which joins the conversation. ``messages`` is the conversation as OpenAI
chat messages: what is stored with the negotiation (no system message: the one model seat,
``dealroom.protocol.model_seat``, opens with the briefing).

``ChatCompletions`` is the built-in ``llm:MODEL`` model: a lean client of any OpenAI-compatible
``/chat/completions`` endpoint. Why not the OpenAI client and the Agents SDK's chat model: they
cost 6 to 8 ms of CPU per call (request transforms and response models in pydantic, and the
SDK's items converted to chat messages again on every call, the whole conversation each time),
more than the seat, the room and the tournament together (``benchmarks/orchestration.py``).
Here the request body is built incrementally (each message serialised once, when it joins the
conversation), sent with one pooled aiohttp session per model, and the reply is read with
``json.loads`` into the few fields the seat needs. The requests are the ones the Agents SDK's
chat model sends for the same conversation, field by field (a test plays a whole negotiation
both ways), and so is what is stored. Any Agents SDK ``Model`` (LiteLLM, test doubles) plays
through the same contract (``dealroom.agents._llm_sdk``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast
from urllib.parse import urlsplit

from dealroom._version import __version__
from dealroom.protocol.errors import DealroomError
from dealroom.protocol.model_seat import unthought

OPENAI_BASE_URL = "https://api.openai.com/v1"
CONTENT_FILTERED = "Response withheld by the provider's content filter."
KEEPALIVE_S = 4.0
"""How long an idle connection to the endpoint is kept for the next request."""
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


class ModelCallError(DealroomError):
    """A model call that gave no usable reply: an HTTP error status, a connection that failed,
    a reply that is not a chat completion, or one the seat cannot use. ``transient``: whether
    trying again may help (the meter retries those)."""

    kind = "model_call"

    def __init__(self, message: str, *, transient: bool, status_code: int | None = None) -> None:
        super().__init__(message)
        self.transient = transient
        self.status_code = status_code


def _status_error(status: int, message: str) -> ModelCallError:
    transient = status in (408, 409, 429) or status >= 500
    return ModelCallError(f"HTTP {status}: {message}", transient=transient, status_code=status)


def _malformed(problem: str) -> ModelCallError:
    """A reply that is JSON but not a chat completion (a proxy's or server's hiccup)."""
    return ModelCallError(f"malformed reply: {problem}", transient=True)


def _unusable(problem: str) -> ModelCallError:
    """A chat completion the seat cannot use (no choices, or cut short before any output)."""
    return ModelCallError(f"bad model output: {problem}", transient=False)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of a reply, with the model's raw arguments."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ModelReply:
    """The model's reply to the conversation so far (already added to it)."""

    tool_calls: tuple[ToolCall, ...]
    input_tokens: object
    """As the endpoint reported it (the meter counts only non-negative integers)."""
    output_tokens: object
    finish_reason: str | None = None
    cached_tokens: object = 0
    """Of the input tokens, those read from the endpoint's prompt cache (as reported)."""
    reasoning_tokens: object = 0
    """Of the output tokens, those spent on reasoning (as reported)."""


@dataclass(frozen=True, slots=True)
class Sampling:
    """Sampling settings sent with every request (None: not sent, the endpoint's default)."""

    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    enable_thinking: bool | None = None
    """Sent as ``chat_template_kwargs`` (vLLM's); off, replies are kept without think blocks."""

    def extra_body(self) -> dict[str, Any] | None:
        """Request fields beyond OpenAI's: the thinking switch, when set."""
        if self.enable_thinking is None:
            return None
        return {"chat_template_kwargs": {"enable_thinking": self.enable_thinking}}


class Conversation(Protocol):
    """One seat's conversation with its model over one negotiation."""

    def add_user(self, text: str) -> None:
        """A user message (the briefing)."""
        ...

    def add_tool_result(self, call: ToolCall, output: str) -> None:
        """What one of the model's tool calls returned (the text the model reads)."""
        ...

    async def respond(self) -> ModelReply:
        """One model call on the conversation so far; on success its reply joins the
        conversation (a call that raises changes nothing, so it can be retried)."""
        ...

    def messages(self) -> list[dict[str, Any]]:
        """The conversation as OpenAI chat messages."""
        ...


class SeatModel(Protocol):
    """What an LLM seat plays with: conversations with one model."""

    def conversation(
        self,
        tools: Sequence[dict[str, Any]],
        sampling: Sampling,
        *,
        tracing: bool = False,
    ) -> Conversation:
        """A new, empty conversation: ``tools`` in the chat-completions form
        (``{"type": "function", "function": {...}}``)."""
        ...

    async def close(self) -> None:
        """Close the model's connections (in the event loop that used them)."""
        ...


class ChatCompletions:
    """The lean chat-completions client of ``llm:MODEL`` (see the module's docstring)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str,
        timeout_s: float | None = None,
    ) -> None:
        self.model = model
        self.base_url = (base_url or OPENAI_BASE_URL).rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.timeout_s = timeout_s
        self.headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"dealroom/{__version__}",
        }
        # The OpenAI client's own optional headers, from the same variables.
        for header, variable in (
            ("OpenAI-Organization", "OPENAI_ORG_ID"),
            ("OpenAI-Project", "OPENAI_PROJECT_ID"),
        ):
            if value := os.environ.get(variable):
                self.headers[header] = value
        parts = urlsplit(self.base_url)
        self.official = parts.scheme == "https" and parts.hostname == "api.openai.com"
        """api.openai.com: requests say ``store: true``, as the Agents SDK's model does."""
        self.proxy = env_proxy(self.url)
        """The proxy the environment names for the endpoint (``HTTPS_PROXY``, ``NO_PROXY``...),
        as the OpenAI client would use it; looked up once (aiohttp's ``trust_env`` looks up
        proxies and ``~/.netrc`` in a worker thread on every request)."""
        self._session: Any = None  # an aiohttp.ClientSession, opened in the loop that uses it
        self.sessions_opened = 0

    @property
    def closed(self) -> bool:
        """No connection is open."""
        return self._session is None or self._session.closed

    def conversation(
        self,
        tools: Sequence[dict[str, Any]],
        sampling: Sampling,
        *,
        tracing: bool = False,
    ) -> Conversation:
        params: dict[str, Any] = {"model": self.model}
        if tools:
            params["tools"] = list(tools)
        if sampling.temperature is not None:
            params["temperature"] = sampling.temperature
        if sampling.max_tokens is not None:
            params["max_tokens"] = sampling.max_tokens
        if self.official:
            params["store"] = True
        if sampling.reasoning_effort is not None:
            params["reasoning_effort"] = sampling.reasoning_effort
        params.update(sampling.extra_body() or {})
        return _WireConversation(self, params, tracing)

    async def post(self, body: bytes) -> dict[str, Any]:
        """POST one request body; the reply's JSON object. Raises ``ModelCallError``,
        ``TimeoutError`` or ``json.JSONDecodeError``."""
        import aiohttp

        if self.closed:
            timeout = aiohttp.ClientTimeout(total=self.timeout_s)
            # No connection limit here: tournaments bound the negotiations in flight. Idle
            # connections are dropped before servers drop them (uvicorn, which vLLM runs on,
            # after 5 s), so that no request goes out on a connection the server just closed.
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEPALIVE_S)
            self._session = aiohttp.ClientSession(
                connector=connector, headers=self.headers, timeout=timeout
            )
            self.sessions_opened += 1
        try:
            async with self._session.post(self.url, data=body, proxy=self.proxy) as response:
                raw = await response.read()
                status = response.status
        except TimeoutError:
            raise TimeoutError("timed out") from None
        except aiohttp.ClientError as exc:
            message = f"connection error: {type(exc).__name__}: {exc}"
            raise ModelCallError(message, transient=True) from exc
        if status >= 300:
            raise _status_error(status, _error_message(raw))
        data = _object(json.loads(raw))
        if data is None:
            raise _malformed(f"the reply is JSON but not an object: {raw[:200]!r}")
        return data

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()


def env_proxy(url: str) -> str | None:
    """The proxy URL the environment gives for ``url`` (None: connect directly)."""
    import urllib.request

    parts = urlsplit(url)
    if urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return urllib.request.getproxies().get(parts.scheme)


class _WireConversation:
    """A conversation kept twice: as chat messages (stored) and as each message's serialised
    form in the request (``_parts``), so a request body is a join, not a serialisation."""

    def __init__(self, client: ChatCompletions, params: dict[str, Any], tracing: bool) -> None:
        self.client = client
        self.params = params
        self.tracing = tracing
        self._messages: list[dict[str, Any]] = []
        self._parts: list[bytes] = []
        self._tail = b"]," + _dumps(params).encode()[1:]

    def add_user(self, text: str) -> None:
        self._add({"role": "user", "content": text})

    def add_tool_result(self, call: ToolCall, output: str) -> None:
        self._add({"role": "tool", "tool_call_id": call.id, "content": output})

    def _add(self, message: dict[str, Any], wire: dict[str, Any] | None = None) -> None:
        if self.params.get("chat_template_kwargs") == {"enable_thinking": False}:
            message = unthought(message)
            wire = None if wire is None else unthought(wire)
        self._messages.append(message)
        self._parts.append(_dumps(message if wire is None else wire).encode())

    def messages(self) -> list[dict[str, Any]]:
        return [dict(message) for message in self._messages]

    def body(self) -> bytes:
        """The next request's body."""
        return b'{"messages":[' + b",".join(self._parts) + self._tail

    async def respond(self) -> ModelReply:
        if self.tracing:
            return await self._traced()
        data = await self.client.post(self.body())
        reply = parse_reply(data, self.client.model)
        if reply.message is not None:
            self._add(reply.message, reply.wire)
        return reply.completion

    async def _traced(self) -> ModelReply:
        from agents.tracing import generation_span

        with generation_span(
            model=self.client.model,
            model_config={"base_url": self.client.base_url, **self.params, "tools": None},
            input=self.messages(),
        ) as span:
            data = await self.client.post(self.body())
            reply = parse_reply(data, self.client.model)
            span.span_data.output = [] if reply.message is None else [reply.message]
            span.span_data.usage = {
                "input_tokens": reply.completion.input_tokens,
                "output_tokens": reply.completion.output_tokens,
            }
        if reply.message is not None:
            self._add(reply.message, reply.wire)
        return reply.completion


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """A chat completion read: the assistant message as stored (None: nothing to add), as it
    goes into later requests (``wire``: with the reasoning the Agents SDK replays), and what
    the seat needs."""

    message: dict[str, Any] | None
    wire: dict[str, Any] | None
    completion: ModelReply


def parse_reply(data: dict[str, Any], model: str) -> ParsedReply:
    """Read a chat completion the way the Agents SDK's chat model reads it (its converters'
    round trip: the same messages, in the same cases). Raises ``ModelCallError``: not
    transient for a completion without choices or cut short before any output, transient for
    one whose fields have the wrong types."""
    usage = _object(data.get("usage"))
    input_tokens = output_tokens = None
    cached: object = 0
    reasoning: object = 0
    if usage is not None:
        input_tokens, output_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
        cached = _detail(usage, "prompt_tokens_details", "cached_tokens")
        reasoning = _detail(usage, "completion_tokens_details", "reasoning_tokens")
    choices = data.get("choices")
    if not choices:
        error = data.get("error")
        details = f": {error}" if error is not None else ""
        raise _unusable(
            f"ChatCompletion response has no choices (possible provider error payload){details}"
        )
    choice = _object(cast("list[object]", choices)[0]) if isinstance(choices, list) else None
    if choice is None:
        raise _malformed("'choices' is not a list of objects")
    finish = choice.get("finish_reason")
    raw_message = choice.get("message")
    if raw_message is None:
        return ParsedReply(
            None,
            None,
            ModelReply((), input_tokens or 0, output_tokens or 0, finish, cached, reasoning),
        )
    message = _object(raw_message)
    if message is None:
        raise _malformed("'message' is not an object")
    text = _string(message, "content")
    refusal = _string(message, "refusal")
    calls = _tool_calls(message.get("tool_calls"))
    if not text and not refusal and not calls:
        if finish == "content_filter":
            refusal = CONTENT_FILTERED
        elif finish == "length":
            raise _unusable(
                "Chat Completions response terminated with finish_reason='length' but "
                "produced no assistant text, tool call, or refusal."
            )
    completion = ModelReply(
        tuple(ToolCall(call["id"], call["name"], call["arguments"]) for call in calls),
        input_tokens or 0,
        output_tokens or 0,
        finish,
        cached,
        reasoning,
    )
    if not text and not refusal and not calls:
        return ParsedReply(None, None, completion)
    stored: dict[str, Any] = {"role": "assistant"}
    if text or refusal:
        if refusal:
            stored["refusal"] = refusal
        if text:
            stored["content"] = text
    else:
        stored["content"] = None
    wire = dict(stored)
    if calls:
        stored["tool_calls"] = [_wire_call(call) for call in calls]
        wire["tool_calls"] = [_wire_call(call, model) for call in calls]
    wire.update(_replayed_reasoning(message, model))
    return ParsedReply(stored, wire, completion)


def _object(value: object) -> dict[str, Any] | None:
    """``value`` as a JSON object (its values not yet checked), None if it is not one."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def _detail(usage: dict[str, Any], group: str, key: str) -> object:
    """A count inside a usage breakdown (``prompt_tokens_details.cached_tokens``), 0 if absent."""
    details = _object(usage.get(group))
    return details.get(key, 0) if details is not None else 0


def _string(message: dict[str, Any], key: str) -> str:
    value = message.get(key)
    if value is None or isinstance(value, str):
        return value or ""
    raise _malformed(f"the message's {key!r} is not a string")


def _tool_calls(raw: object) -> list[dict[str, Any]]:
    """The reply's function tool calls (others, e.g. custom tools, are skipped as the SDK
    skips them)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise _malformed("'tool_calls' is not a list")
    calls: list[dict[str, Any]] = []
    for item in cast("list[object]", raw):
        call = _object(item)
        if call is None:
            raise _malformed("a tool call is not an object")
        if call.get("type", "function") != "function":
            continue
        function = _object(call.get("function"))
        if function is None:
            raise _malformed("a tool call has no function")
        name, arguments, call_id = function.get("name"), function.get("arguments"), call.get("id")
        if not isinstance(name, str) or not isinstance(call_id, str):
            raise _malformed("a tool call has no name or id")
        if not isinstance(arguments, str):
            raise _malformed("a tool call's arguments are not a string")
        calls.append({"id": call_id, "name": name, "arguments": arguments, "raw": call})
    return calls


def _wire_call(call: dict[str, Any], model: str | None = None) -> dict[str, Any]:
    """A tool call as it goes back to the model (empty arguments as ``{}``, and Gemini's
    thought signature for Gemini models, as the SDK's converter does)."""
    out: dict[str, Any] = {
        "id": call["id"],
        "type": "function",
        "function": {"name": call["name"], "arguments": call["arguments"] or "{}"},
    }
    if model is not None and "gemini" in model.lower():
        extra = _object(call["raw"].get("extra_content"))
        google = _object(extra.get("google")) if extra is not None else None
        signature = google.get("thought_signature") if google is not None else None
        if signature:
            out["extra_content"] = {"google": {"thought_signature": signature}}
    return out


def _replayed_reasoning(message: dict[str, Any], model: str) -> dict[str, Any]:
    """The reasoning fields the SDK sends back with an assistant message in later requests:
    ``reasoning_content`` for DeepSeek models, a ``reasoning`` text otherwise (never stored)."""
    content = message.get("reasoning_content")
    content = content if isinstance(content, str) else ""
    blocks = message.get("thinking_blocks")
    has_blocks = isinstance(blocks, list) and any(
        isinstance(b, dict) for b in cast("list[object]", blocks)
    )
    reasoning = message.get("reasoning")
    out: dict[str, Any] = {}
    if content and "deepseek" in model.lower():
        out["reasoning_content"] = content
    if isinstance(reasoning, str) and reasoning and not content and not has_blocks:
        out["reasoning"] = reasoning
    return out


def _error_message(raw: bytes) -> str:
    """The error's message from an error body (OpenAI's ``{"error": {"message": ...}}``), else
    the start of the body."""
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    body = _object(data)
    if body is not None:
        error = body.get("error")
        fields = _object(error)
        if fields is not None and isinstance(message := fields.get("message"), str):
            return message
        if isinstance(error, str):
            return error
    text = raw[:200].decode("utf-8", errors="replace").strip()
    return text or "no body"

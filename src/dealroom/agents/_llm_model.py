"""The model behind an LLM seat: built from a spec, metered, retried and bounded.

``build_model`` gives the seat's ``SeatModel`` (``dealroom.agents._llm_chat``): the lean
chat-completions client for ``llm:MODEL`` on any OpenAI-compatible endpoint, or an Agents SDK
model (LiteLLM) behind the same contract. Every model call goes through a ``Meter``: it is where
calls, tokens and latency are counted, where transient API errors are retried with backoff,
and where each attempt is bounded by a timeout. Error tree::

    LLMError                 the model could not be used; the seat's run ends as an error
      LLMConfigError         bad spec or missing extra (raised before the negotiation starts)
      LLMCallFailed          a model call still failed after the bounded retries
        ContextFull          the endpoint said the conversation no longer fits the model's
                             context (not retried; the seat's play ends, the negotiation not)
"""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from dealroom.agents._llm_chat import (
    ChatCompletions,
    Conversation,
    ModelCallError,
    ModelReply,
    SeatModel,
)
from dealroom.protocol.errors import DealroomError

DEFAULT_BASE_URL_ENV = "OPENAI_BASE_URL"
API_KEY_ENV = "OPENAI_API_KEY"


class LLMError(DealroomError):
    """The seat's model could not be used."""

    kind = "llm"


class LLMConfigError(LLMError):
    """A bad model spec or a missing optional dependency."""

    kind = "llm_config"


class LLMCallFailed(LLMError):
    """A model call failed for good (a permanent error, or retries used up)."""

    kind = "llm_call_failed"

    def __init__(self, message: str, *, attempts: int, cause: BaseException) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.cause = cause


class ContextFull(LLMCallFailed):
    """The conversation no longer fits the model's context: the endpoint refused it (HTTP 400
    saying so). A long negotiation reaching a small model's limit, not a broken model."""

    kind = "context_full"


CONTEXT_PHRASES = (
    "maximum context length",  # OpenAI, vLLM
    "context length",
    "context window",
    "maximum model length",  # vLLM: "longer than the maximum model length"
    "the model's context is",  # dealroom train serve
)
"""How endpoints say a prompt does not fit (lower case), beside OpenAI's error code
``context_length_exceeded``."""


def is_context_full(exc: BaseException) -> bool:
    """True for an endpoint's refusal of a prompt longer than the model's context."""
    if isinstance(exc, ModelCallError):
        return exc.status_code == 400 and _says_context(str(exc))
    if "openai" not in sys.modules:
        return False
    import openai

    if isinstance(exc, openai.BadRequestError):
        return exc.code == "context_length_exceeded" or _says_context(exc.message)
    return False


def _says_context(message: str) -> bool:
    text = message.lower()
    return "context_length_exceeded" in text or any(p in text for p in CONTEXT_PHRASES)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded exponential backoff for transient model errors."""

    attempts: int = 4
    """Tries per model call, the first included."""
    initial_s: float = 0.5
    max_s: float = 8.0
    timeout_s: float = 60.0
    """Upper bound on one attempt (the HTTP client's own timeout is set to the same value)."""

    def delay(self, retry: int) -> float:
        """Seconds to sleep before retry number ``retry`` (1, 2, ...)."""
        return min(self.max_s, self.initial_s * 2 ** (retry - 1))


@dataclass(slots=True)
class Usage:
    """What one seat's model cost over a negotiation."""

    model_calls: int = 0
    """Successful model calls."""
    failed_attempts: int = 0
    """Attempts that raised (retried or not)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    """Of ``input_tokens``, those the endpoint reported as read from its prompt cache."""
    reasoning_tokens: int = 0
    """Of ``output_tokens``, those the endpoint reported as reasoning."""
    latency_s: float = 0.0
    """Wall-clock seconds spent in successful model calls."""
    latencies_s: list[float] = field(default_factory=list[float])
    bad_token_counts: int = 0
    """Token counts the endpoint reported that were negative or not integers (counted as 0)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary (stored with the negotiation)."""
        lat = sorted(self.latencies_s)
        return {
            "model_calls": self.model_calls,
            "failed_attempts": self.failed_attempts,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "latency_s": round(self.latency_s, 4),
            "latency_p50_s": round(lat[len(lat) // 2], 4) if lat else None,
            "latency_max_s": round(lat[-1], 4) if lat else None,
            **({"bad_token_counts": self.bad_token_counts} if self.bad_token_counts else {}),
        }


def is_transient(exc: BaseException) -> bool:
    """True for errors worth retrying: timeouts, connection errors, 408/409/429, 5xx, and
    bodies that are not the JSON the API promises (a proxy or server hiccup)."""
    if isinstance(exc, TimeoutError | json.JSONDecodeError):
        return True
    if isinstance(exc, ModelCallError):
        return exc.transient
    return "openai" in sys.modules and _sdk_transient(exc)


def _sdk_transient(exc: BaseException) -> bool:
    """The OpenAI client's transient errors (an Agents SDK model behind the seat raises them;
    the lean client never loads it)."""
    import openai

    if isinstance(
        exc, openai.APITimeoutError | openai.APIConnectionError | openai.APIResponseValidationError
    ):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


class Meter:
    """Counts, retries and bounds every model call of one seat's conversation.

    Tokens, calls and latency land in ``usage``; ``on_completion`` sees each reply before the
    seat makes its tool calls (the LLM seat charges its thinking to the clock there).
    """

    def __init__(self, retry: RetryPolicy | None = None) -> None:
        self.retry = retry or RetryPolicy()
        self.usage = Usage()
        self.on_completion: Callable[[ModelReply], None] | None = None
        """Called with each successful reply, before its tool calls run."""

    async def respond(self, conversation: Conversation) -> ModelReply:
        """The model's reply to the conversation, retried on transient errors within the
        policy."""
        policy = self.retry
        for attempt in range(1, policy.attempts + 1):
            started = time.monotonic()
            try:
                with anyio.fail_after(policy.timeout_s):
                    completion = await conversation.respond()
            except Exception as exc:
                self.usage.failed_attempts += 1
                if is_context_full(exc):
                    raise ContextFull(_describe(exc), attempts=attempt, cause=exc) from exc
                if not is_transient(exc) or attempt == policy.attempts:
                    raise LLMCallFailed(
                        f"model call failed after {attempt} attempt(s): {_describe(exc)}",
                        attempts=attempt,
                        cause=exc,
                    ) from exc
                await anyio.sleep(policy.delay(attempt))
                continue
            self._count(completion, time.monotonic() - started)
            if self.on_completion is not None:
                self.on_completion(completion)
            return completion
        raise AssertionError("unreachable")  # pragma: no cover

    def _count(self, completion: ModelReply, latency: float) -> None:
        usage = self.usage
        usage.model_calls += 1
        reported = (completion.input_tokens, completion.output_tokens)
        counted = tuple(reported_tokens(n) for n in reported)
        usage.bad_token_counts += sum(c != r for c, r in zip(counted, reported, strict=True))
        usage.input_tokens += counted[0]
        usage.output_tokens += counted[1]
        # Parts of the counts above: never more than them, whatever the endpoint says.
        usage.cached_input_tokens += min(reported_tokens(completion.cached_tokens), counted[0])
        usage.reasoning_tokens += min(reported_tokens(completion.reasoning_tokens), counted[1])
        usage.latency_s += latency
        usage.latencies_s.append(latency)


def reported_tokens(value: object) -> int:
    """A token count from an endpoint, or 0 if it is not one: a negative count must not buy
    thinking time (it is charged per output token) nor lower the run's totals."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return 0


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, ModelCallError):
        return str(exc)
    if "agents" in sys.modules:
        return _describe_sdk(exc)
    return f"{type(exc).__name__}: {exc}"


def _describe_sdk(exc: BaseException) -> str:
    import openai
    from agents.exceptions import ModelBehaviorError

    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    if isinstance(exc, ModelBehaviorError):
        return f"bad model output: {exc}"
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """Where a model comes from: ``llm:MODEL`` (any OpenAI-compatible endpoint) or
    ``llm:litellm/PROVIDER/MODEL`` (the litellm extra)."""

    model: str
    base_url: str | None = None
    api_key: str | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)


def parse_llm_spec(spec: str) -> str:
    """The model name in an ``llm:MODEL`` spec."""
    kind, sep, model = spec.strip().partition(":")
    if kind != "llm" or not sep or not model.strip():
        raise LLMConfigError(f"not an LLM spec: {spec!r} (expected llm:MODEL)")
    return model.strip()


def build_model(spec: ModelSpec) -> SeatModel:
    """The seat's model a spec names (not metered)."""
    if spec.model.startswith("litellm/"):
        return _litellm(spec)
    base_url = spec.base_url or os.environ.get(DEFAULT_BASE_URL_ENV) or None
    api_key = spec.api_key or os.environ.get(API_KEY_ENV)
    if not api_key:
        if base_url is None:
            raise LLMConfigError(
                f"no API key: set {API_KEY_ENV}, or --base-url for a local endpoint"
            )
        api_key = "unused"  # local OpenAI-compatible servers usually ignore it
    timeout = spec.retry.timeout_s if math.isfinite(spec.retry.timeout_s) else None
    return ChatCompletions(spec.model, base_url=base_url, api_key=api_key, timeout_s=timeout)


def _litellm(spec: ModelSpec) -> SeatModel:
    try:
        module = importlib.import_module("agents.extensions.models.litellm_model")
    except ImportError:
        raise LLMConfigError(
            "LiteLLM models need the litellm extra: pip install 'dealroom[litellm]'"
        ) from None
    from dealroom.agents._llm_sdk import SDKChatModel

    model: Any = module.LitellmModel(
        model=spec.model.removeprefix("litellm/"), base_url=spec.base_url, api_key=spec.api_key
    )
    return SDKChatModel(model)

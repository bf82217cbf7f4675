"""Model specs, transient-error classification and backoff of the LLM seat."""

from __future__ import annotations

import importlib.util
import json

import httpx2
import openai
import pytest

from dealroom.agents._llm_chat import ChatCompletions, ModelCallError
from dealroom.agents._llm_model import (
    ModelSpec,
    build_model,
    is_context_full,
    is_transient,
    parse_llm_spec,
)
from dealroom.agents.llm import LLMConfigError, LLMPlayer, RetryPolicy, is_llm_spec


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_an_llm_spec_names_a_chat_completions_model_on_any_endpoint() -> None:
    player = LLMPlayer.from_spec("llm:qwen2.5-7b", base_url="http://127.0.0.1:9/v1")
    assert player.name == "llm:qwen2.5-7b"
    model = player.model
    assert isinstance(model, ChatCompletions)
    assert model.model == "qwen2.5-7b"
    assert model.url == "http://127.0.0.1:9/v1/chat/completions"
    assert model.headers["Authorization"] == "Bearer unused"  # local servers take any key
    assert model.timeout_s == RetryPolicy().timeout_s  # one attempt's bound (ours retry)


def test_the_endpoint_and_key_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    model = build_model(ModelSpec(model="m"))
    assert isinstance(model, ChatCompletions)
    assert (model.url, model.headers["Authorization"]) == (
        "http://127.0.0.1:9/v1/chat/completions",
        "Bearer sk-from-env",
    )
    assert not model.official


def test_openai_itself_is_the_default_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    model = build_model(ModelSpec(model="gpt-4.1-mini"))
    assert isinstance(model, ChatCompletions)
    assert model.url == "https://api.openai.com/v1/chat/completions"
    assert model.headers["OpenAI-Organization"] == "org-1"  # as the OpenAI client sends it
    assert model.official  # its requests say store: true, as the Agents SDK's model does


def test_openai_itself_needs_a_key() -> None:
    with pytest.raises(LLMConfigError, match="OPENAI_API_KEY"):
        build_model(ModelSpec(model="gpt-4.1-mini"))


@pytest.mark.parametrize("spec", ["boulware", "llm:", "llm:  ", "gpt-4.1"])
def test_other_specs_are_not_llm_specs(spec: str) -> None:
    with pytest.raises(LLMConfigError, match="llm:MODEL"):
        parse_llm_spec(spec)
    assert is_llm_spec(spec) == spec.startswith("llm:")


@pytest.mark.skipif(importlib.util.find_spec("litellm") is not None, reason="litellm installed")
def test_litellm_models_need_the_extra() -> None:
    with pytest.raises(LLMConfigError, match=r"dealroom\[litellm\]"):
        LLMPlayer.from_spec("llm:litellm/anthropic/claude-sonnet-4-5")


def _status(code: int) -> openai.APIStatusError:
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    return openai.APIStatusError(
        "scripted", response=httpx2.Response(code, request=request), body=None
    )


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (TimeoutError(), True),
        (ModelCallError("connection error", transient=True), True),
        (ModelCallError("bad model output", transient=False), False),
        (openai.APITimeoutError(httpx2.Request("POST", "http://127.0.0.1:9")), True),
        (openai.APIConnectionError(request=httpx2.Request("POST", "http://127.0.0.1:9")), True),
        (json.JSONDecodeError("bad", "{", 1), True),
        (_status(500), True),
        (_status(503), True),
        (_status(429), True),
        (_status(408), True),
        (_status(400), False),
        (_status(401), False),
        (_status(404), False),
        (ValueError("bad request"), False),
    ],
)
def test_only_transient_api_errors_are_retried(error: Exception, transient: bool) -> None:
    assert is_transient(error) is transient


def _bad_request(message: str, code: str | None = None) -> openai.BadRequestError:
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    body = {"message": message, "code": code}
    return openai.BadRequestError(
        message, response=httpx2.Response(400, request=request), body=body
    )


@pytest.mark.parametrize(
    ("error", "full"),
    [
        # dealroom train serve
        (
            ModelCallError(
                "HTTP 400: the prompt is 9,000 tokens and the model's context is 8,192: "
                "shorten the conversation",
                transient=False,
                status_code=400,
            ),
            True,
        ),
        # vLLM (both phrasings) and OpenAI
        (
            ModelCallError(
                "HTTP 400: This model's maximum context length is 8192 tokens. However, you "
                "requested 9012 tokens (8756 in the messages, 256 in the completion).",
                transient=False,
                status_code=400,
            ),
            True,
        ),
        (
            ModelCallError(
                "HTTP 400: The decoder prompt (length 9000) is longer than the maximum model "
                "length of 8192.",
                transient=False,
                status_code=400,
            ),
            True,
        ),
        (_bad_request("Too long.", code="context_length_exceeded"), True),
        (_bad_request("This model's maximum context length is 128000 tokens."), True),
        (ModelCallError("HTTP 400: temperature must be in [0, 2]", transient=False), False),
        (
            ModelCallError("HTTP 500: context length exceeded", transient=True, status_code=500),
            False,
        ),
        (_bad_request("Invalid 'tools'."), False),
        (TimeoutError(), False),
    ],
)
def test_a_prompt_over_the_models_context_is_told_apart(error: Exception, full: bool) -> None:
    assert is_context_full(error) is full


def test_backoff_doubles_up_to_its_cap() -> None:
    policy = RetryPolicy(initial_s=0.5, max_s=3.0)
    assert [policy.delay(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]

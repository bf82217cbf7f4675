"""A transformers checkpoint answering chat-completions requests: what ``train serve`` serves.

What is trained is what is served: the checkpoint's own chat template renders the conversation
(tools included) exactly as in training, and its response parser (TRL's, checked by
``models.check_tool_template``) reads its tool calls back. The HTTP side, its queue and limits
are ``dealroom.training.serving``'s.

Thinking (``dealroom.protocol.model_seat``): the server's ``enable_thinking`` (``train serve
--enable-thinking/--no-enable-thinking``; unset, the template's default), which a request's
``chat_template_kwargs.enable_thinking`` overrides as on vLLM, goes to the chat template. On, a
reply's think block is returned as ``reasoning_content`` (vLLM's field with ``--reasoning-parser
qwen3``); off, think blocks are stripped from the reply and from the history it renders.

Needs the ``train`` extra.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from dealroom.protocol.model_seat import unthought, without_thinking
from dealroom.training._chat import (
    ChatAssistantMessage,
    ChatCompletion,
    ChatFunction,
    ChatToolCall,
    JsonObject,
    json_list,
    json_object,
)
from dealroom.training.models import (
    chat_template_kwargs,
    check_tool_template,
    lib,
    require_train_extra,
)
from dealroom.training.runlog import training_horizon
from dealroom.training.serving import (
    Cancelled,
    generation_budget,
    not_cancelled,
    sampling_params,
)


class ChatModel:
    """A transformers checkpoint answering chat-completions requests."""

    def __init__(
        self,
        path: str,
        name: str | None = None,
        max_new_tokens: int = 256,
        enable_thinking: bool | None = None,
    ) -> None:
        require_train_extra()
        transformers = lib("transformers")
        self.name = name or path.rstrip("/").rsplit("/", 1)[-1]
        self.max_new_tokens = max_new_tokens
        self.enable_thinking = enable_thinking
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        check_tool_template(self.tokenizer, enable_thinking)  # also installs a response parser
        self.model = transformers.AutoModelForCausalLM.from_pretrained(path)
        if lib("torch").cuda.is_available():
            self.model.to("cuda")
        self.model.eval()
        context = getattr(self.model.config, "max_position_embeddings", None)
        self.context: int | None = int(context) if context else None
        self.horizon = training_horizon(Path(path))
        self._lock = threading.Lock()
        self._count = 0

    def complete(
        self, body: Mapping[str, Any], cancelled: Callable[[], bool] = not_cancelled
    ) -> ChatCompletion:
        """One chat completion (OpenAI's JSON shape) for a request body; Cancelled when
        ``cancelled()`` turns true before or during generation."""
        torch = lib("torch")
        thinking = request_thinking(body, self.enable_thinking)
        messages = [_template_message(m, thinking) for m in json_list(body.get("messages"))]
        if not messages:
            raise ValueError("messages must be a non-empty list")
        tools = body.get("tools") or None
        limit, temperature = sampling_params(body)
        inputs = self.tokenizer.apply_chat_template(
            messages,
            tools=tools,
            add_generation_prompt=True,
            return_tensors="pt",
            return_dict=True,
            **chat_template_kwargs(thinking),
        ).to(self.model.device)
        sampling: dict[str, Any] = (
            {"do_sample": True, "temperature": temperature} if temperature > 0 else {}
        )
        prompt_tokens = int(inputs["input_ids"].shape[1])
        wanted = min(limit or self.max_new_tokens, self.max_new_tokens)
        budget = generation_budget(prompt_tokens, self.context, wanted)
        with self._lock, torch.no_grad():
            if cancelled():
                raise Cancelled
            self._count += 1
            n = self._count
            output = self.model.generate(
                **inputs,
                max_new_tokens=budget,
                pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
                stopping_criteria=_stop_when(cancelled),
                **sampling,
            )
            if cancelled():
                raise Cancelled
        new = output[0][prompt_tokens:].tolist()
        prompt = inputs["input_ids"][0].tolist()
        reply = read_generated(self.tokenizer, new, prompt, thinking)
        return _completion(self.name, n, reply, prompt_tokens, len(new))


CALL_OPEN = "<tool_call>"
"""Where a call starts in the text of a Hermes-style template (Qwen2.5, Qwen3, the demo)."""


def read_generated(
    tokenizer: Any, ids: list[int], prompt: list[int], thinking: bool | None
) -> ChatAssistantMessage:
    """The assistant message of generated ``ids`` after ``prompt``, read as vLLM 0.32 reads
    it (``--tool-call-parser hermes``; ``--reasoning-parser qwen3`` when thinking), held to
    its recorded answers by ``tests/training/test_vllm_parity.py`` (docs/training.md, "One
    parser"): the calls the template's response parser (TRL's) reads, and a call cut off
    after its complete JSON; a call without a name or without arguments makes the whole reply
    text; arguments are the JSON of what the model wrote (a string stays a string); the
    content is the text before the first call, None when blank. The think block is
    ``reasoning_content``, kept unless ``thinking`` is False."""
    text = tokenizer.decode(ids, skip_special_tokens=True)
    try:
        parsed = tokenizer.parse_response(ids, prefix=prompt)
    except Exception:  # a malformed call reads as text, as it does on vLLM
        parsed = {"content": text}
    found = list(parsed.get("tool_calls") or []) or _cut_call(text)
    functions = [_function(call) for call in found]
    read = [f for f in functions if f is not None]
    reasoning = parsed.get("reasoning_content")
    calls: list[ChatToolCall] = []
    if not read or len(read) < len(functions):
        content = text if found else str(parsed.get("content") or "")
    else:
        content = text.split(CALL_OPEN, 1)[0]
        calls = [{"id": f"call_{i}", "type": "function", "function": f} for i, f in enumerate(read)]
    content = without_thinking(content) if thinking is False or reasoning else content
    message: ChatAssistantMessage = {"role": "assistant", "content": content.strip()}
    if thinking is not False and isinstance(reasoning, str) and reasoning.strip():
        message["reasoning_content"] = reasoning.replace(tokenizer.eos_token or "\0", "").strip()
    if calls:
        message["tool_calls"] = calls
        message["content"] = message["content"] or None
    return message


def _function(call: object) -> ChatFunction | None:
    """A parsed call as the wire's function: None without a name or without arguments."""
    fields = json_object(call) or {}
    function = json_object(fields.get("function")) or fields
    name, arguments = function.get("name"), function.get("arguments")
    if not isinstance(name, str) or not name or "arguments" not in function:
        return None
    return {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}


def _cut_call(text: str) -> list[object]:
    """A call whose end tag was cut off (by max_tokens) after its complete JSON object."""
    _, sep, tail = text.rpartition(CALL_OPEN)
    if not sep or "</tool_call>" in tail:
        return []
    try:
        call = json.loads(tail)
    except ValueError:
        return []
    return [call] if isinstance(call, dict) else []


def _stop_when(cancelled: Callable[[], bool]) -> Any:
    """transformers stopping criteria that end generation once ``cancelled()``."""
    transformers = lib("transformers")
    torch = lib("torch")

    class Cancel(transformers.StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            gone = cancelled()
            return torch.full((input_ids.shape[0],), gone, dtype=torch.bool)

    return transformers.StoppingCriteriaList([Cancel()])


def _template_message(message: object, thinking: bool | None = None) -> JsonObject:
    """An OpenAI request message as the chat template reads it (text content, object args;
    with thinking off, an assistant message without its think blocks or reasoning)."""
    fields = json_object(message)
    if fields is None:
        raise ValueError("each message must be a JSON object")
    out = dict(fields)
    content = out.get("content")
    if isinstance(content, list):
        parts = [json_object(item) for item in cast(list[object], content)]
        out["content"] = "".join(_text(part.get("text")) for part in parts if part is not None)
    elif content is None:
        out["content"] = ""
    if thinking is False:
        out = unthought(out)
    calls = out.get("tool_calls")
    if calls:
        converted: list[JsonObject] = []
        for item in json_list(calls):
            call = json_object(item)
            if call is None:
                raise ValueError("each tool call must be a JSON object")
            function = dict(json_object(call.get("function")) or {})
            raw = function.get("arguments")
            if isinstance(raw, str):
                with contextlib.suppress(json.JSONDecodeError):  # else as the model wrote it
                    function["arguments"] = json.loads(raw) if raw.strip() else {}
            converted.append({**call, "function": function})
        out["tool_calls"] = converted
    return out


def _text(value: object) -> str:
    """A content part's text ("" when it has none)."""
    return value if isinstance(value, str) else ""


def _completion(
    model: str, n: int, message: ChatAssistantMessage, prompt_tokens: int, completion_tokens: int
) -> ChatCompletion:
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


def request_thinking(body: Mapping[str, Any], default: bool | None) -> bool | None:
    """The request's ``chat_template_kwargs.enable_thinking`` (vLLM's extra parameter), else
    ``default``; a ValueError of one line for anything but a JSON object holding a boolean."""
    raw = body.get("chat_template_kwargs")
    if raw is None:
        return default
    kwargs = json_object(raw)
    if kwargs is None:
        raise ValueError("chat_template_kwargs must be a JSON object")
    value = kwargs.get("enable_thinking", default)
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"enable_thinking must be true or false, not {str(value)[:40]}")
    return value

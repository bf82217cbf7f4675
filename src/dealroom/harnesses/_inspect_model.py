"""An Inspect AI model as the one model seat's model: every call is Inspect's own ``generate``.

``InspectSeatModel`` is a ``dealroom.agents.SeatModel``, so an ``LLMPlayer`` plays with it
exactly as the tournament's ``llm:`` seat plays with its chat-completions client: the same
briefing, tools, result texts and turn rule (``dealroom.protocol.model_seat``). Only the model
call differs: the conversation goes to ``Model.generate``, so every Inspect provider works
(OpenAI, Anthropic, Google, vLLM, local ones), Inspect's retries, limits and token accounting
apply, and each call is a model event of the sample's transcript in ``inspect view``.

Two things Inspect does to what the model reads, and dealroom cannot change (docs/harnesses.md):
a tool's JSON schema passes through Inspect's ``ToolParams`` (which drops ``"nullable": true``
from the optional ``message`` parameters and adds ``"additionalProperties": false`` and
``"required": []``), and a tool call whose arguments are not JSON reaches the seat as ``{}`` (its
text lost in Inspect's parser), so it reads the missing-argument error rather than the parse
error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
)
from inspect_ai.tool import ToolInfo, ToolParams

from dealroom.agents._llm_chat import Conversation, ModelReply, Sampling, ToolCall
from dealroom.agents._llm_model import LLMError


def tool_info(schema: dict[str, Any]) -> ToolInfo:
    """One chat-completions tool schema (``{"type": "function", "function": {...}}``) as
    Inspect's ``ToolInfo``."""
    function = schema["function"]
    return ToolInfo(
        name=function["name"],
        description=function["description"],
        parameters=ToolParams.model_validate(function["parameters"]),
    )


def generate_config(sampling: Sampling) -> GenerateConfig:
    """The seat's sampling settings as Inspect's (unset ones left to ``inspect eval``'s flags)."""
    effort = sampling.reasoning_effort
    return GenerateConfig(
        temperature=sampling.temperature,
        max_tokens=sampling.max_tokens,
        reasoning_effort=effort if effort in ("minimal", "low", "medium", "high") else None,  # type: ignore[arg-type]
        extra_body=sampling.extra_body(),
    )


class InspectSeatModel:
    """A ``SeatModel`` over an Inspect ``Model``. Keeps every conversation it starts, in
    Inspect's own messages, so the solver can show the last one as the sample's messages."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.conversations: list[InspectConversation] = []

    def conversation(
        self, tools: Sequence[dict[str, Any]], sampling: Sampling, *, tracing: bool = False
    ) -> Conversation:
        del tracing  # Inspect's transcript records every call
        chat = InspectConversation(
            self.model, [tool_info(dict(t)) for t in tools], generate_config(sampling)
        )
        self.conversations.append(chat)
        return chat

    async def close(self) -> None:
        """Inspect owns the model's connections."""


class InspectConversation:
    """One seat's conversation with an Inspect model: Inspect's messages (what ``generate``
    reads) beside the same conversation as OpenAI chat messages (what dealroom stores)."""

    def __init__(self, model: Model, tools: list[ToolInfo], config: GenerateConfig) -> None:
        self.model = model
        self.tools = tools
        self.config = config
        self.inspect_messages: list[ChatMessage] = []
        self.outputs: list[ModelOutput] = []
        self._messages: list[dict[str, Any]] = []

    def add_user(self, text: str) -> None:
        self.inspect_messages.append(ChatMessageUser(content=text))
        self._messages.append({"role": "user", "content": text})

    def add_tool_result(self, call: ToolCall, output: str) -> None:
        self.inspect_messages.append(
            ChatMessageTool(content=output, tool_call_id=call.id, function=call.name)
        )
        self._messages.append({"role": "tool", "tool_call_id": call.id, "content": output})

    def messages(self) -> list[dict[str, Any]]:
        return [dict(message) for message in self._messages]

    async def respond(self) -> ModelReply:
        output = await self.model.generate(
            self.inspect_messages, tools=self.tools, config=self.config
        )
        if output.error:
            raise LLMError(f"the model answered with an error: {output.error}")
        reply = output.message
        calls = tuple(
            ToolCall(id=call.id, name=call.function, arguments=json.dumps(call.arguments))
            for call in reply.tool_calls or ()
        )
        self.inspect_messages.append(reply)
        self.outputs.append(output)
        self._messages.append(_chat_message(reply, calls))
        usage = output.usage
        return ModelReply(
            tool_calls=calls,
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
            finish_reason=output.stop_reason,
            cached_tokens=(usage.input_tokens_cache_read or 0) if usage else 0,
            reasoning_tokens=(usage.reasoning_tokens or 0) if usage else 0,
        )


def _chat_message(reply: ChatMessageAssistant, calls: tuple[ToolCall, ...]) -> dict[str, Any]:
    """The assistant's reply as the ``llm:`` seat stores one (OpenAI chat form)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return message

"""Any Agents SDK ``Model`` as an LLM seat's ``SeatModel``: LiteLLM, ``agents.testing.
ScriptedModel``, your own.

The conversation is kept as the SDK's items and the model is called through its
``get_response`` with them, as the SDK's runner would (the model's converters turn them into
its API's messages); the stored conversation is those items as chat messages. The built-in
``llm:MODEL`` seat does not come through here: its lean client (``dealroom.agents._llm_chat``)
sends the same requests for a fraction of the CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.items import ItemHelpers, TResponseInputItem
from agents.models.chatcmpl_converter import Converter
from agents.models.interface import Model, ModelTracing
from agents.tool_context import ToolContext
from openai.types.responses import ResponseFunctionToolCall
from openai.types.shared import Reasoning

from agents import FunctionTool, ModelSettings
from dealroom.agents._llm_chat import Conversation, ModelReply, Sampling, ToolCall


class SDKChatModel:
    """An Agents SDK model behind the seat's contract (``SeatModel``)."""

    def __init__(self, model: Model) -> None:
        self.model = model

    def conversation(
        self,
        tools: Sequence[dict[str, Any]],
        sampling: Sampling,
        *,
        tracing: bool = False,
    ) -> Conversation:
        settings = ModelSettings(
            temperature=sampling.temperature,
            max_tokens=sampling.max_tokens,
            reasoning=None
            if sampling.reasoning_effort is None
            else Reasoning(effort=sampling.reasoning_effort),  # type: ignore[arg-type]
            extra_body=sampling.extra_body(),
        )
        return _ItemConversation(self.model, function_tools(tools), settings, tracing)

    async def close(self) -> None:
        await self.model.close()


def function_tools(tools: Sequence[dict[str, Any]]) -> list[FunctionTool]:
    """Chat-completions tool definitions as the SDK's function tools (its chat model turns
    them back into the same definitions). The seat's loop makes the calls itself: the tools'
    own invokers are never called."""
    return [
        FunctionTool(
            name=tool["function"]["name"],
            description=tool["function"]["description"],
            params_json_schema=tool["function"]["parameters"],
            on_invoke_tool=_not_invoked,
            strict_json_schema=tool["function"].get("strict", False),
        )
        for tool in tools
    ]


async def _not_invoked(ctx: ToolContext[Any], raw: str) -> str:
    del ctx, raw
    raise RuntimeError("the LLM seat's turn loop makes the tool calls")  # pragma: no cover


class _ItemConversation:
    def __init__(
        self,
        model: Model,
        tools: list[FunctionTool],
        settings: ModelSettings,
        tracing: bool,
    ) -> None:
        self.model = model
        self.tools = tools
        self.settings = settings
        self.tracing = ModelTracing.ENABLED if tracing else ModelTracing.DISABLED
        self.items: list[TResponseInputItem] = []
        self._calls: dict[str, ResponseFunctionToolCall] = {}

    def add_user(self, text: str) -> None:
        self.items.append({"role": "user", "content": text})

    def add_tool_result(self, call: ToolCall, output: str) -> None:
        self.items.append(ItemHelpers.tool_call_output_item(self._calls[call.id], output))

    async def respond(self) -> ModelReply:
        response = await self.model.get_response(
            None,
            self.items,
            self.settings,
            list(self.tools),
            None,
            [],
            self.tracing,
            previous_response_id=None,
            conversation_id=None,
            prompt=None,
        )
        self.items.extend(response.to_input_items())
        calls = [i for i in response.output if isinstance(i, ResponseFunctionToolCall)]
        self._calls.update((call.call_id, call) for call in calls)
        usage = response.usage
        return ModelReply(
            tuple(ToolCall(call.call_id, call.name, call.arguments) for call in calls),
            usage.input_tokens,
            usage.output_tokens,
            cached_tokens=usage.input_tokens_details.cached_tokens or 0,
            reasoning_tokens=usage.output_tokens_details.reasoning_tokens or 0,
        )

    def messages(self) -> list[dict[str, Any]]:
        return list(Converter.items_to_messages(self.items))  # type: ignore[arg-type]

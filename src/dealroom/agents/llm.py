"""An LLM in a seat, on the OpenAI Agents SDK: ``llm:MODEL`` against any OpenAI-compatible API.

The seat plays the one model seat (``dealroom.protocol.model_seat``): the conversation a model
reads wherever it plays, the GRPO learner's in TRL's rollout loop included. Its only opening
message is the seat's briefing (the server's ``briefing`` prompt); its tools are
``model_seat.tools(rules)``; each reply's tool calls are made on the seat's MCP tools in the
order written and answered with the text the tool returned (``dealroom.protocol.seat_text``),
news included (``wait_for_opponent``'s result). A reply without tool calls ends the seat's play:
the seat then waits silently until the negotiation ends (its live offer can still be accepted).
At most ``max_tool_rounds`` replies' calls are made per negotiation; once the negotiation is
over, no model call is made. Thinking costs ``rules.thinking.per_wake`` on the seat's first
action after each wait, charged by the room as for every seat.

The model is a ``SeatModel`` (``dealroom.agents._llm_chat``): for ``llm:MODEL``, a lean client
of the endpoint's chat completions that sends the requests the Agents SDK's chat model would
send, for a fraction of the CPU; any Agents SDK ``Model`` (LiteLLM, ``agents.testing.
ScriptedModel``, your own) plays through the same contract, called through its
``get_response`` with the SDK's items. The loop is this module's own (``_Game``), not
``Runner.run``: a seat needs none of the runner's handoffs, guardrails, hooks or run state,
which cost more CPU per model call than the seat itself (``benchmarks/orchestration.py``).

Errors: a call that cannot be made as written (no such tool, arguments that do not fit) reads
the text TRL's loop writes for it; refusals read ``code: sentence. hint.``; both are counted.
Transient API errors are retried with bounded backoff, and each attempt is bounded in time
(``RetryPolicy``). A conversation that outgrew the model's context (the endpoint refuses it,
``ContextFull``) ends the seat's play as a text reply would: the seat sits out, the negotiation
goes on, and the seat's data says ``ended_by: "context"``. A model call that still fails raises
``PlayerFailed``: the match runner then walks away for the seat and records the error beside
the negotiation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Self

from mcp.types import CallToolResult

from dealroom.agents._llm_chat import Conversation, ModelReply, Sampling, SeatModel
from dealroom.agents._llm_loop import TurnLoop
from dealroom.agents._llm_model import (
    LLMConfigError,
    LLMError,
    Meter,
    ModelSpec,
    RetryPolicy,
    build_model,
    parse_llm_spec,
    reported_tokens,
)
from dealroom.agents._llm_tools import SeatTools, ToolStats, render_result
from dealroom.client.seat import SeatClient
from dealroom.play.players import Endpoint, PlayerFailed, SeatContext
from dealroom.play.registry import is_llm_spec
from dealroom.protocol import WaitResult, model_seat
from dealroom.protocol.model_seat import MAX_TOOL_ROUNDS

if TYPE_CHECKING:
    from agents import Model

__all__ = [
    "LLMConfigError",
    "LLMError",
    "LLMPlayer",
    "LLMSettings",
    "Prices",
    "RetryPolicy",
    "is_llm_spec",
]

ReasoningEffort = Literal["minimal", "low", "medium", "high"]


@dataclass(frozen=True, slots=True)
class Prices:
    """What a model's tokens cost, in USD per million."""

    input_per_million: float
    output_per_million: float
    cached_input_per_million: float | None = None
    """Input read from the provider's prompt cache (None: billed as any input)."""

    def cost(self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0) -> float:
        """USD for that many tokens (``cached_input_tokens`` are part of ``input_tokens``)."""
        cached = min(cached_input_tokens, input_tokens)
        cached_price = (
            self.input_per_million
            if self.cached_input_per_million is None
            else self.cached_input_per_million
        )
        return (
            (input_tokens - cached) * self.input_per_million
            + cached * cached_price
            + output_tokens * self.output_per_million
        ) / 1e6


@dataclass(frozen=True, slots=True)
class LLMSettings:
    """How an LLM seat runs."""

    max_tool_rounds: int = MAX_TOOL_ROUNDS
    """Most replies whose tool calls are made per negotiation (TRL's
    ``max_tool_calling_iterations``); a reply past it ends the seat's play
    (``turn_limit_hits``)."""
    wait_timeout_s: float = 20.0
    """Timeout of the silent waits of a seat whose play has ended."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: ReasoningEffort | None = None
    """Passed as the API's reasoning effort, where it has one."""
    enable_thinking: bool | None = None
    """The served chat template's thinking switch (``chat_template_kwargs``, as vLLM and
    ``train serve`` read it); None: not sent."""
    prices: Prices | None = None
    """Prices of the model's tokens (None: its cost is not known, stored as null)."""
    tracing: bool = False
    """Send traces to the Agents SDK's trace processors (off: nothing leaves the machine)."""
    elicit_beliefs: bool = False
    """After the negotiation has ended, ask the model once for its estimate of the other
    side's private number (``model_seat.belief_question``), stored as the seat's ``belief``."""


class LLMPlayer:
    """A ``Player`` that lets a language model play the seat through its MCP tools: ``model``
    is a ``SeatModel`` or any Agents SDK ``Model``."""

    def __init__(
        self, model: SeatModel | Model, *, name: str, settings: LLMSettings | None = None
    ) -> None:
        self.model: SeatModel = chat_model(model)
        self.name = name
        self.settings = settings or LLMSettings()
        self.endpoint: Endpoint | None = None
        """Set by a roster: tournaments limit the negotiations in flight on it."""

    @classmethod
    def from_spec(
        cls,
        spec: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        settings: LLMSettings | None = None,
    ) -> LLMPlayer:
        """``llm:MODEL`` on an OpenAI-compatible endpoint (``base_url``, else
        ``$OPENAI_BASE_URL``, else OpenAI), or ``llm:litellm/PROVIDER/MODEL`` with the litellm
        extra. Raises LLMConfigError for a bad spec or missing key."""
        settings = settings or LLMSettings()
        model_spec = ModelSpec(
            model=parse_llm_spec(spec), base_url=base_url, api_key=api_key, retry=settings.retry
        )
        return cls(build_model(model_spec), name=spec.strip(), settings=settings)

    async def aclose(self) -> None:
        """Close the model's connections (call it in the event loop that used them)."""
        await self.model.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """``async with LLMPlayer.from_spec(...) as player:`` closes its connections at the end."""
        await self.aclose()

    async def play(self, seat: SeatClient, context: SeatContext) -> Mapping[str, Any]:
        """Play the seat's negotiation to its end, one model loop per wake."""
        game = _Game(self, seat, context)
        try:
            await game.run()
        except LLMError as exc:
            raise PlayerFailed(str(exc), game.extra(error=str(exc))) from exc
        except PlayerFailed:
            raise
        except Exception as exc:  # the SDK's own errors (e.g. ModelBehaviorError)
            message = f"{type(exc).__name__}: {exc}"
            raise PlayerFailed(message, game.extra(error=message)) from exc
        return game.extra()


def usage_fields(meter: Meter, prices: Prices | None) -> dict[str, Any]:
    """A seat's model usage over a game and its cost (null where the prices are not known),
    as stored beside the game."""
    usage = meter.usage
    cost = None
    if prices is not None:
        tokens = (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
        cost = round(prices.cost(*tokens), 8)
    return {**usage.as_dict(), "cost_usd": cost}


def call_usage(completion: ModelReply, prices: Prices | None) -> dict[str, Any]:
    """One model call's usage, counted as the meter counts it, as the paid-call journal
    (``dealroom.store.paid``) takes it the moment the call returns."""
    tokens_in = reported_tokens(completion.input_tokens)
    tokens_out = reported_tokens(completion.output_tokens)
    cached = min(reported_tokens(completion.cached_tokens), tokens_in)
    return {
        "model_calls": 1,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cached_input_tokens": cached,
        "cost_usd": None if prices is None else prices.cost(tokens_in, tokens_out, cached),
    }


def chat_model(model: SeatModel | Model) -> SeatModel:
    """The seat's contract for a model: a ``SeatModel`` as it is, an SDK model adapted."""
    if hasattr(model, "conversation"):
        return model  # type: ignore[return-value]
    from dealroom.agents._llm_sdk import SDKChatModel

    return SDKChatModel(model)  # type: ignore[arg-type]


class _Game:
    """One negotiation of one LLM seat: its tools, its conversation and its counters."""

    def __init__(self, player: LLMPlayer, seat: SeatClient, context: SeatContext) -> None:
        self.player = player
        self.settings = player.settings
        self.seat = seat
        self.context = context
        self.stats = ToolStats()
        self.meter = Meter(self.settings.retry)
        self.meter.on_completion = self._on_completion
        self.sampling = Sampling(
            temperature=self.settings.temperature,
            max_tokens=self.settings.max_tokens,
            reasoning_effort=self.settings.reasoning_effort,
            enable_thinking=self.settings.enable_thinking,
        )
        self.turns = TurnLoop(self.meter, self.settings.max_tool_rounds)
        self.over = False
        self.tools = SeatTools(seat, context.rules, self.stats, self._on_result)
        self.chat: Conversation | None = None
        self.belief: dict[str, Any] | None = None
        """The answer to the belief question (``--elicit-beliefs``), once asked."""

    def extra(self, error: str | None = None) -> dict[str, Any]:
        """What is stored beside the negotiation for this seat: usage, counts, cost, and the
        model's own conversation (what it read and wrote, as chat messages, with its tools)."""
        data: dict[str, Any] = {
            **self.turns.as_dict(),
            **usage_fields(self.meter, self.settings.prices),
            **self.stats.as_dict(),
            "conversation": self.conversation(),
        }
        if self.belief is not None:
            data["belief"] = self.belief
        if error is not None:
            data["error"] = error
        return data

    def conversation(self) -> dict[str, Any]:
        """The model's conversation as OpenAI chat messages and its tools."""
        if self.chat is None:
            return {"messages": [], "tools": []}
        return {"messages": self.chat.messages(), "tools": self.tools.definitions}

    async def run(self) -> None:
        self.chat = self.player.model.conversation(
            self.tools.definitions, self.sampling, tracing=self.settings.tracing
        )
        for message in model_seat.opening(await self.seat.briefing()):
            self.chat.add_user(message["content"])
        if self.settings.tracing:
            from agents import trace

            with trace(f"dealroom-{self.context.role}"):
                await self._play(self.chat)
        else:
            await self._play(self.chat)
        await self._sit_out()
        if self.settings.elicit_beliefs:
            await self._elicit_belief(self.chat)

    async def _play(self, chat: Conversation) -> None:
        """Model calls until a reply without tool calls, the round limit or the end."""
        await self.turns.run(chat, self.tools.call, lambda: self.over)

    async def _sit_out(self) -> None:
        """The seat's play has ended: wait silently (no model call) until the negotiation
        does; its live offer can still be accepted."""
        while not self.over:
            arguments = {"timeout_s": self.settings.wait_timeout_s}
            result = await self.seat.call_tool("wait_for_opponent", arguments)
            if result.is_error or result.structured_content is None:
                raise LLMError(f"wait_for_opponent failed: {render_result(result)}")
            self.over = WaitResult.model_validate(result.structured_content).outcome is not None

    async def _elicit_belief(self, chat: Conversation) -> None:
        """The negotiation is over: ask once what the model believes the other side's number
        was. A failed call is stored as the belief's error, not the seat's: play was done."""
        chat.add_user(model_seat.belief_question(self.context.role))
        try:
            await self.meter.respond(chat)
        except LLMError as exc:
            self.belief = {"error": str(exc)}
            return
        content: Any = chat.messages()[-1].get("content") or ""
        if isinstance(content, list):  # content parts, as the Agents SDK's converter writes
            content = "".join(str(part.get("text", "")) for part in content)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType, reportUnknownArgumentType]
        reply = str(content)
        parsed = model_seat.parse_belief(reply)
        self.belief = (
            {**parsed, "reply": reply} if parsed else {"error": "unparsed", "reply": reply}
        )

    # -- hooks ------------------------------------------------------------------------------

    def _report(self) -> None:
        if self.context.report is not None:
            self.context.report(self.extra())

    def _on_completion(self, completion: ModelReply) -> None:
        self._report()
        if self.context.on_model_call is not None:
            self.context.on_model_call(call_usage(completion, self.settings.prices))

    def _on_result(self, name: str, result: CallToolResult) -> None:
        del name
        self._report()
        content = result.structured_content
        if result.is_error or content is None:
            return
        if content.get("outcome") is not None or content.get("observation", {}).get("outcome"):
            self.over = True

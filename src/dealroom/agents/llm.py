"""An LLM in a seat, on the OpenAI Agents SDK: ``llm:MODEL`` against any OpenAI-compatible API.

The model's tools are the seat's own MCP tools (listed from the server, schemas and all); its
first user message is the seat's briefing (the server's ``briefing`` prompt, the same text in the
same role as on every surface) and its instructions say how its turns work. Each wake is one
turn: the model gets the news (the text a tool returned: the one model-facing text of
``dealroom.protocol.seat_text``), acts through tool calls, and ends its turn by calling
``wait_for_opponent`` or by replying in text; at most ``max_turns`` model calls per wake. The
conversation carries over between wakes.

The model is a ``SeatModel`` (``dealroom.agents._llm_chat``): for ``llm:MODEL``, a lean client
of the endpoint's chat completions that sends the requests the Agents SDK's chat model would
send, for a fraction of the CPU; any Agents SDK ``Model`` (LiteLLM, ``agents.testing.
ScriptedModel``, your own) plays through the same contract, called through its
``get_response`` with the SDK's items. The turn loop is this module's own (``_Game._turn``),
not ``Runner.run``: a seat's turn needs none of the runner's handoffs, guardrails, hooks or run
state, which cost more CPU per model call than the seat itself
(``benchmarks/orchestration.py``).

Clock: where the room runs in this process on the virtual clock, each model call is charged
``rules.thinking.per_model_call`` seconds plus ``per_output_token`` per generated token, before
the action it leads to (instead of the flat per-wake cost). Over HTTP the server charges its
per-wake cost.

Errors: tool errors (refusals, bad arguments, unknown tools) go back to the model as the tool's
output and are counted; ``rules.max_invalid_actions`` malformed calls in a row (arguments that
are not a JSON object, tools that do not exist: calls the referee never sees, so they cannot
forfeit, and arguments a tool refused: a model that keeps sending ``{"price": true}``) end the
seat's run as an error, as a model that keeps failing would. Transient API
errors are retried with bounded backoff, and each attempt is bounded in time (``RetryPolicy``).
A model call that still fails raises ``PlayerFailed``: the match runner then walks away for the
seat and records the error beside the negotiation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from mcp.types import CallToolResult

from dealroom.agents._llm_chat import Conversation, ModelReply, Sampling, SeatModel
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
from dealroom.protocol import Rules, WaitResult

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


def is_llm_spec(spec: str) -> bool:
    """True for ``llm:MODEL`` specs."""
    return spec.strip().startswith("llm:")


@dataclass(frozen=True, slots=True)
class Prices:
    """What a model's tokens cost, in USD per million."""

    input_per_million: float
    output_per_million: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """USD for that many tokens."""
        return (
            input_tokens * self.input_per_million + output_tokens * self.output_per_million
        ) / 1e6


@dataclass(frozen=True, slots=True)
class LLMSettings:
    """How an LLM seat runs."""

    max_turns: int = 6
    """Most model calls per wake; past it the turn ends (counted in ``turn_limit_hits``)."""
    max_wakes: int = 500
    """Most wakes per negotiation (a runaway guard; the deadline normally comes first)."""
    wait_timeout_s: float = 20.0
    """Timeout of the seat loop's own wait_for_opponent calls."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: ReasoningEffort | None = None
    """Passed as the API's reasoning effort, where it has one."""
    prices: Prices | None = None
    """Prices of the model's tokens (None: its cost is not known, stored as null)."""
    tracing: bool = False
    """Send traces to the Agents SDK's trace processors (off: nothing leaves the machine)."""


class LLMPlayer:
    """A ``Player`` that lets a language model play the seat through its MCP tools: ``model``
    is a ``SeatModel`` or any Agents SDK ``Model``."""

    def __init__(
        self, model: SeatModel | Model, *, name: str, settings: LLMSettings | None = None
    ) -> None:
        self.model: SeatModel = _chat_model(model)
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


def _chat_model(model: SeatModel | Model) -> SeatModel:
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
        )
        self.instructions = instructions(context.rules, self.settings, self.charged)
        self.wakes = 0
        self.turn_limit_hits = 0
        self.thinking_s = 0.0
        self.over = False
        self.last_wait: WaitResult | None = None
        self.tools: SeatTools | None = None
        self.chat: Conversation | None = None

    def extra(self, error: str | None = None) -> dict[str, Any]:
        """What is stored beside the negotiation for this seat: usage, counts, cost, and the
        model's own conversation (what it read and wrote, as chat messages, with its tools)."""
        usage = self.meter.usage
        prices = self.settings.prices
        data: dict[str, Any] = {
            "wakes": self.wakes,
            "turn_limit_hits": self.turn_limit_hits,
            "thinking_s": round(self.thinking_s, 3),
            **usage.as_dict(),
            "cost_usd": None
            if prices is None
            else round(prices.cost(usage.input_tokens, usage.output_tokens), 8),
            **self.stats.as_dict(),
            "conversation": self.conversation(),
        }
        if error is not None:
            data["error"] = error
        return data

    def conversation(self) -> dict[str, Any]:
        """The model's conversation as OpenAI chat messages (system message first) and tools."""
        if self.tools is None or self.chat is None:
            return {"messages": [], "tools": []}
        return {"messages": self.chat.messages(), "tools": self.tools.definitions}

    async def run(self) -> None:
        self.tools = await SeatTools.of(self.seat, self.stats, self._on_result)
        self.chat = self.player.model.conversation(
            self.instructions, self.tools.definitions, self.sampling, tracing=self.settings.tracing
        )
        # The briefing is the first user message, as on every surface (MCP hosts, the TRL
        # environment, the SFT export); the model then acts through the tools.
        message = await self.seat.briefing()
        while not self.over:
            self.wakes += 1
            if self.wakes > self.settings.max_wakes:
                raise LLMError(f"more than {self.settings.max_wakes} wakes")
            self.last_wait = None
            self.chat.add_user(message)
            if self.settings.tracing:
                from agents import trace

                with trace(f"dealroom-{self.context.role}"):
                    await self._turn(self.tools, self.chat)
            else:
                await self._turn(self.tools, self.chat)
            if self.over:
                break
            if self._malformed():
                raise LLMError(
                    f"{self.stats.malformed_in_a_row} malformed tool calls in a row "
                    "(arguments that are not JSON objects or that the tools refused, or tools "
                    "that do not exist)"
                )
            message = await self._next_message()

    async def _turn(self, tools: SeatTools, chat: Conversation) -> None:
        """One wake: model calls, each reply's tool calls made in the model's order, until
        the turn ends (wait_for_opponent, a reply without tool calls, the end of the
        negotiation, too many malformed calls) or ``max_turns`` model calls are spent."""
        for _ in range(self.settings.max_turns):
            completion = await self.meter.respond(chat)
            if not completion.tool_calls:
                return
            for call in completion.tool_calls:
                chat.add_tool_result(call, await tools.call(call.name, call.arguments))
            waited = any(call.name == "wait_for_opponent" for call in completion.tool_calls)
            if waited or self.over or self._malformed():
                return
        self.turn_limit_hits += 1

    @property
    def charged(self) -> bool:
        return self.context.charge is not None

    async def _next_message(self) -> str:
        """Sleep until the next wake; the user message that starts it."""
        wait, text = self.last_wait, ""
        while wait is None or wait.woke == "pending":
            arguments = {"timeout_s": self.settings.wait_timeout_s}
            result = await self.seat.call_tool("wait_for_opponent", arguments)
            if result.is_error or result.structured_content is None:
                raise LLMError(f"wait_for_opponent failed: {render_result(result)}")
            wait, text = WaitResult.model_validate(result.structured_content), render_result(result)
        self.over = wait.outcome is not None
        if text:
            return "Your turn. wait_for_opponent returned:\n" + text
        return "Your turn (the wait_for_opponent result above has the news)."

    # -- hooks ------------------------------------------------------------------------------

    def _report(self) -> None:
        if self.context.report is not None:
            self.context.report(self.extra())

    def _on_completion(self, completion: ModelReply) -> None:
        self._report()
        if self.context.charge is not None:
            thinking = self.context.rules.thinking
            seconds = thinking.per_model_call + thinking.per_output_token * reported_tokens(
                completion.output_tokens
            )
            self.thinking_s += seconds
            self.context.charge(seconds)

    def _on_result(self, name: str, result: CallToolResult) -> None:
        self._report()
        content = result.structured_content
        if result.is_error or content is None:
            return
        if content.get("outcome") is not None or content.get("observation", {}).get("outcome"):
            self.over = True
        if name == "wait_for_opponent":
            self.last_wait = WaitResult.model_validate(content)

    def _malformed(self) -> bool:
        return self.stats.malformed_in_a_row >= self.context.rules.max_invalid_actions


def instructions(rules: Rules, settings: LLMSettings, charged: bool) -> str:
    """How an LLM seat's turns work (the briefing itself is the first user message)."""
    thinking = rules.thinking
    if charged:
        cost = (
            f"Thinking costs clock time too: each of your model calls {thinking.per_model_call:g} "
            f"s plus {thinking.per_output_token:g} s per output token, so be brief."
        )
    else:
        cost = f"Each turn costs {thinking.per_wake:g} s of thinking on the clock."
    return f"""How your turns work:
- You are woken when the other side acts or when the time you asked to wait has passed; the \
message that wakes you holds the news as the wait_for_opponent result.
- On your turn, act with the tools, then call wait_for_opponent to end your turn. You have at \
most {settings.max_turns} model calls per turn.
- {cost}
- A tool error means nothing happened; read it and try again or do something else.
"""

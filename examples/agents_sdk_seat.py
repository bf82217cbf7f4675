"""Your own OpenAI Agents SDK agent in a dealroom seat, played until the negotiation ends.

    OPENAI_API_KEY=... python examples/agents_sdk_seat.py   # OPENAI_BASE_URL for another server

docs/agents.md shows this file; tests/test_agents_doc.py runs it as it is, against a loopback
chat-completions server, and checks that the results store holds the finished negotiation.
"""

import asyncio
from typing import Any

from agents.mcp import MCPServerStdio

from agents import Agent, Runner, TResponseInputItem, set_default_openai_api

# Chat completions, which OpenAI and every OpenAI-compatible server (vLLM, llama.cpp, ...)
# answer; the SDK's default, the Responses API, is OpenAI's own.
set_default_openai_api("chat_completions")

NUDGE = (
    "The negotiation is not over yet. Go on with the tools (wait_for_opponent for the other "
    "side's next move) until it ends."
)


async def outcome(dealroom: MCPServerStdio) -> dict[str, Any] | None:
    """The seat's outcome once the negotiation has ended; None while it goes on."""
    state = await dealroom.call_tool("get_state", {})
    return state.structured_content["observation"]["outcome"]


async def main() -> None:
    async with MCPServerStdio(
        params={
            "command": "dealroom",
            "args": ["serve", "--role", "buyer", "--opponent", "boulware"],
        },
        # Longer than any one tool call: on a wall-clock room wait_for_opponent takes up to
        # 60 real seconds.
        client_session_timeout_seconds=90,
    ) as dealroom:
        briefing = await dealroom.get_prompt("briefing")  # the first user message
        agent = Agent(
            name="buyer",
            instructions="Negotiate until the negotiation is over: make offers, then "
            "wait_for_opponent.",
            model="gpt-4.1-mini",
            mcp_servers=[dealroom],
        )
        conversation: list[TResponseInputItem] = [
            {"role": "user", "content": briefing.messages[0].content.text}
        ]
        # A run ends at the model's first reply without tool calls ("I'll wait for their
        # answer."), which is rarely the end of the negotiation: ask the seat, and run the
        # agent again on the whole conversation until it has an outcome.
        for _ in range(20):
            result = await Runner.run(agent, conversation, max_turns=60)
            ended = await outcome(dealroom)
            if ended is not None:
                break
            conversation = [*result.to_input_list(), {"role": "user", "content": NUDGE}]
        else:  # the model never finished: end it, so that the negotiation is stored
            await dealroom.call_tool("walk_away", {})
            ended = await outcome(dealroom)
        print(ended)


asyncio.run(main())

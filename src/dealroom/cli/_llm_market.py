"""``dealroom match --buyers N --seller llm:MODEL``: a model in a market's seller seat.

The model plays the seller on the virtual clock (``dealroom.agents.llm_market``) against
scripted buyers; the market is printed as scripted markets are, with the model's usage and
error below. Imported only when a model sells, so that the Agents SDK is loaded only then.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import anyio

from dealroom.agents.llm import LLMPlayer
from dealroom.agents.llm_market import play_llm_market
from dealroom.analysis.market import format_market
from dealroom.cli._common import usage_error
from dealroom.cli._players import KeepMarket, player
from dealroom.play.players import closing
from dealroom.protocol import AgentFactory
from dealroom.protocol.market import MarketScenario
from dealroom.protocol.secret import Seed


def run(
    args: argparse.Namespace,
    market: MarketScenario,
    buyers: Sequence[AgentFactory],
    specs: Sequence[str],
    seed: Seed,
    keep: KeepMarket,
) -> int:
    """Play and print; exit status 1 if the seller's model failed (its error is printed)."""
    seller = player(args.seller, args)
    if not isinstance(seller, LLMPlayer):
        raise usage_error(f"--seller {args.seller}: a market seller is scripted or llm:MODEL")
    paid = keep.paid("seller", seller.name)
    record, extra = anyio.run(
        lambda: closing(
            (seller,),
            lambda: play_llm_market(
                market, seller, buyers, buyer_names=specs, seed=seed, on_model_call=paid
            ),
        )
    )
    keep(record, {"seller": extra})
    if args.json:
        body: dict[str, Any] = json.loads(record.model_dump_json())
        body["extra"] = {"seller": extra}
        sys.stdout.write(json.dumps(body) + "\n")
    else:
        lines = [format_market(record), _usage(seller.name, extra)]
        if "error" in extra:
            lines.append(f"  error (seller): {extra['error']}")
        sys.stdout.write("\n".join(lines) + "\n")
    return 1 if "error" in extra else 0


def _usage(name: str, data: dict[str, Any]) -> str:
    return (
        f"  seller {name}: {data['model_calls']} model calls, {data['output_tokens']} output "
        f"tokens, {data['latency_s']:g} s in the model, {data['invalid_tool_calls']} invalid and "
        f"{data['refused_tool_calls']} refused tool calls"
    )

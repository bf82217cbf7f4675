"""``dealroom match --buyers N --seller SELLER --buyer llm:MODEL``: models in a market's buyer
seats, and in its seller's seat too if ``SELLER`` is ``llm:MODEL``.

Each model buyer plays its seat through the tools an MCP buyer client of a market room is served
(``dealroom.play.market_players``), a model seller through the seat a seller client is served
(``dealroom.agents.llm_market_served``), beside scripted seats, on the virtual clock; the market
is printed as scripted markets are, with each model seat's usage and error below (``--json``:
its data under ``extra``, by seat). Imported only when a model buys, so that the Agents SDK is
loaded only then.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import anyio

from dealroom.agents.llm import LLMPlayer
from dealroom.agents.llm_market_served import model_market_player
from dealroom.agents.market import market_seller
from dealroom.analysis.market import format_market
from dealroom.cli._common import usage_error
from dealroom.cli._players import KeepMarket, player
from dealroom.engine.market_turns import SELLER
from dealroom.play.market_players import play_served_market
from dealroom.play.players import closing
from dealroom.play.registry import AgentSpecError, is_llm_spec, resolve
from dealroom.protocol.market import DEFAULT_MARKET_RULES, MarketScenario
from dealroom.protocol.secret import Seed
from dealroom.server.market_room import MarketPlayer, SellerHouse
from dealroom.server.room_settings import House


def run(
    args: argparse.Namespace,
    market: MarketScenario,
    specs: Sequence[str],
    seed: Seed,
    keep: KeepMarket,
) -> int:
    """Play and print; exit status 1 if a model seat failed (its error is printed)."""
    built: dict[str, LLMPlayer] = {}

    def model(spec: str) -> MarketPlayer:
        if spec not in built:
            chosen = player(spec, args)
            if not isinstance(chosen, LLMPlayer):
                raise usage_error(f"{spec}: a market's seat is a scripted agent or llm:MODEL")
            built[spec] = chosen
        return model_market_player(built[spec], paid=keep.paid)

    seller: SellerHouse | MarketPlayer
    if is_llm_spec(args.seller):
        seller = model(args.seller)
    else:
        try:
            seller = SellerHouse(args.seller, market_seller(args.seller))
        except AgentSpecError as exc:
            raise usage_error(f"--seller {args.seller}: {exc}") from None
    seats: dict[str, House | MarketPlayer] = {}
    for name, spec in zip(market.buyers, specs, strict=True):
        if is_llm_spec(spec):
            seats[name] = model(spec)
            continue
        try:
            seats[name] = House(spec, resolve(spec))
        except AgentSpecError as exc:
            raise usage_error(f"--buyer {spec}: {exc}") from None
    record, played = anyio.run(
        lambda: closing(
            built.values(),
            lambda: play_served_market(
                market, DEFAULT_MARKET_RULES, seller=seller, buyers=seats, seed=seed
            ),
        )
    )
    keep(record, played)
    if args.json:
        body: dict[str, Any] = json.loads(record.model_dump_json())
        body["extra"] = played
        sys.stdout.write(json.dumps(body) + "\n")
    else:
        lines = [format_market(record)]
        lines += [usage_line(_role(seat), data) for seat, data in played.items()]
        lines += [f"  error ({seat}): {d['error']}" for seat, d in played.items() if "error" in d]
        sys.stdout.write("\n".join(lines) + "\n")
    return 1 if any("error" in data for data in played.values()) else 0


def _role(seat: str) -> str:
    return seat if seat == SELLER else f"buyer {seat}"


def usage_line(seat: str, data: dict[str, Any]) -> str:
    """One model seat's usage over the market, as printed below it."""
    return (
        f"  {seat} {data['name']}: {data['model_calls']} model calls, {data['output_tokens']} "
        f"output tokens, {data['latency_s']:g} s in the model, {data['invalid_tool_calls']} "
        f"invalid and {data['refused_tool_calls']} refused tool calls"
    )

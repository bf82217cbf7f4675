"""``dealroom match`` and ``dealroom agents``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dealroom.agents import MissingExtraError, entries, families, seat_entries
from dealroom.agents.market import MARKET_SELLERS, market_seller
from dealroom.analysis.market import format_market
from dealroom.analysis.transcript import format_record
from dealroom.cli._common import (
    Commands,
    add_scenario_flags,
    agent,
    positive_int,
    report_fresh_secret,
    run_secret,
    scenario,
    usage_error,
)
from dealroom.cli._players import (
    KeepMarket,
    add_llm_flags,
    add_mcp_flags,
    check_unstored,
    market_match_key,
    match_key,
    needs_mcp,
    store_match,
)
from dealroom.engine.market import play_market
from dealroom.engine.match import play
from dealroom.play.registry import AgentSpecError, is_llm_spec, resolve, split_specs
from dealroom.protocol.market import MAX_BUYERS
from dealroom.protocol.market_scenarios import market_at
from dealroom.protocol.secret import Seed, seed_json


def add(commands: Commands) -> None:
    """Register the subcommands."""
    match = commands.add_parser("match", help="play one negotiation between two agents")
    match.add_argument(
        "--buyer",
        required=True,
        help="agent spec, e.g. boulware, boulware:e=0.1, llm:gpt-4.1-mini or human",
    )
    match.add_argument(
        "--seller",
        required=True,
        help="agent spec; with --buyers, a market seller (auctioneer, sequential) or any "
        "scripted spec, run in every buyer's thread",
    )
    match.add_argument(
        "--buyers",
        type=market_size,
        help="play a market of this many buyers (1 to 16) against the one seller; --buyer is "
        "one spec (scripted or llm:MODEL) for every buyer, or one per buyer separated by commas",
    )
    add_scenario_flags(match, public=True)
    match.add_argument("--json", action="store_true", help="print one JSON object")
    add_llm_flags(match)
    add_mcp_flags(match)
    match.set_defaults(handler=run_match)

    listing = commands.add_parser("agents", help="list the available agents")
    listing.set_defaults(handler=run_agents)


def run_match(args: argparse.Namespace) -> int:
    """Play and print. Scripted agents play in process; LLM agents and people (or --server)
    play through MCP seats."""
    if args.buyers is not None:
        return run_market(args)
    if needs_mcp(args.buyer, args.seller) or args.server:
        from dealroom.cli import _mcp_match

        return _mcp_match.run(args)
    if args.clock == "wall":
        raise usage_error(
            "--clock wall needs an LLM or human player (scripted matches are virtual)"
        )
    buyer, seller = agent(args.buyer), agent(args.seller)
    secret, given = run_secret(args, public=True)
    chosen = scenario(args, secret)
    if args.results is not None:
        check_unstored(args.results, match_key(chosen.id, args.buyer, args.seller))
    record = play(chosen, buyer, seller, names=(args.buyer, args.seller), seed=secret)
    if args.results is not None:
        store_match(args.results, record, seed_json(secret))
    sys.stdout.write((record.model_dump_json() if args.json else format_record(record)) + "\n")
    report_fresh_secret(secret, given)
    return 0


def market_size(text: str) -> int:
    """argparse type: a number of buyers a market can have."""
    value = positive_int(text)
    if value > MAX_BUYERS:
        raise argparse.ArgumentTypeError(f"at most {MAX_BUYERS} buyers: {text!r}")
    return value


def run_market(args: argparse.Namespace) -> int:
    """Play one market on the virtual clock and print it: scripted agents, a model in the
    seller's seat (``--seller llm:MODEL``) against scripted buyers, or models in buyer seats
    (``--buyer llm:MODEL``, alone or among scripted specs) against a scripted or model seller."""
    if args.scenario is not None:
        raise usage_error("--scenario is for bilateral matches: a market draws its own")
    if args.clock == "wall" or args.server:
        raise usage_error("markets play on the virtual clock for now (no --clock wall or --server)")
    specs = split_specs(args.buyer)
    if len(specs) not in (1, args.buyers):
        raise usage_error(f"--buyer: one spec, or {args.buyers} (one per buyer); got {len(specs)}")
    specs = specs * args.buyers if len(specs) == 1 else specs
    model_buyers = any(is_llm_spec(spec) for spec in specs)
    try:
        seller = None if is_llm_spec(args.seller) else market_seller(args.seller)
        buyers = [resolve(spec) for spec in specs if not is_llm_spec(spec)]
    except AgentSpecError as exc:
        raise usage_error(str(exc)) from None
    secret, given = run_secret(args, public=True)
    market = market_at(secret, 0, args.tier, args.buyers)
    keep = _keeper(args.results, market_match_key(market.id, args.seller, specs), secret)
    if model_buyers:
        from dealroom.cli import _llm_market_buyers

        status = _llm_market_buyers.run(args, market, specs, secret, keep)
        report_fresh_secret(secret, given)
        return status
    if seller is None:
        from dealroom.cli import _llm_market

        status = _llm_market.run(args, market, buyers, specs, secret, keep)
        report_fresh_secret(secret, given)
        return status
    record = play_market(market, seller, buyers, names=(args.seller, specs), seed=secret)
    keep(record, {})
    sys.stdout.write((record.model_dump_json() if args.json else format_market(record)) + "\n")
    report_fresh_secret(secret, given)
    return 0


def _keeper(results: Path | None, key: str, secret: Seed) -> KeepMarket:
    """What stores the finished market (``--results``: under ``key``, its model seats' data by
    seat and the secret beside it), after checking that the store can take it before any play;
    nothing without ``--results``."""
    if results is not None:
        check_unstored(results, key, market=True)
    return KeepMarket(results, key, secret)


def run_agents(args: argparse.Namespace) -> int:
    """One line per agent."""
    del args
    for entry in entries():
        params = ", ".join(f"{k}={v:g}" for k, v in entry.defaults.items())
        sys.stdout.write(
            f"{entry.name:<12} {entry.summary}" + (f"  [{params}]" if params else "") + "\n"
        )
    for seat in seat_entries():
        name = f"{seat.name}:{seat.argument}" if seat.argument else seat.name
        sys.stdout.write(f"{name:<12} {seat.summary} (plays through a seat)\n")
    for family in families():
        name = f"{family.name}:{family.argument}"
        try:
            members = [family.member(argument) for argument in family.members()]
        except MissingExtraError as exc:  # the listing works without the extra
            sys.stdout.write(f"{name:<12} {family.summary}\n  (none here: {exc})\n")
            continue
        params = ", ".join(f"{k}={v:g}" for k, v in members[0].defaults.items()) if members else ""
        sys.stdout.write(
            f"{name:<12} {family.summary}" + (f"  [{params}]" if params else "") + "\n"
        )
        for member in members:
            sys.stdout.write(f"  {member.name:<44} {member.summary}\n")
    for seller in MARKET_SELLERS.values():
        params = ", ".join(f"{k}={v:g}" for k, v in seller.defaults.items())
        sys.stdout.write(f"{seller.name:<12} {seller.summary} (market seller)  [{params}]\n")
    return 0

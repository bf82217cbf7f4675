"""``dealroom train evaluate --buyers N --pools ...``: a served checkpoint as a market's seller.

The checkpoint (a roster entry: its endpoint, model id, sampling and tool-calling horizon)
sells against every pool of scripted buyers on held-out markets: ``dealroom markets`` with the
model as its one seller (``cli.markets.play_plan``), on the ``llm:`` market seller's seat
(``dealroom.agents.llm_market``), whose conversation is the one ``train grpo --buyers N``
trains in (``training.market_trl.MarketSellerEnv``; ``tests/test_market_seat_parity.py``).
Market ``index`` of a tier is ``market_at(--scenario-seed, index, tier, N)``, GRPO's rows
draw ``market_at(its --scenario-seed, row index, ...)``: the default seeds, 1 here and 0
there, hold the evaluation's markets out. Each market is stored as it ends with the model's
usage and conversation; ``--resume`` continues a run of the same configuration (refused when
the seed, the pools, the model, its sampling or its horizon changed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dealroom.cli._common import usage_error
from dealroom.cli.markets import pools_of
from dealroom.play.market_tournament import MarketPlan, MarketPlanError
from dealroom.play.registry import AgentSpecError
from dealroom.play.settings import RosterEntry, SeatSettings
from dealroom.protocol.model_seat import MAX_TOOL_ROUNDS


def check_flags(args: argparse.Namespace) -> None:
    """The flags a market evaluation refuses or needs, each one line (before anything runs)."""
    if args.opponents is not None:
        raise usage_error("--opponents is for negotiations: a market's buyers are --pools")
    if args.models is not None:
        raise usage_error("--models is for negotiations: a market's buyers are scripted --pools")
    if args.pools is None:
        raise usage_error("--buyers N evaluates a market seller: give --pools")
    if args.role == "buyer":
        raise usage_error("--role buyer: in a market the model is the seller")


def market_plan(args: argparse.Namespace, name: str) -> MarketPlan:
    """The market tournament of one model seller (its entry recorded later)."""
    try:
        return MarketPlan(
            sellers=(name,),
            pools=pools_of(args.pools, args.buyers),
            buyers=args.buyers,
            tiers=tuple(args.tiers),
            per_pool=args.scenarios,
            seed=args.scenario_seed,
        )
    except (AgentSpecError, MarketPlanError) as exc:
        raise usage_error(str(exc)) from None


def run(args: argparse.Namespace, learner: RosterEntry, planned: MarketPlan) -> int:
    """Play the model's pending markets, print the report and the model's line."""
    from dataclasses import replace

    from dealroom.cli._market_models import model_sellers
    from dealroom.cli.markets import play_plan

    seats = SeatSettings(max_tool_rounds=learner.max_tool_rounds or MAX_TOOL_ROUNDS)
    sellers, seller_of, entries = model_sellers(
        (learner.name,), roster=None, seats=seats, entries=(learner,)
    )
    chosen = replace(planned, sellers=sellers, entries=entries)
    status = play_plan(
        chosen, seller_of, args.out, args.run, args.resume, max(args.concurrency, 1) * 4
    )
    sys.stderr.write(seller_line(args.out, args.run, learner.name) + "\n")
    return status


def seller_line(out: Path, run: str, name: str) -> str:
    """The evaluated model's markets in one line, reward hacking included: sales below its own
    cost (IR violations), and how its plays ended early (turn limit, context full, failure)."""
    from dealroom.store.results import ResultsStore

    markets = sold = below = limits = context = failed = 0
    shares: list[float] = []
    with ResultsStore(out, create=False) as store:
        extras = store.market_extras(run)
        for key, record in store.iter_markets(run):
            if record.seller != name:
                continue
            outcome = record.outcome
            markets += 1
            sold += outcome.status == "deal"
            below += outcome.seller_ir_violation
            if outcome.seller_share is not None:
                shares.append(outcome.seller_share)
            data = extras.get(key, {}).get("seller", {})
            limits += data.get("ended_by") == "limit"
            context += data.get("ended_by") == "context"
            failed += "error" in data
    rate = f"{sold / markets:.0%}" if markets else "-"
    share = f"{sum(shares) / len(shares):.3f}" if shares else "-"
    return (
        f"dealroom: {name} as market seller: {markets:,} markets, sale rate {rate}, seller "
        f"share {share} (mean over sales with gains), {below:,} sales below its own cost, "
        f"{limits:,} plays ended by the turn limit, {context:,} by a full context, "
        f"{failed:,} by a failed model"
    )

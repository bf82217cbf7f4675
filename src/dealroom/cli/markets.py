"""``dealroom markets``: a tournament of markets (sellers against pools of buyers)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from dealroom.agents.market import market_seller
from dealroom.analysis.market_report import format_market_report, stored_market_report
from dealroom.cli._common import (
    Commands,
    add_secret_flag,
    positive_int,
    report_fresh_secret,
    resume_error,
    run_secret,
    tier_list,
    usage_error,
)
from dealroom.cli._players import add_llm_flags, seat_settings
from dealroom.cli.match import market_size
from dealroom.cli.tournament import (
    BUDGET_STOP,
    ProgressBar,
    add_budget_flags,
    budget_of,
    usage_text,
)
from dealroom.play.market_tournament import (
    MarketPlan,
    MarketPlanError,
    MarketSellerResolver,
    run_markets,
)
from dealroom.play.progress import NO_BUDGET, Budget
from dealroom.play.registry import AgentSpecError, is_llm_spec, split_specs
from dealroom.play.tournament import ConfigMismatchError, RunExistsError, stored_seed
from dealroom.protocol.market import pool_members
from dealroom.protocol.scenario import TIERS
from dealroom.protocol.secret import Secret, Seed
from dealroom.store.results import ResultsStore, StoreError

DEFAULT_MARKET_RUN = "markets"


def add(commands: Commands) -> None:
    """Register the subcommand."""
    parser = commands.add_parser(
        "markets",
        help="tournament of markets: every seller against every pool of buyers",
        description="Every seller plays --per-pool markets of each tier against every pool of "
        "--buyers buyers (the same markets for every seller and pool), each stored as it "
        "finishes; then the report (per seller and per pool, with intervals) is printed. "
        "A model sells as llm:MODEL or as an entry of --models, on the seller's seat that "
        "train grpo --buyers N trains.",
    )
    parser.add_argument(
        "--sellers",
        default="",
        help="comma-separated seller specs: auctioneer, sequential, any scripted spec (run in "
        "every buyer's thread), llm:MODEL, or names of --models entries",
    )
    parser.add_argument(
        "--pools",
        required=True,
        help="comma-separated pools of buyers: a scripted spec (every buyer plays it) or "
        "specs joined by '+', one per buyer (boulware+linear+conceder)",
    )
    parser.add_argument(
        "--buyers", type=market_size, default=3, help="buyers per market (default: 3)"
    )
    parser.add_argument(
        "--tiers", type=tier_list, default=list(TIERS), help="comma-separated tiers (default: all)"
    )
    parser.add_argument(
        "--per-pool",
        type=positive_int,
        default=10,
        help="markets per seller, pool and tier (default: 10)",
    )
    add_secret_flag(parser, public=True)
    parser.add_argument("--out", type=Path, required=True, help="results store (SQLite file)")
    parser.add_argument(
        "--run", default=DEFAULT_MARKET_RUN, help=f"run name (default: {DEFAULT_MARKET_RUN})"
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue a run of the same configuration"
    )
    parser.add_argument(
        "--models",
        type=Path,
        metavar="FILE.toml",
        help="roster of LLM entries (as dealroom tournament --models); every entry joins "
        "--sellers under its name",
    )
    parser.add_argument(
        "--llm-concurrency",
        type=positive_int,
        default=16,
        help="markets with a model seller in flight at once, in all; each endpoint also keeps "
        "its own limit (default: %(default)s)",
    )
    add_budget_flags(parser, "market")
    add_llm_flags(parser)
    parser.set_defaults(handler=run)


def pools_of(text: str, buyers: int) -> tuple[tuple[str, ...], ...]:
    """Each pool's buyer specs from --pools, or a usage error."""
    pools: list[tuple[str, ...]] = []
    for spec in split_specs(text):
        try:
            pools.append(pool_members(spec, buyers))
        except ValueError as exc:
            raise usage_error(f"--pools: {exc}") from None
    if not pools:
        raise usage_error("--pools: no pool given")
    return tuple(pools)


def _seed(args: argparse.Namespace) -> tuple[Seed, bool]:
    """The given secret; resuming, the run's stored one; else a fresh one."""
    if args.secret is not None or not (args.resume and args.out.exists()):
        return run_secret(args, public=True)
    try:
        with ResultsStore(args.out, create=False) as store:
            stored = stored_seed(store, args.run)
    except StoreError as exc:
        raise usage_error(str(exc)) from None
    return (stored, True) if stored is not None else (Secret.new(), False)


def _sellers(
    args: argparse.Namespace,
) -> tuple[tuple[str, ...], MarketSellerResolver, dict[str, Any]]:
    """The run's sellers, their resolver and the roster entries recorded with the run."""
    sellers = tuple(split_specs(args.sellers))
    if not sellers and args.models is None:
        raise usage_error("--sellers: no seller given (give --sellers, --models or both)")
    if args.elicit_beliefs:
        raise usage_error("--elicit-beliefs is for negotiations; a market seller is not asked")
    if args.models is None and not any(spec.startswith("llm:") for spec in sellers):
        try:
            for spec in sellers:
                market_seller(spec)
        except AgentSpecError as exc:
            raise usage_error(str(exc)) from None
        return sellers, market_seller, {}
    from dealroom.cli._market_models import model_sellers

    return model_sellers(sellers, roster=args.models, seats=seat_settings(args))


def run(args: argparse.Namespace) -> int:
    """Play the pending markets, then print the run's report."""
    sellers, seller_of, entries = _sellers(args)
    models = [spec for spec in sellers if spec in entries or is_llm_spec(spec)]
    budget = budget_of(args.max_cost, args.max_calls, models, entries)
    seed, given = _seed(args)
    try:
        plan = MarketPlan(
            sellers=sellers,
            pools=pools_of(args.pools, args.buyers),
            buyers=args.buyers,
            tiers=tuple(args.tiers),
            per_pool=args.per_pool,
            seed=seed,
            entries=entries,
        )
    except (AgentSpecError, MarketPlanError) as exc:
        raise usage_error(str(exc)) from None
    status = play_plan(
        plan, seller_of, args.out, args.run, args.resume, args.llm_concurrency, budget
    )
    if isinstance(seed, Secret):
        report_fresh_secret(seed, given)
    return status


def play_plan(
    plan: MarketPlan,
    seller_of: MarketSellerResolver,
    out: Path,
    run: str,
    resume: bool,
    concurrency: int,
    budget: Budget = NO_BUDGET,
) -> int:
    """Play a market tournament's pending markets into ``out`` (progress on stderr, as
    ``dealroom tournament``'s), then print its report; ``BUDGET_STOP`` if ``budget`` stopped
    the run."""
    started = time.perf_counter()
    try:
        store = ResultsStore(out)
    except StoreError as exc:
        raise usage_error(str(exc)) from None
    bar = ProgressBar(sys.stderr)
    with store:
        try:
            progress = run_markets(
                store,
                plan,
                run,
                seller_of,
                resume=resume,
                on_progress=bar.update,
                concurrency=concurrency,
                budget=budget,
            )
        except (RunExistsError, ConfigMismatchError) as exc:
            raise resume_error(exc, out, "markets") from None
        except (AgentSpecError, MarketPlanError) as exc:
            raise usage_error(str(exc)) from None
        finally:
            bar.close()
        report = stored_market_report(store, run)
    seconds = time.perf_counter() - started
    sys.stderr.write(
        f"dealroom: {progress.done:,} markets played ({progress.skipped:,} already stored) in "
        f"{seconds:.1f} s{usage_text(progress)} -> {out} run {run!r}\n"
    )
    sys.stdout.write(format_market_report(report) + "\n")
    if progress.stopped is not None:
        sys.stderr.write(
            f"dealroom: stopped: {progress.stopped}; {progress.remaining:,} markets left: "
            "rerun with --resume to continue\n"
        )
        return BUDGET_STOP
    return 0

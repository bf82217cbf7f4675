"""``dealroom report``: leaderboard, head to head, tiers and features of a results store."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from pydantic import ValidationError

from dealroom.analysis.market_report import format_market_report, stored_market_report
from dealroom.analysis.oracle import OracleKey, OracleResult
from dealroom.analysis.report import build_report, format_report
from dealroom.analysis.report_html import render_html
from dealroom.cli._common import Commands, open_existing_store, positive_int, usage_error
from dealroom.play.oracle import DEFAULT_BUDGET
from dealroom.protocol import Rules
from dealroom.store import paid as paid_calls
from dealroom.store.results import ResultsStore


def add(commands: Commands) -> None:
    """Register the subcommand."""
    parser = commands.add_parser("report", help="tournament report: leaderboard, tiers, features")
    parser.add_argument("store", type=Path, help="results store written by dealroom tournament")
    parser.add_argument("--run", help="run to report (needed when the store holds several)")
    parser.add_argument(
        "--runs",
        action="store_true",
        help="list the store's runs, one a line with its negotiations, largest first",
    )
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.add_argument("--html", type=Path, help="also write a self-contained HTML page here")
    parser.add_argument(
        "--resamples", type=positive_int, default=1000, help="bootstrap resamples (default: 1000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    parser.add_argument(
        "--oracle",
        action="store_true",
        help="also search each seat's oracle against its scripted counterpart (the best surplus "
        "any policy of the seat reached; docs/design.md section 9) and report the gap to it",
    )
    parser.add_argument(
        "--oracle-budget",
        type=positive_int,
        default=DEFAULT_BUDGET,
        help="most negotiations simulated per oracle (default: %(default)s)",
    )
    parser.set_defaults(handler=run)


def market_runs(store: ResultsStore) -> dict[str, int]:
    """The store's market runs and their stored markets (keys are ``RUN/...``)."""
    counts: dict[str, int] = {}
    for key in store.market_keys():
        run = key.split("/", 1)[0]
        counts[run] = counts.get(run, 0) + 1
    return counts


NAMED_RUNS = 3
"""How many runs an error names (a server's store holds a run per room: hundreds)."""


def _largest(runs: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(runs.items(), key=lambda item: (-item[1], item[0]))


def _some_runs(runs: dict[str, int]) -> str:
    """The largest runs by name, and how many more (``--runs`` lists them all)."""
    named = ", ".join(f"{r!r} ({n:,})" for r, n in _largest(runs)[:NAMED_RUNS])
    more = len(runs) - NAMED_RUNS
    return named if more <= 0 else f"{named} and {more:,} more (--runs lists them all)"


def choose_run(store: ResultsStore, run: str | None) -> str:
    """The run to read: the one asked for, or the only one in the store (negotiations or
    markets)."""
    runs = {name: n for name, n in store.runs().items() if n} | market_runs(store)
    if run is not None:
        if run not in runs:
            known = _some_runs(runs) if runs else "none"
            raise usage_error(f"{store.path}: no negotiations of run {run!r} (runs: {known})")
        return run
    if not runs:
        raise usage_error(f"{store.path}: no negotiations stored")
    if len(runs) > 1:
        raise usage_error(
            f"{store.path} holds {len(runs):,} runs: {_some_runs(runs)}; choose one with --run"
        )
    return next(iter(runs))


def _oracles(store: ResultsStore, run: str, budget: int) -> dict[OracleKey, OracleResult]:
    """The run's oracle values, searched under its own secret and rules (one pass over it)."""
    from dealroom.play.oracle import oracles
    from dealroom.play.tournament import stored_seed

    seed = stored_seed(store, run)
    if seed is None:
        raise usage_error(
            f"{store.path}: run {run!r} records no secret, so no oracle can replay it"
        )
    config = store.run_config(run) or {}
    try:
        rules = Rules.model_validate(config.get("rules", {}))
    except ValidationError as exc:
        raise usage_error(f"{store.path}: run {run!r} records unreadable rules ({exc})") from None
    started = time.perf_counter()
    records = (row.record for row in store.iter(run))
    table = oracles(records, seed=seed, rules=rules, budget=budget)
    values = table.values.values()
    exact = _exactness(sum(o.exact for o in values), len(table.values))
    line = (
        f"dealroom: {len(table.values):,} oracles searched ({exact}"
        f"{sum(o.simulations for o in values):,} negotiations simulated) in "
        f"{time.perf_counter() - started:.1f} s"
    )
    if table.skipped:
        first = sorted(table.skipped.values())[0]
        line += f"; {len(table.skipped):,} seats have none (for one: {first})"
    sys.stderr.write(line + "\n")
    return table.values


def _exactness(exact: int, searched: int) -> str:
    """How many of the oracles are exact, the others being lower bounds (none: nothing)."""
    if not searched:
        return ""
    if exact == searched:
        return "all exact; "
    if not exact:
        return "all lower bounds; "
    return f"{exact:,} exact, the rest lower bounds; "


def run(args: argparse.Namespace) -> int:
    """Build the report and print it (text or JSON); write the HTML page if asked."""
    with open_existing_store(args.store) as store:
        if args.runs:
            runs = {name: n for name, n in store.runs().items() if n} | market_runs(store)
            sys.stdout.writelines(f"{n:>9,}  {name}\n" for name, n in _largest(runs))
            return 0
        name = choose_run(store, args.run)
        if name in market_runs(store):
            return _market_report(args, store, name)
        oracles = _oracles(store, name, args.oracle_budget) if args.oracle else None
        report = build_report(
            store.iter(name),
            run=name,
            config=store.run_config(name),
            resamples=args.resamples,
            seed=args.seed,
            paid=list(paid_calls.read(paid_calls.paid_path(store.path), name)),
            oracles=oracles,
        )
    if args.html is not None:
        try:
            args.html.write_text(render_html(report), encoding="utf-8")
        except OSError as exc:
            raise usage_error(f"{args.html}: {exc.strerror or exc}") from None
    if args.json:
        sys.stdout.write(
            json.dumps(report.model_dump(mode="json"), indent=2, allow_nan=False) + "\n"
        )
    else:
        sys.stdout.write(format_report(report) + "\n")
    return 0


def _market_report(args: argparse.Namespace, store: ResultsStore, run: str) -> int:
    """A market run's report (``dealroom markets``), as text or JSON."""
    if args.html is not None or args.oracle:
        raise usage_error(f"run {run!r} is a market run: --html and --oracle are for negotiations")
    report = stored_market_report(store, run, resamples=args.resamples, seed=args.seed)
    if args.json:
        sys.stdout.write(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
    else:
        sys.stdout.write(format_market_report(report) + "\n")
    return 0

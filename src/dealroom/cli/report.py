"""``dealroom report``: leaderboard, head to head, tiers and features of a results store."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dealroom.analysis.report import build_report, format_report
from dealroom.analysis.report_html import render_html
from dealroom.cli._common import Commands, positive_int, usage_error
from dealroom.store import paid as paid_calls
from dealroom.store.results import ResultsStore, StoreError


def add(commands: Commands) -> None:
    """Register the subcommand."""
    parser = commands.add_parser("report", help="tournament report: leaderboard, tiers, features")
    parser.add_argument("store", type=Path, help="results store written by dealroom tournament")
    parser.add_argument("--run", help="run to report (needed when the store holds several)")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.add_argument("--html", type=Path, help="also write a self-contained HTML page here")
    parser.add_argument(
        "--resamples", type=positive_int, default=1000, help="bootstrap resamples (default: 1000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    parser.set_defaults(handler=run)


def open_existing_store(path: Path) -> ResultsStore:
    """An existing results store, or a usage error (never creates a file)."""
    if not path.is_file():
        raise usage_error(f"{path}: no such results store")
    try:
        return ResultsStore(path, create=False)
    except StoreError as exc:
        raise usage_error(str(exc)) from None


def choose_run(store: ResultsStore, run: str | None) -> str:
    """The run to read: the one asked for, or the only one in the store."""
    runs = {name: n for name, n in store.runs().items() if n}
    if run is not None:
        if run not in runs:
            known = ", ".join(repr(r) for r in runs) or "none"
            raise usage_error(f"{store.path}: no negotiations of run {run!r} (runs: {known})")
        return run
    if not runs:
        raise usage_error(f"{store.path}: no negotiations stored")
    if len(runs) > 1:
        known = ", ".join(f"{r!r} ({n:,})" for r, n in runs.items())
        raise usage_error(f"{store.path} holds several runs: {known}; choose one with --run")
    return next(iter(runs))


def run(args: argparse.Namespace) -> int:
    """Build the report and print it (text or JSON); write the HTML page if asked."""
    with open_existing_store(args.store) as store:
        name = choose_run(store, args.run)
        report = build_report(
            store.iter(name),
            run=name,
            config=store.run_config(name),
            resamples=args.resamples,
            seed=args.seed,
            paid=list(paid_calls.read(paid_calls.paid_path(store.path), name)),
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

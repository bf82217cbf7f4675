"""``dealroom scenarios``: write generated scenarios as JSON lines."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dealroom.cli._common import Commands, positive_int, usage_error
from dealroom.protocol import TIERS
from dealroom.protocol.generator import dumps_jsonl, generate


def add(commands: Commands) -> None:
    """Register the subcommand."""
    parser = commands.add_parser("scenarios", help="generate scenarios as JSONL")
    parser.add_argument("--n", type=positive_int, required=True, help="scenarios per tier")
    parser.add_argument("--tier", choices=TIERS, help="one tier (default: all three)")
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="public seed: the same seed gives the same scenarios (default: 0)",
    )
    parser.add_argument("--out", type=Path, help="file to write (default: stdout)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Generate and write."""
    tiers = [args.tier] if args.tier else list(TIERS)
    text = dumps_jsonl(generate(args.n, seed=args.seed, tiers=tiers))
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        args.out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise usage_error(f"{args.out}: {exc.strerror or exc}") from None
    return 0

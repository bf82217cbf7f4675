"""``dealroom play``: a person plays one seat in the terminal against any agent."""

from __future__ import annotations

import argparse
import sys

from dealroom.cli._common import (
    Commands,
    add_scenario_flags,
    report_fresh_secret,
    run_secret,
    scenario,
)
from dealroom.cli._players import add_llm_flags, player


def add(commands: Commands) -> None:
    """Register the subcommand."""
    parser = commands.add_parser(
        "play",
        help="play one seat yourself, in the terminal",
        description="Play one negotiation yourself: type commands (offer 950, accept, say ..., "
        "wait, walk, state, help) and see the other side's moves as they happen.",
    )
    parser.add_argument(
        "--role", choices=["buyer", "seller"], default="buyer", help="your seat (default: buyer)"
    )
    parser.add_argument(
        "--opponent",
        default="boulware",
        help="agent spec in the other seat, e.g. boulware or llm:gpt-4.1-mini (default: boulware)",
    )
    add_scenario_flags(parser)
    parser.add_argument(
        "--clock",
        choices=["virtual", "wall"],
        default="virtual",
        help="virtual (default): each action costs fixed simulated seconds, so take your "
        "time; wall: the deadline runs in real seconds",
    )
    add_llm_flags(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Play, then print the full record (both private values, now that it is over)."""
    import anyio

    from dealroom.agents.human import HumanPlayer
    from dealroom.analysis.transcript import format_record
    from dealroom.play.players import closing
    from dealroom.play.runner import play_match

    secret, given = run_secret(args)
    chosen = scenario(args, secret)
    human = HumanPlayer()
    opponent = player(args.opponent, args)
    buyer, seller = (human, opponent) if args.role == "buyer" else (opponent, human)
    result = anyio.run(
        lambda: closing(
            (opponent,), lambda: play_match(chosen, buyer, seller, seed=secret, clock=args.clock)
        )
    )
    sys.stdout.write("\n" + format_record(result.record) + "\n")
    for role, error in result.errors.items():
        sys.stdout.write(f"  error ({role}): {error}\n")
    report_fresh_secret(secret, given)
    return 1 if result.errors else 0

"""The ``dealroom`` command line. Each subcommand lives in its own module with ``add(subparsers)``.

Bad flags, unknown agents and unreadable files print one line to stderr and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from dealroom import __version__
from dealroom._logging import configure_logging
from dealroom.cli import export_sft as _export_sft
from dealroom.cli import match as _match
from dealroom.cli import play as _play
from dealroom.cli import replay as _replay
from dealroom.cli import report as _report
from dealroom.cli import room as _room
from dealroom.cli import scenarios as _scenarios
from dealroom.cli import seat as _seat
from dealroom.cli import serve as _serve
from dealroom.cli import tournament as _tournament
from dealroom.cli import train as _train
from dealroom.protocol.errors import DealroomError
from dealroom.store.results import StoreError

# Subcommand modules, in the order ``dealroom --help`` lists them.
SUBCOMMANDS = [
    _match,
    _play,
    _scenarios,
    _export_sft,
    _train,
    _tournament,
    _report,
    _replay,
    _serve,
    _room,
    _seat,
]


class UsageError(DealroomError):
    """A bad command-line value: printed as one line, exit status 2."""

    kind = "usage"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser."""
    parser = _Parser(prog="dealroom", description="Bilateral-trade negotiations for agents.")
    parser.add_argument("--version", action="version", version=f"dealroom {__version__}")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="structured logs on stderr (default: WARNING)",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in SUBCOMMANDS:
        module.add(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dealroom`` console script."""
    try:
        args = build_parser().parse_args(argv)
        configure_logging(args.log_level)
        handler: Callable[[argparse.Namespace], int] = args.handler
        return handler(args)
    except (UsageError, StoreError) as exc:  # a store that turns out unreadable midway, too
        sys.stderr.write(f"dealroom: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

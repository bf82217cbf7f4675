"""The ``dealroom`` command line. Each subcommand lives in its own module with ``add(subparsers)``.

Bad flags, unknown agents and unreadable files print one line to stderr and exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from dealroom._logging import configure_logging
from dealroom._version import __version__
from dealroom.protocol.errors import DealroomError
from dealroom.store.results import StoreError

COMMANDS: dict[str, tuple[str, str]] = {
    "match": ("match", "play one negotiation between two agents"),
    "agents": ("match", "list the available agents"),
    "play": ("play", "play one seat yourself, in the terminal"),
    "scenarios": ("scenarios", "generate scenarios as JSONL"),
    "export-sft": (
        "export_sft",
        "write stored negotiations as chat transcripts (OpenAI messages, JSONL)",
    ),
    "train": ("train", "SFT and GRPO through TRL, a demo model, and serving a checkpoint"),
    "tournament": (
        "tournament",
        "round robin: every agent against every other in both seats, into a results store",
    ),
    "markets": ("markets", "tournament of markets: every seller against every pool of buyers"),
    "report": ("report", "tournament report: leaderboard, tiers, features"),
    "replay": (
        "replay",
        "re-run a stored negotiation, or fork it with a new agent in one seat",
    ),
    "serve": ("serve", "serve negotiations over MCP (stdio house mode, or HTTP rooms)"),
    "room": ("room", "create and inspect rooms on an HTTP server"),
    "seat": ("seat", "stdio MCP server forwarding to one seat of an HTTP room"),
    "study": ("study", "run a study with people on an HTTP server"),
    "openenv": (
        "openenv_serve",
        "serve negotiations as an OpenEnv environment (reset, step, /ws sessions)",
    ),
}
"""Each subcommand, in the order ``dealroom --help`` lists them: the module under
``dealroom.cli`` that defines it (``add(subparsers)``) and its one-line help. Only the module
of the command being run is imported: ``dealroom serve`` (an MCP host starts it on every
launch) loads neither the SFT export nor the reports nor numpy. A test checks that each
module registers its commands with exactly this help."""


class UsageError(DealroomError):
    """A bad command-line value: printed as one line, exit status 2."""

    kind = "usage"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser for ``argv``: the command it names (the first word that is a
    command) defined in full by its module, every other command by its name and help alone
    (enough for ``dealroom --help`` and for argparse's choices). Without ``argv``, every
    command in full."""
    parser = _Parser(prog="dealroom", description="Bilateral-trade negotiations for agents.")
    parser.add_argument("--version", action="version", version=f"dealroom {__version__}")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="structured logs on stderr (default: WARNING)",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    wanted = None if argv is None else next((w for w in argv if w in COMMANDS), "")
    added: set[str] = set()
    for name, (module_name, summary) in COMMANDS.items():
        if name in added:
            continue
        if wanted is None or COMMANDS.get(wanted, ("",))[0] == module_name:
            module = importlib.import_module(f"dealroom.cli.{module_name}")
            before = set(commands.choices)
            module.add(commands)
            added |= set(commands.choices) - before
        else:
            commands.add_parser(name, help=summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dealroom`` console script."""
    try:
        words = sys.argv[1:] if argv is None else argv
        args = build_parser(words).parse_args(words)
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

"""The ``dealroom`` command line. Each subcommand lives in its own module with ``add(subparsers)``.

Bad flags, unknown agents and unreadable files print one line to stderr and exit 2; a command
line that names no command (``dealroom``, ``dealroom room``) prints its list of commands before
that line (argparse's status for a missing argument, 2). Every command has a description and
every option a help text (a test walks them all).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

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
    """A bad command-line value: printed as one line, exit status 2 (after ``preface``: a
    command line that names no command gets the list of commands first)."""

    kind = "usage"

    def __init__(self, message: str, *, preface: str = "") -> None:
        super().__init__(message)
        self.preface = preface


if TYPE_CHECKING:
    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]  # pyright: ignore[reportPrivateUsage]
else:
    _SubParsers = argparse._SubParsersAction  # generic only to type checkers


class _Commands(_SubParsers):
    """Subcommands whose ``--help`` opens with the one-line help of the list above it."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if "description" not in kwargs and "help" in kwargs:
            kwargs["description"] = kwargs["help"]
        return super().add_parser(name, **kwargs)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Commands)

    def error(self, message: str) -> NoReturn:
        required = "the following arguments are required: "
        for action in self._actions:
            if isinstance(action, _Commands) and message == required + str(action.dest):
                raise UsageError("name a command (see the list above)", preface=self.format_help())
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
        if isinstance(exc, UsageError):
            sys.stderr.write(exc.preface)
        sys.stderr.write(f"dealroom: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

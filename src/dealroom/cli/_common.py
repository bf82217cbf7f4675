"""Helpers shared by subcommands: reading agent specs, scenarios and numbers from flags."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from dealroom.agents import AgentSpecError, resolve
from dealroom.protocol import TIERS, AgentFactory, Scenario, Tier
from dealroom.protocol.generator import ScenarioFileError, loads_jsonl, scenario_at
from dealroom.protocol.secret import SECRET_ENV, Secret, SecretError
from dealroom.store.results import ResultsStore, StoreError

if TYPE_CHECKING:
    from dealroom.play.tournament import ConfigMismatchError, RunExistsError

ADMIN_TOKEN_ENV = "DEALROOM_ADMIN_TOKEN"
"""Where the CLI reads an HTTP server's admin token (serve, room, match --server)."""


E = TypeVar("E", bound=BaseException)


class Commands(Protocol):
    """Where a command module adds its parser: what ``add_subparsers`` returns (argparse names
    that type only privately, ``_SubParsersAction``)."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


def usage_error(message: str) -> Exception:
    """The CLI's one-line error (imported late: the CLI package imports this module)."""
    from dealroom.cli import UsageError

    return UsageError(message)


def resume_error(exc: RunExistsError | ConfigMismatchError, out: Path, unit: str) -> Exception:
    """The one line for a run the store already holds (without --resume) or holds under
    another configuration; ``unit`` names what the run stores (negotiations, markets)."""
    from dealroom.play.tournament import ConfigMismatchError, RunExistsError  # only runs need it

    match exc:
        case RunExistsError():
            return usage_error(
                f"{out} already holds {exc.stored} {unit} of run {exc.run!r}: pass --resume to "
                "continue it, or choose another --out or --run"
            )
        case ConfigMismatchError():
            return usage_error(
                f"cannot resume run {exc.run!r} in {out}: it was recorded with a different "
                f"configuration ({'; '.join(exc.differences)})"
            )


def open_existing_store(path: Path) -> ResultsStore:
    """An existing results store, or a usage error (never creates a file)."""
    if not path.is_file():
        raise usage_error(f"{path}: no such results store (no such file)")
    try:
        return ResultsStore(path, create=False)
    except StoreError as exc:
        raise usage_error(str(exc)) from None


def found_in(exc: BaseException, kinds: tuple[type[E], ...]) -> E | None:
    """The first of ``kinds`` that ``exc`` is or holds (a task group wraps what it raises)."""
    if isinstance(exc, kinds):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", exc)
        for inner in group.exceptions:
            found = found_in(inner, kinds)
            if found is not None:
                return found
    return None


def agent(spec: str) -> AgentFactory:
    """Resolve an agent spec or fail with a usage error."""
    try:
        return resolve(spec)
    except AgentSpecError as exc:
        raise usage_error(str(exc)) from None


class _Flags(Protocol):
    """Where flags go: a parser or one of its argument groups."""

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action: ...


def add_secret_flag(parser: _Flags, *, public: bool = False) -> None:
    """--secret HEX: the run's secret (default: $DEALROOM_SECRET, else a fresh random one).

    ``public``: an offline run (a tournament, a match), whose secret is there to be published
    so others reproduce the run; any 128 bits do (the README pins one). Every other entry point
    (a served session, a room) keeps its secret from its seats and refuses an obviously weak one.
    """
    which = (
        "any will do, the docs' published 5eed... one included: an offline run's secret is "
        "there for others to replay it"
        if public
        else "one with a pattern (the docs' published 5eed... one, for offline runs, included) "
        "is refused: a seat that guessed this command's secret would compute the other side's "
        "value"
    )
    parser.add_argument(
        "--secret",
        type=public_secret_arg if public else secret_arg,
        metavar="HEX",
        help="secret (at least 32 hex digits) under which scenarios and house agents' choices "
        f"are drawn, to reproduce a run; {which} (default: ${SECRET_ENV}, else a fresh random "
        "one)",
    )


def public_secret_arg(text: str) -> Secret:
    """argparse type: a hex secret of at least 128 bits, to be published (not checked for
    weakness: nothing it guards is secret)."""
    try:
        return Secret.from_hex(text)
    except SecretError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def secret_arg(text: str) -> Secret:
    """argparse type: a hex secret of at least 128 bits, not obviously weak."""
    try:
        return Secret.chosen(text)
    except SecretError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run_secret(args: argparse.Namespace, *, public: bool = False) -> tuple[Secret, bool]:
    """The run's secret from --secret or $DEALROOM_SECRET, else a fresh one; and whether it
    was given (a fresh one must be reported after the run, or the run cannot be replayed).
    ``public`` as for ``add_secret_flag``."""
    if args.secret is not None:
        return args.secret, True
    if text := os.environ.get(SECRET_ENV):
        try:
            return (Secret.from_hex(text) if public else Secret.chosen(text)), True
        except SecretError as exc:
            unset = "" if public else f", or unset ${SECRET_ENV} for this command"
            raise usage_error(f"${SECRET_ENV}: {exc}{unset}") from None
    return Secret.new(), False


def report_fresh_secret(secret: Secret, given: bool) -> None:
    """After a run: on stderr, the secret that was drawn for it, so it can be replayed."""
    if not given:
        sys.stderr.write(f"dealroom: secret {secret.hex()} (pass --secret to replay this run)\n")


def add_scenario_flags(parser: _Flags, *, public: bool = False) -> None:
    """--tier, --secret, --scenario (on a parser or an argument group)."""
    parser.add_argument("--tier", choices=TIERS, default="mid", help="price tier (default: mid)")
    add_secret_flag(parser, public=public)
    parser.add_argument(
        "--scenario", type=Path, help="JSONL scenario file; its first scenario is played"
    )


def scenario(args: argparse.Namespace, secret: Secret) -> Scenario:
    """The scenario the flags choose: the first of --scenario, or scenario 0 of the tier."""
    if args.scenario is None:
        tier: Tier = args.tier
        return scenario_at(secret, 0, tier)
    scenarios = read_scenarios(args.scenario)
    if not scenarios:
        raise usage_error(f"{args.scenario}: no scenario in the file")
    return scenarios[0]


def read_scenarios(path: Path) -> list[Scenario]:
    """Every scenario in a JSONL file, or a usage error naming the file and the bad line."""
    try:
        return list(loads_jsonl(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise usage_error(f"{path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise usage_error(f"{path}: not a UTF-8 text file") from None
    except ScenarioFileError as exc:
        raise usage_error(f"{path}: {exc}") from None


def positive_int(text: str) -> int:
    """argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def tier_list(text: str) -> list[Tier]:
    """argparse type: comma-separated tiers."""
    tiers = [t.strip() for t in text.split(",") if t.strip()]
    if bad := [t for t in tiers if t not in TIERS]:
        raise argparse.ArgumentTypeError(f"unknown tier {bad[0]!r} (tiers: {', '.join(TIERS)})")
    return [t for t in TIERS if t in tiers]

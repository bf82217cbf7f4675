"""``--help`` describes every command and every option; ``dealroom`` alone (or ``dealroom room``,
...) prints its list of commands, then the one-line error, and exits 2 as argparse does for a
missing argument."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from dealroom.cli import COMMANDS, build_parser, main

QUIET = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)


def parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("dealroom",)
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser under ``parser``, each with the command words that reach it."""
    yield " ".join(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, (*path, name))  # pyright: ignore[reportUnknownArgumentType]


def test_every_command_has_a_description_and_every_option_a_help_text() -> None:
    missing: list[str] = []
    for path, parser in parsers(build_parser()):
        if not (parser.description or "").strip():
            missing.append(f"{path}: no description")
        for action in parser._actions:
            if isinstance(action, QUIET):
                continue
            if not (action.help or "").strip() or action.help == argparse.SUPPRESS:
                name = "/".join(action.option_strings) or action.dest
                missing.append(f"{path} {name}: no help")
    assert not missing, "\n".join(missing)


def test_the_walk_reaches_every_command_and_their_subcommands() -> None:
    walked = {path for path, _ in parsers(build_parser())}
    assert {f"dealroom {name}" for name in COMMANDS} <= walked
    assert {"dealroom train sft", "dealroom room show", "dealroom study export"} <= walked


@pytest.mark.parametrize("argv", [[], ["room"], ["study"], ["train"]])
def test_a_command_line_without_its_command_prints_the_commands_and_exits_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("usage: dealroom")
    (parser,) = (p for path, p in parsers(build_parser()) if path == " ".join(["dealroom", *argv]))
    listed = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name in listed.choices:
        assert f"    {name}" in err
    assert err.rstrip().endswith("name a command (see the list above)")

"""Helpers shared by subcommands: reading agent specs, scenarios and numbers from flags."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Protocol

from dealroom.agents import AgentSpecError, resolve
from dealroom.protocol import TIERS, AgentFactory, Scenario, Tier
from dealroom.protocol.generator import ScenarioFileError, loads_jsonl, scenario_at


def usage_error(message: str) -> Exception:
    """The CLI's one-line error (imported late: the CLI package imports this module)."""
    from dealroom.cli import UsageError

    return UsageError(message)


def agent(spec: str) -> AgentFactory:
    """Resolve an agent spec or fail with a usage error."""
    try:
        return resolve(spec)
    except AgentSpecError as exc:
        raise usage_error(str(exc)) from None


class _Flags(Protocol):
    """Where flags go: a parser or one of its argument groups."""

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action: ...


def add_scenario_flags(parser: _Flags) -> None:
    """--tier, --seed, --scenario (on a parser or an argument group)."""
    parser.add_argument("--tier", choices=TIERS, default="mid", help="price tier (default: mid)")
    parser.add_argument("--seed", type=int, default=0, help="scenario and agent seed (default: 0)")
    parser.add_argument(
        "--scenario", type=Path, help="JSONL scenario file; its first scenario is played"
    )


def scenario(args: argparse.Namespace) -> Scenario:
    """The scenario the flags choose."""
    if args.scenario is None:
        tier: Tier = args.tier
        return scenario_at(args.seed, 0, tier)
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

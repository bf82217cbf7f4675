"""``dealroom tournament``: a round robin written to a results store, resumable."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TextIO

from dealroom.cli._common import positive_int, usage_error
from dealroom.cli._players import SpecResolver, add_llm_flags, player_options, scripted
from dealroom.play.registry import AgentSpecError, PlayerOptions
from dealroom.play.tournament import (
    DEFAULT_RUN,
    Backend,
    ConfigMismatchError,
    ProcessBackend,
    Progress,
    RayBackend,
    RunExistsError,
    SerialBackend,
    Tournament,
    TournamentConfig,
    TournamentError,
)
from dealroom.protocol import TIERS, Tier
from dealroom.store.results import ResultsStore, StoreError


def add(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the subcommand."""
    parser = commands.add_parser(
        "tournament",
        help="round robin: every agent against every other in both seats, into a results store",
    )
    parser.add_argument(
        "--agents",
        required=True,
        type=agent_list,
        help="comma-separated agent specs, e.g. boulware,conceder,micro or llm:MODEL "
        "(parameters attach to the spec before them: boulware:e=0.1,k=0.2,linear)",
    )
    parser.add_argument(
        "--tiers", type=tier_list, default=list(TIERS), help="comma-separated (default: all)"
    )
    parser.add_argument(
        "--per-pair",
        type=positive_int,
        default=10,
        help="negotiations per ordered pair and tier (default: 10)",
    )
    parser.add_argument("--seed", type=int, default=0, help="scenario and agent seed (default: 0)")
    parser.add_argument("--out", type=Path, required=True, help="results store (SQLite file)")
    parser.add_argument("--run", default=DEFAULT_RUN, help=f"run name (default: {DEFAULT_RUN})")
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        default=os.cpu_count() or 1,
        help="scripted negotiations in flight: worker processes, or Ray CPUs (default: CPU count)",
    )
    parser.add_argument(
        "--llm-concurrency",
        type=positive_int,
        default=16,
        help="negotiations with an LLM (or other seat player) in flight at once, in all; "
        "each endpoint also keeps its own limit (default: %(default)s)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue a run of the same configuration"
    )
    parser.add_argument("--self-play", action="store_true", help="also play each agent itself")
    parser.add_argument("--backend", choices=["local", "ray"], default="local")
    parser.add_argument("--ray-address", help="Ray cluster to join (default: start a local one)")
    add_llm_flags(parser)
    parser.set_defaults(handler=run)


def agent_list(text: str) -> list[str]:
    """argparse type: agent specs split on commas; ``k=v`` pieces belong to the spec before."""
    specs: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        if "=" in piece and ":" not in piece and specs and ":" in specs[-1]:
            specs[-1] += "," + piece
        else:
            specs.append(piece)
    if not specs:
        raise argparse.ArgumentTypeError("no agents given")
    return specs


def tier_list(text: str) -> list[Tier]:
    """argparse type: comma-separated tiers."""
    tiers = [t.strip() for t in text.split(",") if t.strip()]
    if bad := [t for t in tiers if t not in TIERS]:
        raise argparse.ArgumentTypeError(f"unknown tier {bad[0]!r} (tiers: {', '.join(TIERS)})")
    return [t for t in TIERS if t in tiers]


def _backend(args: argparse.Namespace) -> Backend:
    if args.backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise usage_error("the ray backend needs Ray: pip install 'dealroom[ray]'") from None
        cpus = None if args.ray_address else args.concurrency
        return RayBackend(address=args.ray_address, num_cpus=cpus)
    if args.ray_address:
        raise usage_error("--ray-address needs --backend ray")
    return SerialBackend() if args.concurrency == 1 else ProcessBackend(args.concurrency)


def resolver(args: argparse.Namespace) -> SpecResolver:
    """The players of the run; every spec is built once here, so a bad one (an unknown agent,
    an LLM without a key) is a usage error before anything starts."""
    seats = [spec for spec in args.agents if not scripted(spec)]
    chosen = SpecResolver(player_options(args) if seats else PlayerOptions())
    for spec in args.agents:
        try:
            chosen(spec)
        except AgentSpecError as exc:
            raise usage_error(str(exc)) from None
    return chosen


def run(args: argparse.Namespace) -> int:
    """Play the round robin, then print one summary line on stderr."""
    players = resolver(args)
    try:
        config = TournamentConfig(
            agents=tuple(args.agents),
            tiers=tuple(args.tiers),
            per_pair=args.per_pair,
            seed=args.seed,
            self_play=args.self_play,
        )
    except TournamentError as exc:
        raise usage_error(str(exc)) from None
    backend = _backend(args)
    try:
        store = ResultsStore(args.out)
    except StoreError as exc:
        raise usage_error(str(exc)) from None
    bar = ProgressBar(sys.stderr)
    with store:
        try:
            tournament = Tournament(config, store, run_name=args.run)
        except TournamentError as exc:
            raise usage_error(str(exc)) from None
        try:
            progress = tournament.run(
                players,
                backend=backend,
                resume=args.resume,
                on_progress=bar.update,
                concurrency=args.llm_concurrency,
            )
        except RunExistsError as exc:
            raise usage_error(
                f"{args.out} already holds {exc.stored} negotiations of run {exc.run!r}: pass "
                "--resume to continue it, or choose another --out or --run"
            ) from None
        except ConfigMismatchError as exc:
            raise usage_error(
                f"cannot resume run {exc.run!r} in {args.out}: it was recorded with a different "
                f"configuration ({'; '.join(exc.differences)})"
            ) from None
        except KeyboardInterrupt:
            bar.close()
            sys.stderr.write(
                f"dealroom: interrupted; {tournament.progress.done:,} negotiations were saved "
                f"to {args.out}: rerun with --resume to finish\n"
            )
            raise
        bar.close()
    sys.stderr.write(summary_line(progress, bar.elapsed(), args.out, args.run) + "\n")
    return 0


def summary_line(progress: Progress, seconds: float, out: Path, run: str) -> str:
    """The one line a finished run prints."""
    rate = progress.done / seconds if seconds > 0 else 0.0
    deals = f"{progress.deals / progress.done:.0%}" if progress.done else "-"
    skipped = f", {progress.skipped:,} already stored" if progress.skipped else ""
    return (
        f"dealroom: {progress.done:,} negotiations in {seconds:.1f} s ({rate:,.0f}/s), "
        f"{progress.deals:,} deals ({deals}){skipped}; run {run!r} in {out} "
        f"(dealroom report {out})"
    )


class ProgressBar:
    """A one-line progress bar: count, rate, ETA and deals so far. Silent unless ``stream`` is a
    terminal; redraws at most ``every`` seconds."""

    def __init__(self, stream: TextIO, *, every: float = 0.1, width: int = 28) -> None:
        self.stream, self.every, self.width = stream, every, width
        self.enabled = stream.isatty()
        self.start = time.monotonic()
        self._drawn_at = -1.0
        self._shown = False

    def elapsed(self) -> float:
        """Seconds since the bar was made."""
        return time.monotonic() - self.start

    def update(self, progress: Progress) -> None:
        """Redraw, if enough time has passed (always for the last negotiation)."""
        now = time.monotonic()
        if not self.enabled or (now - self._drawn_at < self.every and progress.remaining):
            return
        self._drawn_at, self._shown = now, True
        self.stream.write("\r" + self.render(progress, now - self.start) + "\x1b[K")
        self.stream.flush()

    def render(self, progress: Progress, seconds: float) -> str:
        """The bar's text for ``progress`` after ``seconds``."""
        finished = progress.skipped + progress.done
        fraction = finished / progress.total if progress.total else 1.0
        filled = int(fraction * self.width)
        rate = progress.done / seconds if seconds > 0 else 0.0
        eta = _clock(progress.remaining / rate) if rate > 0 else "--:--"
        deals = f"{progress.deals / progress.done:.0%}" if progress.done else "-"
        return (
            f"[{'#' * filled}{'.' * (self.width - filled)}] {finished:,}/{progress.total:,} "
            f"{fraction:4.0%}  {rate:,.0f}/s  ETA {eta}  deals {progress.deals:,} ({deals})"
        )

    def close(self) -> None:
        """End the bar's line."""
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"

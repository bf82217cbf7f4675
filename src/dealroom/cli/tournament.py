"""``dealroom tournament``: a round robin written to a results store, resumable."""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from dealroom.cli._common import (
    Commands,
    add_secret_flag,
    positive_int,
    resume_error,
    run_secret,
    tier_list,
    usage_error,
)
from dealroom.cli._players import add_llm_flags, checked_lineup, scripted, seat_settings
from dealroom.play.backends import Backend, ProcessBackend, RayBackend, SerialBackend
from dealroom.play.jobs import TournamentError
from dealroom.play.progress import Budget, Progress
from dealroom.play.registry import split_specs
from dealroom.play.settings import DEFAULT_RUN, PlaySettings, RunSettings
from dealroom.play.tournament import (
    ConfigMismatchError,
    RunExistsError,
    Tournament,
    TournamentConfig,
    stored_seed,
)
from dealroom.protocol import TIERS
from dealroom.protocol.secret import Secret, Seed
from dealroom.store.results import ResultsStore, StoreError

if TYPE_CHECKING:
    from dealroom.agents.lineup import Lineup


def add(commands: Commands) -> None:
    """Register the subcommand."""
    parser = commands.add_parser(
        "tournament",
        help="round robin: every agent against every other in both seats, into a results store",
    )
    parser.add_argument(
        "--agents",
        type=agent_list,
        default=[],
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
    add_secret_flag(parser, public=True)
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
    parser.add_argument(
        "--learner",
        metavar="AGENT",
        help="only the pairings of this agent against the others (a trained model against "
        "fixed opponents); default: the whole round robin",
    )
    parser.add_argument(
        "--learner-role", choices=["buyer", "seller"], help="with --learner: only in this seat"
    )
    parser.add_argument(
        "--backend",
        choices=["local", "ray"],
        default="local",
        help="local (default): process pool and one event loop; ray: model negotiations as "
        "Ray tasks",
    )
    parser.add_argument("--ray-address", help="Ray cluster to join (default: start a local one)")
    llm = parser.add_argument_group("LLM benchmarks")
    llm.add_argument(
        "--models",
        type=Path,
        metavar="FILE.toml",
        help="roster of LLM entries (name, model, endpoint, key variable, sampling, concurrency, "
        "prices); every entry joins --agents under its name",
    )
    add_budget_flags(parser, "negotiation")
    add_llm_flags(parser)
    parser.set_defaults(handler=run)


def add_budget_flags(parser: argparse.ArgumentParser, unit: str) -> None:
    """--max-cost and --max-calls: a ``Budget`` on this invocation's model seats, a game
    (``unit``: a negotiation, a market) being what it stops starting."""
    group = parser.add_argument_group("model budget")
    group.add_argument(
        "--max-cost",
        type=_usd,
        metavar="USD",
        help=f"start no new {unit} once this session's model cost reaches USD (needs "
        "prices in the roster); the ones in flight finish; --resume continues",
    )
    group.add_argument(
        "--max-calls",
        type=positive_int,
        metavar="N",
        help="the same for model calls (failed attempts included)",
    )


def _usd(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive amount: {text!r}")
    return value


def agent_list(text: str) -> list[str]:
    """argparse type: agent specs split on commas (``split_specs``)."""
    specs = split_specs(text)
    if not specs:
        raise argparse.ArgumentTypeError("no agents given")
    return specs


def settings(args: argparse.Namespace) -> tuple[PlaySettings, RunSettings]:
    """What the flags play, and how the run is stored and driven."""
    if not args.agents and args.models is None:
        raise usage_error("give --agents, --models or both")
    secret, given = run_secret(args, public=True)
    play = PlaySettings(
        agents=tuple(args.agents),
        roster=args.models,
        tiers=tuple(args.tiers),
        per_pair=args.per_pair,
        secret=secret if given else None,
        self_play=args.self_play,
        learner=args.learner,
        learner_role=args.learner_role,
        seats=seat_settings(args),
    )
    run = RunSettings(
        out=args.out,
        run=args.run,
        resume=args.resume,
        concurrency=args.concurrency,
        llm_concurrency=args.llm_concurrency,
        backend=args.backend,
        ray_address=args.ray_address,
        max_cost_usd=args.max_cost,
        max_calls=args.max_calls,
    )
    return play, run


def run(args: argparse.Namespace) -> int:
    """``dealroom tournament``: the flags' settings, played."""
    return run_tournament(*settings(args))


def _backend(run: RunSettings) -> Backend:
    if run.backend == "ray":
        try:
            importlib.import_module("ray")
        except ImportError:
            raise usage_error("the ray backend needs Ray: pip install 'dealroom[ray]'") from None
        cpus = None if run.ray_address else run.concurrency
        return RayBackend(address=run.ray_address, num_cpus=cpus)
    if run.ray_address:
        raise usage_error("--ray-address needs --backend ray")
    return SerialBackend() if run.concurrency == 1 else ProcessBackend(run.concurrency)


BUDGET_STOP = 3
"""Exit status of a run stopped by --max-cost or --max-calls (resume it to go on)."""


def _budget(run: RunSettings, players: Lineup) -> Budget:
    models = [name for name in players.agents if name in players.entries or not scripted(name)]
    return budget_of(run.max_cost_usd, run.max_calls, models, players.entries)


def budget_of(
    max_cost: float | None,
    max_calls: int | None,
    models: Iterable[str],
    entries: Mapping[str, Mapping[str, Any]],
) -> Budget:
    """The run's ``Budget``; a usage error if --max-cost is given and one of its model seats
    (``models``: roster entries by name, ``llm:`` specs) has no price (an ``llm:`` spec never
    has one)."""
    if max_cost is not None:
        unpriced = [name for name in models if entries.get(name, {}).get("input_price") is None]
        if unpriced:
            raise usage_error(
                f"--max-cost needs a price for every LLM entry; {unpriced[0]!r} has none "
                "(give input_price and output_price in the --models roster)"
            )
    return Budget(max_cost_usd=max_cost, max_requests=max_calls)


def _seed(play: PlaySettings, run: RunSettings) -> Seed:
    """The given secret; else, resuming, the secret stored with the run; else a fresh one
    (stored with the run: ``dealroom report`` is not needed to find it again)."""
    if play.secret is not None:
        return play.secret
    if run.resume and run.out.exists():
        try:
            with ResultsStore(run.out, create=False) as store:
                stored = stored_seed(store, run.run)
        except StoreError as exc:
            raise usage_error(str(exc)) from None
        if stored is not None:
            return stored
    return Secret.new()


def run_tournament(play: PlaySettings, run: RunSettings) -> int:
    """Play the round robin, then print one summary line on stderr."""
    players = checked_lineup(play)
    budget = _budget(run, players)
    try:
        config = TournamentConfig(
            agents=players.agents,
            tiers=play.tiers,
            per_pair=play.per_pair,
            seed=_seed(play, run),
            self_play=play.self_play,
            entries=players.entries,
            learner=play.learner,
            learner_role=play.learner_role,
        )
    except TournamentError as exc:
        raise usage_error(str(exc)) from None
    backend = _backend(run)
    try:
        store = ResultsStore(run.out)
    except StoreError as exc:
        raise usage_error(str(exc)) from None
    bar = ProgressBar(sys.stderr)
    with store:
        try:
            tournament = Tournament(config, store, run_name=run.run)
        except TournamentError as exc:
            raise usage_error(str(exc)) from None
        try:
            progress = tournament.run(
                players.resolver,
                backend=backend,
                resume=run.resume,
                on_progress=bar.update,
                concurrency=run.llm_concurrency,
                budget=budget,
            )
        except (RunExistsError, ConfigMismatchError) as exc:
            raise resume_error(exc, run.out, "negotiations") from None
        except KeyboardInterrupt:
            bar.close()
            sys.stderr.write(
                f"dealroom: interrupted; {tournament.progress.done:,} negotiations were saved "
                f"to {run.out}: rerun with --resume to finish\n"
            )
            raise
        bar.close()
    sys.stderr.write(summary_line(progress, bar.elapsed(), run.out, run.run) + "\n")
    if progress.stopped is not None:
        sys.stderr.write(
            f"dealroom: stopped: {progress.stopped}; {progress.remaining:,} negotiations left: "
            "rerun with --resume to continue\n"
        )
        return BUDGET_STOP
    return 0


def summary_line(progress: Progress, seconds: float, out: Path, run: str) -> str:
    """The one line a finished run prints."""
    rate = progress.done / seconds if seconds > 0 else 0.0
    deals = f"{progress.deals / progress.done:.0%}" if progress.done else "-"
    skipped = (
        f", {progress.skipped:,} already stored (deals: {progress.skipped_deals:,})"
        if progress.skipped
        else ""
    )
    return (
        f"dealroom: {progress.done:,} negotiations in {seconds:.1f} s ({rate:,.0f}/s), "
        f"{progress.deals:,} deals in {progress.done:,} negotiations ({deals}){skipped}"
        f"{usage_text(progress)}; run {run!r} in "
        f"{out} (dealroom report {out})"
    )


class ProgressBar:
    """Progress on stderr: count, rate, ETA, deals, and for LLM runs model calls, tokens, cost
    and failures so far. On a terminal one line redrawn at most every ``every`` seconds; else
    a plain line at most every ``plain_every`` seconds (a short run prints none)."""

    def __init__(
        self, stream: TextIO, *, every: float = 0.1, plain_every: float = 10.0, width: int = 28
    ) -> None:
        self.stream, self.every, self.width = stream, every, width
        self.plain_every = plain_every
        self.enabled = stream.isatty()
        self.start = time.monotonic()
        self._drawn_at = self.start if not self.enabled else -1.0
        self._shown = False

    def elapsed(self) -> float:
        """Seconds since the bar was made."""
        return time.monotonic() - self.start

    def update(self, progress: Progress) -> None:
        """Redraw, if enough time has passed (on a terminal, always for the last negotiation)."""
        now = time.monotonic()
        if not self.enabled:
            if now - self._drawn_at >= self.plain_every and progress.remaining:
                self._drawn_at = now
                self.stream.write("dealroom: " + self.render(progress, now - self.start) + "\n")
                self.stream.flush()
            return
        if now - self._drawn_at < self.every and progress.remaining:
            return
        self._drawn_at, self._shown = now, True
        self.stream.write("\r" + self.render(progress, now - self.start) + "\x1b[K")
        self.stream.flush()

    def render(self, progress: Progress, seconds: float) -> str:
        """The bar's text for ``progress`` after ``seconds``."""
        finished, deals = progress.finished, progress.finished_deals  # stored before, too
        fraction = finished / progress.total if progress.total else 1.0
        filled = int(fraction * self.width)
        rate = progress.done / seconds if seconds > 0 else 0.0
        eta = _clock(progress.remaining / rate) if rate > 0 else "--:--"
        rate_of_deals = f"{deals / finished:.0%}" if finished else "-"
        bar = "[" + "#" * filled + "." * (self.width - filled) + "] " if self.enabled else ""
        return (
            f"{bar}{finished:,}/{progress.total:,} "
            f"{fraction:4.0%}  {rate:,.{0 if rate >= 10 else 1}f}/s  ETA {eta}  "
            f"deals {deals:,} ({rate_of_deals})" + usage_text(progress)
        )

    def close(self) -> None:
        """End the bar's line."""
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False


def usage_text(progress: Progress) -> str:
    """Model calls, tokens, cost and failures so far (empty for a run without models)."""
    if not progress.requests and not progress.failures:
        return ""
    return (
        f"  calls {progress.requests:,}  tokens {_count(progress.input_tokens)} in / "
        f"{_count(progress.output_tokens)} out  ${progress.cost_usd:,.4f}  "
        f"failures {progress.failures:,}"
    )


def _count(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.1f}M"
    return f"{n / 1e3:.1f}k" if n >= 1000 else str(n)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"

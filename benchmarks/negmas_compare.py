"""Engine throughput side by side with NegMAS 0.16, in one run, on the same workload.

    bash benchmarks/setup_negmas.sh           # once: NegMAS in benchmarks/.venv-negmas
    python benchmarks/negmas_compare.py [--seconds 5] [--steps 20]

Workload: a time-based Boulware buyer against a time-based Conceder seller, one price issue,
the same scenarios (list price, buyer value, seller cost) on both sides. dealroom plays its
virtual clock (120 s deadline: about 13 offers a seat); NegMAS plays SAO with ``--steps`` steps
(two offers a step). Both run in one process on one core, one after the other: dealroom and
the bare loop (``bare_loop.py``: the same game with no rules enforced, the floor of what CPython
does for it), then NegMAS (a subprocess on the benchmark venv's python, ``_negmas_side.py``),
then the bare loop and dealroom again. Rates are per wall second and per CPU second of the
measuring process; on a busy machine the CPU figure is the fair one. Prints the rates and the
ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bare_loop
from dealroom.protocol.generator import generate
from engine import EngineFigures, measure

HERE = Path(__file__).resolve().parent
NEGMAS_PYTHON = HERE / ".venv-negmas" / "bin" / "python"
TARGET_RATIO = 30.0


@dataclass(frozen=True)
class Comparison:
    """dealroom's figures, NegMAS's (None if it could not run) and why not."""

    dealroom: EngineFigures
    negmas: dict[str, Any] | None
    problem: str | None = None
    bare: list[float] | None = None
    """The bare loop's negotiations per CPU second (``bare_loop.py``), one per repeat."""

    @property
    def bare_rate(self) -> float | None:
        return None if not self.bare else statistics.median(self.bare)

    @property
    def ratio_wall(self) -> float | None:
        return None if self.negmas is None else self.dealroom.wall_rate / self.negmas["wall_rate"]

    @property
    def ratio_cpu(self) -> float | None:
        return None if self.negmas is None else self.dealroom.cpu_rate / self.negmas["cpu_rate"]


def negmas_side(rows: list[list[float]], *, seconds: float, steps: int) -> dict[str, Any]:
    """Run ``_negmas_side.py`` in the NegMAS venv; its JSON. Raises RuntimeError if it cannot."""
    if not NEGMAS_PYTHON.exists():
        raise RuntimeError(
            f"NegMAS is not installed ({NEGMAS_PYTHON} is missing): run "
            "`bash benchmarks/setup_negmas.sh` first"
        )
    request = json.dumps({"scenarios": rows, "seconds": seconds, "repeats": 5, "steps": steps})
    done = subprocess.run(
        [str(NEGMAS_PYTHON), str(HERE / "_negmas_side.py")],
        input=request,
        capture_output=True,
        text=True,
        timeout=120 + 10 * seconds,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the NegMAS side failed (exit {done.returncode}): {last}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def compare(*, seconds: float = 5.0, steps: int = 20) -> Comparison:
    """dealroom, the bare loop, NegMAS, the bare loop and dealroom again (so that a change in
    load hits every side alike)."""
    scenarios = generate(100, seed=7)
    rows = [[float(s.list_price), float(s.buyer_value), float(s.seller_cost)] for s in scenarios]
    games = [bare_loop.Game.of(s) for s in scenarios]
    before = measure(scenarios, seconds=seconds / 2, repeats=3)
    bare = bare_loop.measure(games, seconds=seconds / 2, repeats=3)
    try:
        negmas: dict[str, Any] | None = negmas_side(rows, seconds=seconds, steps=steps)
        problem = None
    except (RuntimeError, OSError, subprocess.TimeoutExpired, ValueError) as exc:
        negmas, problem = None, str(exc)
    bare += bare_loop.measure(games, seconds=seconds / 2, repeats=3)
    after = measure(scenarios, seconds=seconds / 2, repeats=3)
    ours = EngineFigures(
        wall_rates=before.wall_rates + after.wall_rates,
        cpu_rates=before.cpu_rates + after.cpu_rates,
        events=before.events,
        offers=before.offers,
        deal_rate=before.deal_rate,
    )
    return Comparison(ours, negmas, problem, bare)


def report(result: Comparison) -> None:
    """Print both rates and the ratio."""
    ours = result.dealroom
    print("engine vs NegMAS: Boulware buyer vs Conceder seller, one price issue, one core")
    print(
        f"  dealroom          {ours.wall_rate:9,.0f} negotiations/s   {ours.cpu_rate:9,.0f} per "
        f"CPU s   ({ours.offers:.1f} offers, deal rate {ours.deal_rate:.0%})"
    )
    bare = result.bare_rate
    if bare is not None:
        print(
            f"  bare loop                                 {bare:9,.0f} per CPU s   (the same "
            f"game, no rules enforced; dealroom runs at {ours.cpu_rate / bare:.0%} of it)"
        )
    if result.negmas is None:
        print(f"  NegMAS            not measured: {result.problem}")
        print(
            "  (NegMAS 0.16 measured on a quiet machine of this kind: 161 negotiations/s, "
            "20 steps; not side by side)"
        )
        return
    theirs = result.negmas
    print(
        f"  NegMAS {theirs['negmas']:<10} {theirs['wall_rate']:9,.0f} negotiations/s   "
        f"{theirs['cpu_rate']:9,.0f} per CPU s   ({theirs['offers']:.1f} offers, deal rate "
        f"{theirs['deal_rate']:.0%}; SAO, {theirs['steps']} steps)"
    )
    print(
        f"  ratio             {result.ratio_wall:9.1f}x wall            {result.ratio_cpu:9.1f}x "
        f"CPU   (target >= {TARGET_RATIO:g}x)"
    )
    if bare is not None:
        print(f"  bare loop / NegMAS                        {bare / theirs['cpu_rate']:9.1f}x CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="timed seconds per side")
    parser.add_argument("--steps", type=int, default=20, help="NegMAS SAO steps")
    args = parser.parse_args()
    report(compare(seconds=args.seconds, steps=args.steps))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

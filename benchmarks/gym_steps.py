"""Gymnasium throughput: ``dealroom/Bargain-v0`` steps per second, one core.

    python benchmarks/gym_steps.py [--seconds 5] [--opponent linear]

A fixed linear policy (action = W @ observation + b, clipped to the action box) plays the buyer
seat against the ``linear`` opponent, resetting at the end of each episode; resets count in the
time but not as steps. Prints steps per wall second and per CPU second of this process (on a
busy machine the second is the one to compare), steps per episode and the deal rate.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

import numpy as np

from dealroom.training import BargainEnv

TARGET = 20_000.0
"""Steps per CPU second (issue 14)."""

# Move 8 (0.8 - their offer) when the seller has an offer, else 0: offer until the seller
# offers, then wait while its offer is above about 0.84 of the list price, offer near 0.8 and
# accept below about 0.76. The price rises with time from 0.6 of the list price: a plain linear
# map of the eight observation features (spaces.py).
WEIGHTS = np.array(
    [
        [0.0, 0.0, 0.0, 6.4, -8.0, 0.0, 0.0, 0.0],  # move
        [0.0, 0.0, 0.45, 0.0, 0.0, 0.0, 0.0, 0.0],  # price: 1 + a[1] of the list price
    ],
    dtype=np.float32,
)
BIAS = np.array([0.0, -0.4], dtype=np.float32)


def policy(observation: np.ndarray) -> np.ndarray:
    """The linear policy."""
    return np.clip(WEIGHTS @ observation + BIAS, -1.0, 1.0)


@dataclass(frozen=True)
class GymFigures:
    """What one measurement found."""

    wall_rates: list[float]
    cpu_rates: list[float]
    steps_per_episode: float
    deal_rate: float

    @property
    def cpu_rate(self) -> float:
        return statistics.median(self.cpu_rates)

    @property
    def wall_rate(self) -> float:
        return statistics.median(self.wall_rates)


def measure(*, opponent: str = "linear", seconds: float = 5.0, repeats: int = 5) -> GymFigures:
    """Step the environment for about ``seconds`` in ``repeats`` timed runs."""
    env = BargainEnv(role="buyer", opponent=opponent)
    obs, _ = env.reset(seed=0)
    episodes, deals, steps_total = 0, 0, 0
    wall_rates, cpu_rates = [], []
    for run in range(repeats + 1):  # the first run warms up
        steps, start, cpu = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - start < seconds / repeats:
            for _ in range(200):
                obs, _, done, _, info = env.step(policy(obs))
                steps += 1
                if done:
                    episodes += 1
                    deals += info["outcome"].status == "deal"
                    obs, _ = env.reset()
        if run:
            wall_rates.append(steps / (time.perf_counter() - start))
            cpu_rates.append(steps / max(time.process_time() - cpu, 1e-9))
            steps_total += steps
    return GymFigures(
        wall_rates=wall_rates,
        cpu_rates=cpu_rates,
        steps_per_episode=steps_total / max(episodes, 1),
        deal_rate=deals / max(episodes, 1),
    )


def report(figures: GymFigures, opponent: str = "linear") -> None:
    """Print one measurement."""
    print(f"gymnasium: dealroom/Bargain-v0, linear policy (buyer) vs {opponent}, one core")
    runs = ", ".join(f"{r:,.0f}" for r in figures.cpu_rates)
    print(f"  steps per CPU second  median {figures.cpu_rate:,.0f}  (runs: {runs})")
    print(f"  steps per wall second median {figures.wall_rate:,.0f}")
    print(
        f"  steps/episode {figures.steps_per_episode:.1f}  deal rate {figures.deal_rate:.0%}  "
        f"(target >= {TARGET:,.0f} steps per CPU second)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opponent", default="linear")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    report(measure(opponent=args.opponent, seconds=args.seconds, repeats=args.repeats))


if __name__ == "__main__":
    main()

"""Engine throughput: scripted negotiations per second, in-process, one core.

    python benchmarks/engine.py [--buyer boulware] [--seller conceder] [--seconds 5]

Prints negotiations per second (per wall second and per CPU second of this process: on a busy
machine the second is the one to compare), events per negotiation and the deal rate.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

from dealroom.agents import resolve
from dealroom.engine.match import play
from dealroom.protocol import Scenario
from dealroom.protocol.generator import generate


@dataclass(frozen=True)
class EngineFigures:
    """What one engine measurement found."""

    wall_rates: list[float]
    """Negotiations per wall second, one per repeat."""
    cpu_rates: list[float]
    """Negotiations per CPU second of this process, one per repeat."""
    events: float
    offers: float
    deal_rate: float

    @property
    def wall_rate(self) -> float:
        return statistics.median(self.wall_rates)

    @property
    def cpu_rate(self) -> float:
        return statistics.median(self.cpu_rates)


def measure(
    scenarios: list[Scenario],
    *,
    buyer: str = "boulware",
    seller: str = "conceder",
    seconds: float = 5.0,
    repeats: int = 5,
) -> EngineFigures:
    """Play ``scenarios`` over and over for about ``seconds``, in ``repeats`` timed runs."""
    buyer_factory, seller_factory = resolve(buyer), resolve(seller)
    records = [play(s, buyer_factory, seller_factory) for s in scenarios]  # warm up, and shape
    batch = scenarios[:30]
    wall_rates, cpu_rates = [], []
    for _ in range(repeats):
        count, start, cpu = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - start < seconds / repeats:
            for scenario in batch:
                play(scenario, buyer_factory, seller_factory)
            count += len(batch)
        wall_rates.append(count / (time.perf_counter() - start))
        cpu_rates.append(count / max(time.process_time() - cpu, 1e-9))
    return EngineFigures(
        wall_rates=wall_rates,
        cpu_rates=cpu_rates,
        events=statistics.mean(len(r.events) for r in records),
        offers=statistics.mean(r.outcome.offers.buyer + r.outcome.offers.seller for r in records),
        deal_rate=sum(r.outcome.status == "deal" for r in records) / len(records),
    )


def report(figures: EngineFigures, label: str) -> None:
    """Print one measurement."""
    print(f"engine: {label}")
    runs = ", ".join(f"{r:,.0f}" for r in figures.wall_rates)
    print(f"  negotiations/s  median {figures.wall_rate:,.0f}  (runs: {runs})")
    print(f"  negotiations per CPU second  median {figures.cpu_rate:,.0f}")
    print(
        f"  events/negotiation {figures.events:.1f}  offers/negotiation {figures.offers:.1f}  "
        f"deal rate {figures.deal_rate:.0%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buyer", default="boulware")
    parser.add_argument("--seller", default="conceder")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    scenarios = generate(100, seed=7)
    figures = measure(
        scenarios,
        buyer=args.buyer,
        seller=args.seller,
        seconds=args.seconds,
        repeats=args.repeats,
    )
    report(figures, f"{args.buyer} (buyer) vs {args.seller} (seller), {len(scenarios)} scenarios")


if __name__ == "__main__":
    main()

"""Engine throughput: scripted negotiations per second, in-process, one core.

    python benchmarks/engine.py [--buyer boulware] [--seller conceder] [--seconds 5]

Prints negotiations per second, events per negotiation and the deal rate.
"""

from __future__ import annotations

import argparse
import statistics
import time

from dealroom.agents import resolve
from dealroom.protocol.generator import generate
from dealroom.server.match import play


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--buyer", default="boulware")
    parser.add_argument("--seller", default="conceder")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    buyer, seller = resolve(args.buyer), resolve(args.seller)
    scenarios = generate(100, seed=7)
    records = [play(s, buyer, seller) for s in scenarios]  # warm up, and shape figures
    rates = []
    for _ in range(args.repeats):
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.seconds / args.repeats:
            for scenario in scenarios[:30]:
                play(scenario, buyer, seller)
            count += 30
        rates.append(count / (time.perf_counter() - start))
    events = statistics.mean(len(r.events) for r in records)
    offers = statistics.mean(r.outcome.offers.buyer + r.outcome.offers.seller for r in records)
    deals = sum(r.outcome.status == "deal" for r in records) / len(records)
    print(f"engine: {args.buyer} (buyer) vs {args.seller} (seller), {len(scenarios)} scenarios")
    print(f"  negotiations/s  median {statistics.median(rates):,.0f}  (runs: "
          + ", ".join(f"{r:,.0f}" for r in rates) + ")")
    print(f"  events/negotiation {events:.1f}  offers/negotiation {offers:.1f}  deal rate {deals:.0%}")


if __name__ == "__main__":
    main()

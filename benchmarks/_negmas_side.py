"""The NegMAS side of benchmarks/negmas_compare.py; runs in benchmarks/.venv-negmas.

Reads one JSON object on stdin: ``{"scenarios": [[list_price, buyer_value, seller_cost], ...],
"seconds": S, "repeats": R, "steps": N}``; prints one JSON object on stdout.

The workload mirrors dealroom's engine benchmark: a time-based Boulware buyer against a
time-based Conceder seller (SAO, ``N`` steps), one price issue. Prices are whole percent of the
list price from 50 to 130 (the range dealroom's time-dependent agents open at), the fastest
discretisation of those tried (a continuous issue and whole currency units are both slower).
Utilities are linear in price and zero at the seat's own value (the reserved value).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import warnings


def main() -> None:
    warnings.filterwarnings("ignore")
    import negmas
    from negmas import BoulwareTBNegotiator, ConcederTBNegotiator, SAOMechanism, make_issue
    from negmas.preferences import LinearAdditiveUtilityFunction
    from negmas.preferences.value_fun import AffineFun

    request = json.load(sys.stdin)
    steps = int(request.get("steps", 20))
    issues = [make_issue(values=(50, 130), name="price")]

    def one(list_price: float, value: float, cost: float) -> tuple[bool, int]:
        # Price p% of the list price: the buyer's utility is value - p L / 100, the seller's
        # p L / 100 - cost.
        unit = list_price / 100
        mechanism = SAOMechanism(issues=issues, n_steps=steps)
        buyer = LinearAdditiveUtilityFunction(
            values=[AffineFun(-unit, bias=value)], issues=issues, reserved_value=0.0
        )
        seller = LinearAdditiveUtilityFunction(
            values=[AffineFun(unit, bias=-cost)], issues=issues, reserved_value=0.0
        )
        mechanism.add(BoulwareTBNegotiator(name="buyer"), preferences=buyer)
        mechanism.add(ConcederTBNegotiator(name="seller"), preferences=seller)
        state = mechanism.run()
        return state.agreement is not None, len(mechanism.extended_trace)

    scenarios = [tuple(map(float, row)) for row in request["scenarios"]]
    shapes = [one(*s) for s in scenarios]  # warm up, and shape figures
    batch = scenarios[:30]
    seconds = float(request.get("seconds", 5.0))
    repeats = int(request.get("repeats", 5))
    wall_rates, cpu_rates = [], []
    for _ in range(repeats):
        count, start, cpu = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - start < seconds / repeats:
            for scenario in batch:
                one(*scenario)
            count += len(batch)
        wall_rates.append(count / (time.perf_counter() - start))
        cpu_rates.append(count / max(time.process_time() - cpu, 1e-9))
    result = {
        "negmas": negmas.__version__,
        "python": sys.version.split()[0],
        "steps": steps,
        "wall_rates": wall_rates,
        "cpu_rates": cpu_rates,
        "wall_rate": statistics.median(wall_rates),
        "cpu_rate": statistics.median(cpu_rates),
        "offers": statistics.mean(offers for _, offers in shapes),
        "deal_rate": sum(deal for deal, _ in shapes) / len(shapes),
    }
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()

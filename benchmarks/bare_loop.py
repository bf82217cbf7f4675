"""A floor for the engine benchmark: the same game as one bare loop, no rules enforced.

    python benchmarks/bare_loop.py [--seconds 5]

It plays exactly what ``negmas_compare.py`` measures (a time-dependent Boulware buyer against
a Conceder seller with AC_next, dealroom's default rules and virtual clock, on the same
scenarios), with everything the engine adds left out: no validation of any action, no wire
models (integer cents, tuples), no scoring, no record, no seats' generators, the two tactics
and the clock written into one function. ``tests/test_bare_loop.py`` checks that it reaches
the engine's result (status, price, number of events) on every scenario, so it is the same
game. Its rate is what CPython does for this game at the least; the engine's rate against it
says how much the engine's guarantees cost. It is a reference, not an engine: nothing else
uses it.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

from dealroom.protocol import DEFAULT_RULES, Scenario
from dealroom.protocol.generator import generate

# The benchmark's pairing (dealroom.agents.builtin: boulware, conceder; _tactics: AC_next).
SELLER_E, SELLER_OPEN = 2.0, 1.3
BUYER_E, BUYER_OPEN = 0.2, 0.5
STEP = 10.0
"""Seconds either tactic waits for news before conceding again."""
PER_WAKE = DEFAULT_RULES.thinking.per_wake
OFFER_COST = DEFAULT_RULES.costs.make_offer
ACCEPT_COST = DEFAULT_RULES.costs.accept
MIN_STEP = 0.001


@dataclass(frozen=True, slots=True)
class Game:
    """One scenario in integer cents."""

    list_cents: int
    buyer_cents: int
    seller_cents: int
    deadline: float

    @classmethod
    def of(cls, scenario: Scenario) -> Game:
        return cls(
            int(scenario.list_price * 100),
            int(scenario.private_value("buyer") * 100),
            int(scenario.private_value("seller") * 100),
            scenario.deadline,
        )


def play(game: Game) -> tuple[int | None, int]:
    """(deal price in cents or None, number of events) of one negotiation."""
    lc, deadline = game.list_cents, game.deadline
    # Per seat (0 seller, 1 buyer: the first mover first): reservation, curve, clock.
    res = (game.seller_cents, game.buyer_cents)
    r0, r1 = game.seller_cents / lc, game.buyer_cents / lc
    start = (max(SELLER_OPEN, r0), min(BUYER_OPEN, r1))
    span = (r0 - start[0], r1 - start[1])
    power = (1 / SELLER_E, 1 / BUYER_E)
    ready, wake, news = [0.0, 0.0], [0.0, 0.0], [math.inf, math.inf]
    pending: list[list[tuple[str, int, str]]] = [[], []]
    """Queued actions: ("offer", price, "") or ("accept", price, offer id)."""
    live: list[tuple[str, int] | None] = [None, None]
    offers = events = 0
    while True:
        # Each seat's next item: its queued action, else its wake-up (or news).
        due: list[tuple[float, bool]] = []
        for i in (0, 1):
            if pending[i]:
                cost = OFFER_COST if pending[i][0][0] == "offer" else ACCEPT_COST
                due.append((round(ready[i] + cost, 3), True))
            else:
                soonest = min(wake[i], news[i])
                due.append((max(soonest, ready[i]), False))
        (at0, act0), (at1, act1) = due
        i = 1 if at1 < at0 or (at1 == at0 and act1 and not act0) else 0
        at = due[i][0]
        if at >= deadline:
            return None, events + 1
        j = 1 - i
        if pending[i]:
            kind, price, offer_id = pending[i].pop(0)
            ready[i] = at
            if kind == "accept":
                theirs = live[j]
                if theirs is not None and theirs[0] == offer_id:
                    return price, events + 2
                wake[i] = at  # refused (the offer was withdrawn meanwhile): wake at once
                continue
            if live[i] is not None:
                events += 1
            offers += 1
            live[i] = (f"o{offers}", price)
            events += 1
            news[j] = min(news[j], at)
            continue
        # A wake: the tactic decides (price along its curve, then AC_next).
        ready[i], news[i] = at, math.inf
        t = min(max(at / deadline, 0.0), 1.0)
        fraction = start[i] + span[i] * t ** power[i]
        mine = (round(fraction * 1e9) * lc + 500_000_000) // 1_000_000_000
        mine = max(mine, res[i], 1) if i == 0 else max(min(mine, res[i]), 1)
        theirs, own = live[j], live[i]
        ready[i] = round(at + PER_WAKE, 3)
        if theirs is not None:
            price = theirs[1]
            better = price >= mine if i == 0 else price <= mine
            safe = price >= res[i] if i == 0 else price <= res[i]
            if (better or abs(price - mine) * 1_000_000 <= lc) and safe:
                pending[i].append(("accept", price, theirs[0]))
                wake[i] = math.inf  # an accept asks for no wake-up
                continue
        wake[i] = round(ready[i] + STEP, 3)
        if own is None or abs(own[1] - mine) * 1000 >= lc:  # else stand by the own offer
            pending[i].append(("offer", mine, ""))


def measure(games: list[Game], *, seconds: float = 5.0, repeats: int = 5) -> list[float]:
    """Negotiations per CPU second, one figure per repeat."""
    batch = games[:30]
    rates = []
    for _ in range(repeats):
        count, start, cpu = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - start < seconds / repeats:
            for game in batch:
                play(game)
            count += len(batch)
        rates.append(count / max(time.process_time() - cpu, 1e-9))
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    games = [Game.of(s) for s in generate(100, seed=7)]
    rates = measure(games, seconds=args.seconds)
    print(f"bare loop: the benchmark's game, no rules enforced, {len(games)} scenarios")
    print(f"  negotiations per CPU second  median {sorted(rates)[len(rates) // 2]:,.0f}")


if __name__ == "__main__":
    main()

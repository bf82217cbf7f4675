"""The oracle: the best surplus a seat could have reached against a scripted counterpart.

A scripted counterpart is deterministic under the run's secret (its generator is
``seat_rng(seed, scenario id, role)``), so every policy of the other seat can be played against
it again. ``search`` plays a bounded family of simple policies of the seat against fresh copies
of the counterpart on the scenario, under the same rules and clock, and keeps the best surplus:

1. **silent**: never act (the counterpart's offers against silence);
2. **take(k)**: stay silent and accept the counterpart's k-th offer, for its offers best first
   until one lands;
3. **anchor(p, t)**: offer ``p`` so that it takes effect at ``t`` (optionally with a message at
   a later time to wake the counterpart), then hold and accept any offer at least as good;
   for a few times ``t`` down from the latest at which the counterpart can still accept before
   the deadline, ``p`` found by bisection;
4. **probe(q)**: a new far-off offer on every wake (a conceding ratio and a new offer each
   time), accept the first offer at least as good as ``q``; ``q`` by bisection.

Bisection is on the seat's surplus in cents, down to ``max(1 cent, (v - c) / 2^14)``. The
result is **exact** when it reaches a proven upper bound: ``v - c`` (no scripted agent deals
on the losing side of its own value), or, against a counterpart that reads nothing but the
clock (it has ``worst_accepted(now)``: the time-dependent tactics), the best price it accepts
at the latest wake whose accept still lands before the deadline. Otherwise it is a lower
bound, from the number of negotiations simulated (at most ``budget``, 200 by default).

``oracle_surplus`` does this for one seat of a stored record: it rebuilds the counterpart from
its spec, checks that replaying the seat's own actions against it reproduces the record (a
wrong seed, edited record or non-scripted counterpart gives ``NoOracle`` with the reason), and
counts the record's own play as one more policy. ``oracles`` does it for every seat of many
records, one search per (scenario, role, counterpart).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Protocol, runtime_checkable

from dealroom.analysis.oracle import OracleKey, OracleResult, oracle_key
from dealroom.engine.fork import batches
from dealroom.engine.seats import MIN_STEP
from dealroom.play._oracle_policies import (
    Anchor,
    Clock,
    Policy,
    Probe,
    Replay,
    Silent,
    Simulated,
    Simulator,
    Take,
)
from dealroom.play.registry import AgentSpecError, is_scripted, resolve
from dealroom.protocol import (
    DEFAULT_RULES,
    ROLES,
    AgentFactory,
    Role,
    Rules,
    Scenario,
    offer_of,
    other,
)
from dealroom.protocol._base import CENT, round_ms, to_cents
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Seed

__all__ = [
    "DEFAULT_BUDGET",
    "NoOracle",
    "OracleTable",
    "TimeOnly",
    "latest_accept_wake",
    "oracle_surplus",
    "oracles",
    "replay",
    "search",
]

DEFAULT_BUDGET = 200
"""Most negotiations simulated per seat's search (the record's replay not counted)."""

BISECTION_STEPS = 14
"""Bisection stops at (v - c) / 2^14, or a cent if that is more."""

ANCHOR_LEADS = (0.0, 2.0, 5.0, 10.0, 30.0)
"""Seconds before the latest useful time at which anchor offers are tried."""

POKE_LEADS = (8.0, 7.0)
"""Against a clock-only counterpart busy at the latest time: an anchor this many seconds
earlier (the counterpart answers it and is free again), then a message at the latest time."""


@runtime_checkable
class TimeOnly(Protocol):
    """A counterpart whose acceptance reads nothing but the clock."""

    def worst_accepted(self, now: float, /) -> Decimal:
        """The least favourable price it accepts (or offers) when woken at ``now``."""
        ...


@dataclass(frozen=True, slots=True)
class NoOracle:
    """Why a seat has no oracle value."""

    reason: str


def latest_accept_wake(rules: Rules, deadline: float) -> float:
    """The latest clock time at which a woken seat's accept still lands before the deadline."""
    think = max(rules.thinking.per_wake, MIN_STEP)
    return round_ms(deadline - think - rules.costs.of("accept") - MIN_STEP)


@dataclass(slots=True)
class _Search:
    sim: Simulator
    budget: int
    value: Decimal
    """The searched seat's own value."""
    bound: Decimal
    """Upper bound of the surplus, in money."""
    best: Decimal = Decimal(0)
    policy: str = "no deal"
    described: dict[int, str] = field(default_factory=dict[int, str])

    @property
    def left(self) -> int:
        return self.budget - self.sim.count

    @property
    def done(self) -> bool:
        return self.best >= self.bound or self.left <= 0

    def price_for(self, surplus: Decimal) -> Decimal:
        """The price that gives the seat ``surplus``."""
        return self.value - surplus if self.sim.role == "buyer" else self.value + surplus

    def surplus_at(self, price: Decimal) -> Decimal:
        return self.value - price if self.sim.role == "buyer" else price - self.value

    def run(self, policy: Policy, name: str) -> Simulated | None:
        """Play ``policy`` (None once the budget is spent); keep it if it is the best."""
        if self.left <= 0:
            return None
        played = self.sim.play(policy)
        if played.surplus is not None and played.surplus > self.best:
            self.best, self.policy = played.surplus, name
        return played

    def bisect(self, make: Callable[[Decimal], tuple[Policy, str]]) -> None:
        """The largest surplus for which ``make(price)`` makes a deal, assuming a deal at a
        surplus means one at every smaller surplus; first one step past the best so far (if
        that fails there is nothing to find). In whole cents."""
        tol = max(1, _cents(self.bound) >> BISECTION_STEPS)
        lo, hi = _cents(self.best), _cents(self.bound)
        trial, first = lo + tol, True
        while trial <= hi and not self.done:
            played = self.run(*make(self.price_for(Decimal(trial) * CENT)))
            if played is None:
                return
            if played.surplus is not None:
                lo = max(trial, _cents(played.surplus))
            elif first:
                return
            else:
                hi = trial - 1
            first = False
            if hi - lo < tol:
                return
            trial = lo + (hi - lo + 1) // 2


def _cents(amount: Decimal) -> int:
    return int(amount / CENT)


def search(
    scenario: Scenario,
    role: Role,
    counterpart: AgentFactory,
    *,
    seed: Seed,
    rules: Rules = DEFAULT_RULES,
    budget: int = DEFAULT_BUDGET,
) -> OracleResult:
    """The best surplus ``role`` reaches against ``counterpart`` (built for the other seat as
    in the original negotiation) on ``scenario``, over the policy family above."""
    gains = scenario.gains
    if gains <= 0:
        return OracleResult(Decimal(0), True, 0, Decimal(0), "no deal (v <= c)")
    sim = Simulator(scenario, role, counterpart, seed, rules)
    value = scenario.private_value(role)
    clock = Clock.of(rules)
    latest = latest_accept_wake(rules, scenario.deadline)
    bound, certificate = gains, None
    probe_agent = sim.fresh_counterpart()
    if isinstance(probe_agent, TimeOnly):
        certificate = probe_agent.worst_accepted(latest)
        sure = value - certificate if role == "buyer" else certificate - value
        bound = max(Decimal(0), min(gains, sure))
    s = _Search(sim, budget, value, bound)
    if bound > 0:
        _take(s, clock)
        if certificate is not None and not s.done:
            for poke_lead in (None, *POKE_LEADS):
                at = latest if poke_lead is None else round_ms(latest - poke_lead)
                poke = None if poke_lead is None else latest
                policy = Anchor(certificate, at, clock, poke)
                if s.done:
                    break
                s.run(policy, _anchor_name(certificate, at, poke))
        for lead in ANCHOR_LEADS:
            if s.done:
                break
            at = round_ms(latest - lead)
            s.bisect(lambda p, at=at: (Anchor(p, at, clock), _anchor_name(p, at, None)))
        if not s.done:
            highest = to_cents(scenario.list_price * Decimal(repr(rules.max_price_multiple)))
            s.bisect(lambda p: (Probe(p, scenario.list_price, highest, clock), f"probe(limit={p})"))
    return OracleResult(s.best, s.best >= bound, sim.count, bound, s.policy)


def _anchor_name(price: Decimal, at: float, poke: float | None) -> str:
    poked = "" if poke is None else f", poke={poke:g}"
    return f"anchor(price={price}, at={at:g}{poked})"


def _take(s: _Search, clock: Clock) -> None:
    """Silence, then the counterpart's offers against silence, best first, until one lands."""
    silent = s.run(Silent(clock.per_wake), "silent")
    if silent is None:
        return
    them = other(s.sim.role)
    offers = [o for e in silent.events if (o := offer_of(e)) is not None and o.by == them]
    offers.sort(key=lambda o: (s.surplus_at(o.price), -o.t), reverse=True)
    for offer in offers:
        if s.done or s.surplus_at(offer.price) <= s.best:
            return
        played = s.run(Take(offer.offer_id, clock.per_wake), f"take({offer.offer_id})")
        if played is not None and played.surplus is not None:
            return


def replay(
    record: NegotiationRecord, role: Role, counterpart: AgentFactory, *, seed: Seed, rules: Rules
) -> Simulated | None:
    """The record's own play of ``role`` against a fresh counterpart; None unless it
    reproduces the record's events exactly."""
    plan = batches(record.events, rules)[role]
    sim = Simulator(record.scenario, role, counterpart, seed, rules)
    policy = Replay(plan)
    played = sim.play(policy)
    if policy.failed or played.events != record.events:
        return None
    return played


def oracle_surplus(
    record: NegotiationRecord,
    role: Role,
    *,
    seed: Seed,
    rules: Rules = DEFAULT_RULES,
    budget: int = DEFAULT_BUDGET,
    include_record: bool = True,
) -> OracleResult | NoOracle:
    """The oracle of ``role`` in ``record`` against the other seat, which must be a scripted
    agent the registry rebuilds from its spec and which must reproduce the record under
    ``seed`` and ``rules`` (the run's). ``include_record``: count the record's own play as a
    policy (the oracle is then never below the seat's surplus)."""
    spec = record.seller if role == "buyer" else record.buyer
    factory = _factory(spec, other(role))
    if isinstance(factory, NoOracle):
        return factory
    own = replay(record, role, factory, seed=seed, rules=rules)
    if own is None:
        return _not_reproduced(spec, other(role))
    found = search(record.scenario, role, factory, seed=seed, rules=rules, budget=budget)
    if not include_record:
        return dataclasses.replace(found, simulations=found.simulations + 1)
    return _with_own(found, own, spec=record.buyer if role == "buyer" else record.seller)


def _with_own(found: OracleResult, own: Simulated, *, spec: str) -> OracleResult:
    """``found`` with the record's own play counted as one more policy."""
    mine = own.surplus if own.surplus is not None else Decimal(0)
    better = mine > found.surplus
    return OracleResult(
        surplus=mine if better else found.surplus,
        exact=found.exact or mine >= found.bound,
        simulations=found.simulations + 1,
        bound=found.bound,
        policy=f"the record's own play ({spec})" if better else found.policy,
    )


@dataclass(frozen=True, slots=True)
class OracleTable:
    """Oracle values of many seats, and why the others have none."""

    values: dict[OracleKey, OracleResult]
    """By (scenario id, role, counterpart spec): one search each, and every record's own play
    against that counterpart on that scenario counted as a policy."""
    skipped: dict[tuple[str, Role, str], str]
    """(scenario id, role, the seat's own spec) -> the reason it has no oracle value."""


def oracles(
    records: Iterable[NegotiationRecord],
    *,
    seed: Seed,
    rules: Rules = DEFAULT_RULES,
    budget: int = DEFAULT_BUDGET,
) -> OracleTable:
    """Every seat's oracle value against a scripted counterpart, for the records of one run
    (``seed`` and ``rules`` as the run's configuration records them)."""
    values: dict[OracleKey, OracleResult] = {}
    skipped: dict[tuple[str, Role, str], str] = {}
    factories: dict[str, AgentFactory | NoOracle] = {}
    for record in records:
        for r in ROLES:
            mine, spec = (
                (record.buyer, record.seller) if r == "buyer" else (record.seller, record.buyer)
            )
            factory = factories.get(spec)
            if factory is None:
                factory = factories[spec] = _factory(spec, other(r))
            if isinstance(factory, NoOracle):
                skipped[(record.scenario.id, r, mine)] = factory.reason
                continue
            own = replay(record, r, factory, seed=seed, rules=rules)
            if own is None:
                skipped[(record.scenario.id, r, mine)] = _not_reproduced(spec, other(r)).reason
                continue
            key = oracle_key(record, r)
            found = values.get(key)
            if found is None:
                found = search(record.scenario, r, factory, seed=seed, rules=rules, budget=budget)
            values[key] = _with_own(found, own, spec=mine)
    return OracleTable(values, skipped)


def _not_reproduced(spec: str, role: Role) -> NoOracle:
    return NoOracle(f"the {role} {spec!r} does not reproduce the record under this seed")


def _factory(spec: str, role: Role) -> AgentFactory | NoOracle:
    try:
        if not is_scripted(spec):
            return NoOracle(f"the {role} {spec!r} is not a scripted agent")
        return resolve(spec)
    except AgentSpecError as exc:
        return NoOracle(f"the {role} {spec!r} is no registry agent: {exc}")

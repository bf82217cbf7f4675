"""Test doubles and checks for people who write agents.

- ``ScriptedAgent``: replays a fixed list of decisions (then waits forever).
- ``check_agent``: plays your agent in both seats against the built-in strategies and raises
  ``AgentCheckError`` naming the first problem: an exception, something that is not a Decision,
  a deal that loses your agent money, or different results for the same seed.
- ``check_market_agent``: the same for a market seller (docs/design.md section 12), against
  pools of built-in buyers, in markets of one and of three buyers.

Usage::

    from dealroom.testing import check_agent
    check_agent(MyAgent)          # MyAgent(view, rng) -> object with act(observation)
    check_market_agent(MySeller)  # MySeller(market_view, rng) -> act(market_observation)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from dealroom.agents import resolve
from dealroom.engine.market import play_market
from dealroom.engine.match import play
from dealroom.protocol import (
    TIERS,
    Action,
    AgentFactory,
    Decision,
    Observation,
    Role,
    SeatView,
)
from dealroom.protocol.agent import DecisionError, check_decision
from dealroom.protocol.errors import DealroomError
from dealroom.protocol.generator import generate
from dealroom.protocol.market import (
    MarketAgentFactory,
    MarketDecision,
    MarketView,
    check_market_decision,
)
from dealroom.protocol.market_referee import MarketRecord
from dealroom.protocol.market_scenarios import generate_markets
from dealroom.protocol.record import NegotiationRecord

__all__ = ["AgentCheckError", "ScriptedAgent", "check_agent", "check_market_agent"]

DEFAULT_OPPONENTS = ("hardliner", "boulware", "linear", "conceder")


@dataclass
class ScriptedAgent:
    """Replays ``decisions`` one per wake; afterwards sleeps until the negotiation ends.

    ``observations`` records what it was shown, for assertions.
    """

    decisions: Sequence[Decision]
    observations: list[Observation] = field(default_factory=list[Observation])

    def act(self, observation: Observation) -> Decision:
        """The next scripted decision."""
        self.observations.append(observation)
        index = len(self.observations) - 1
        return self.decisions[index] if index < len(self.decisions) else Decision()

    @classmethod
    def of(cls, *actions: Action, wait: float | None = None) -> ScriptedAgent:
        """One action per wake, each followed by ``wait``."""
        return cls([Decision(actions=(action,), wait=wait) for action in actions])


class AgentCheckError(DealroomError, AssertionError):
    """An agent broke the agent contract; the message says how and where."""

    kind = "agent_check"


def _guarded(factory: AgentFactory, where: list[str], role: Role) -> AgentFactory:
    def check(decision: object) -> Decision:
        return check_decision(decision, role)

    def build(view: SeatView, rng: random.Random) -> _Checked[Observation, Decision]:
        try:
            agent = factory(view, rng)
        except Exception as exc:
            raise AgentCheckError(f"{where[0]}: building the agent raised {exc!r}") from exc
        return _Checked(agent, where[0], check)

    return build


class _Seen(Protocol):
    """What the checker reads of any observation: the time, to say where a problem was."""

    @property
    def now(self) -> float: ...


_O = TypeVar("_O", bound=_Seen)
_O_contra = TypeVar("_O_contra", contravariant=True)
_D = TypeVar("_D", Decision, MarketDecision)


class _Acts(Protocol[_O_contra]):
    """An agent as the checker calls it: what ``act`` returns is checked, not trusted."""

    def act(self, observation: _O_contra, /) -> object: ...


@dataclass
class _Checked(Generic[_O, _D]):
    """One agent (a seat's or a market seller's) whose every decision is checked by ``check``
    (the protocol's passive check for its kind of decision)."""

    agent: _Acts[_O]
    where: str
    check: Callable[[object], _D]

    def act(self, observation: _O) -> _D:
        at = f"{self.where} at t={observation.now}"
        try:
            decision = self.agent.act(observation)
        except Exception as exc:
            raise AgentCheckError(f"{at}: act raised {exc!r}") from exc
        try:
            checked = self.check(decision)
        except DecisionError as exc:
            raise AgentCheckError(f"{at}: {exc}") from None
        if checked.wait is not None and not checked.wait >= 0:
            kind = type(checked).__name__
            raise AgentCheckError(f"{self.where}: {kind}.wait must be None or >= 0")
        return checked


def _check_record(record: NegotiationRecord, role: Role, where: str) -> None:
    outcome = record.outcome
    violated = outcome.buyer_ir_violation if role == "buyer" else outcome.seller_ir_violation
    if violated:
        raise AgentCheckError(f"{where}: agreed to a deal at {outcome.price} that loses money")


def check_agent(
    factory: AgentFactory,
    *,
    opponents: Iterable[str] = DEFAULT_OPPONENTS,
    scenarios_per_tier: int = 3,
    seed: int = 0,
) -> list[NegotiationRecord]:
    """Play ``factory`` in both seats against each opponent on every tier; check the contract.

    Returns the records (the first run of each) so callers can look further.
    """
    records: list[NegotiationRecord] = []
    for opponent in opponents:
        other = resolve(opponent)
        for scenario in generate(scenarios_per_tier, seed=seed, tiers=TIERS):
            for role in ("buyer", "seller"):
                where = [f"as {role} vs {opponent} on {scenario.id}"]
                mine = _guarded(factory, where, role)
                pair = (mine, other) if role == "buyer" else (other, mine)
                first = play(scenario, *pair, seed=seed)
                again = play(scenario, *pair, seed=seed)
                if first.model_dump_json() != again.model_dump_json():
                    raise AgentCheckError(
                        f"{where[0]}: two runs with the same seed differ (use only the rng "
                        "the factory is given)"
                    )
                _check_record(first, role, where[0])
                records.append(first)
    return records


def check_market_agent(
    factory: MarketAgentFactory,
    *,
    pools: Iterable[str] = ("linear", "boulware", "conceder"),
    buyers: Iterable[int] = (1, 3),
    markets_per_tier: int = 2,
    seed: int = 0,
) -> list[MarketRecord]:
    """Play the market seller ``factory`` against each pool (every buyer plays the spec) in
    markets of each number of ``buyers`` on every tier; check the contract: no exception, a
    ``MarketDecision`` of ``Addressed`` actions, no sale below its cost, the same record for the
    same seed. Returns the records (the first run of each)."""
    records: list[MarketRecord] = []
    for pool in pools:
        buyer = resolve(pool)
        for count in buyers:
            for market in generate_markets(markets_per_tier, count, seed=seed):
                where = f"as seller vs {count} x {pool} in {market.id}"

                def seller(view: MarketView, rng: random.Random, where: str = where) -> object:
                    try:
                        return _Checked(factory(view, rng), where, check_market_decision)
                    except Exception as exc:
                        raise AgentCheckError(
                            f"{where}: building the agent raised {exc!r}"
                        ) from exc

                runs = [
                    play_market(market, seller, [buyer] * count, seed=seed)  # type: ignore[arg-type]
                    for _ in range(2)
                ]
                if runs[0].model_dump_json() != runs[1].model_dump_json():
                    raise AgentCheckError(
                        f"{where}: two runs with the same seed differ (use only the rng the "
                        "factory is given)"
                    )
                if runs[0].outcome.seller_ir_violation:
                    price = runs[0].outcome.price
                    raise AgentCheckError(f"{where}: sold at {price}, below its cost")
                records.append(runs[0])
    return records

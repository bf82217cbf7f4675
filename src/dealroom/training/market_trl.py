"""The market seller as a TRL tool environment (``GRPOTrainer(environment_factory=...)``).

The seller of a market (docs/design.md, section 12) against scripted buyers, played through
tools: ``BargainToolEnv``'s contract (``dealroom.training.trl``) for the seat the paper trains.
What the model reads is what the ``llm:`` market seller reads (``dealroom match --buyers N
--seller llm:MODEL``), byte for byte:

- the tool methods are ``MarketToolMethods`` (``dealroom.protocol.market_seat``), each with a
  docstring written from ``market_tools(rules)`` so that TRL's schema of the method is that
  function schema (the buyer first, the market summaries);
- ``reset`` returns the market briefing (``market_text.market_briefing``), preceded by a blank
  line only when the row's last prompt message already has text;
- a tool returns the text of ``dealroom.protocol.market_text``; a call runs on the market room's
  driven seller with the one turn semantics of ``dealroom.engine.market_calls``.

The reward is the seller's, of the ``MarketOutcome`` under ``RewardSpec`` (``RewardSpec.market``:
the seller's share of the most any buyer would have paid, clipped, less 1 for a sale below its
cost). Buyers are scripted specs (the pool: one spec for all, or one per buyer joined by '+'),
each seeded as in a market tournament (``engine.market.buyer_agents``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dealroom.engine.market import MarketRoom, buyer_agents, market_view
from dealroom.engine.market_calls import MarketSellerCalls
from dealroom.play.registry import AgentSpecError, resolve
from dealroom.protocol import TIERS, AgentFactory, Rules, Tier
from dealroom.protocol.market import DEFAULT_MARKET_RULES, MarketRules, pool_members
from dealroom.protocol.market_scenarios import market_at
from dealroom.protocol.market_seat import MarketToolMethods, market_tools
from dealroom.protocol.market_text import market_briefing
from dealroom.protocol.model_seat import Bound
from dealroom.protocol.secret import Secret, Seed
from dealroom.protocol.tools import ToolName
from dealroom.training.rewards import RewardSpec, RewardTerms, market_terms
from dealroom.training.trl import documented, ruled, separator


def pool_factories(pool: str | Sequence[str], buyers: int) -> list[AgentFactory]:
    """Each buyer's scripted agent from a pool (``pool_members``' word, or one spec per buyer).
    Raises AgentSpecError for a pool of another size, an unknown spec, or an ``llm:`` buyer
    (buyers play in place, on the market's clock)."""
    try:
        specs = pool_members(pool, buyers) if isinstance(pool, str) else tuple(pool)
    except ValueError as exc:
        raise AgentSpecError(str(exc)) from None
    if len(specs) != buyers:
        raise AgentSpecError(f"pool of {len(specs)} buyers, not {buyers}")
    for spec in specs:
        if spec.strip().startswith("llm:"):
            raise AgentSpecError(f"buyer {spec.strip()!r}: a market's buyers are scripted specs")
    return [resolve(spec) for spec in specs]


class MarketSellerEnv(MarketToolMethods[str]):
    """The seller of a market against scripted buyers, played through tools.

    Only ``reset``, the tools and ``get_reward`` are public: TRL turns every other public
    method into a tool. ``MarketSellerEnv(rules=R)`` is an instance of the subclass whose tool
    docstrings are rendered from ``R.rules`` (the threads' rules).
    """

    rules: Rules = DEFAULT_MARKET_RULES.rules
    """The threads' rules the class's tool docstrings describe."""

    def __new__(
        cls,
        *,
        pool: str | Sequence[str] = "boulware",
        buyers: int = 3,
        tier: Tier = "mid",
        seed: Seed = 0,
        reward: RewardSpec | None = None,
        rules: MarketRules = DEFAULT_MARKET_RULES,
    ) -> MarketSellerEnv:
        del pool, buyers, tier, seed, reward  # __init__'s
        chosen = cls if rules.rules == cls.rules else market_with_rules(rules.rules, cls)
        return object.__new__(chosen)

    def __init__(
        self,
        *,
        pool: str | Sequence[str] = "boulware",
        buyers: int = 3,
        tier: Tier = "mid",
        seed: Seed = 0,
        reward: RewardSpec | None = None,
        rules: MarketRules = DEFAULT_MARKET_RULES,
    ) -> None:
        self._defaults: dict[str, Any] = {
            "pool": pool,
            "buyers": buyers,
            "tier": tier,
            "seed": seed,
            "index": 0,
        }
        self._reward = reward or RewardSpec()
        self._market_rules = rules
        self._seat: MarketSellerCalls | None = None
        self._names: tuple[str, ...] = ()

    # -- the TRL contract ---------------------------------------------------------------

    def reset(self, **row: Any) -> str:
        """Open a market; ``row`` may set seed (an int, or a run's ``Secret``: then market
        ``index`` of a tier is the market tournament's of that index), tier, index, buyers
        (how many) and pool (their specs).

        Other keys are ignored, except that the dataset's ``prompt`` decides the separator.
        Returns the seller's market briefing: the first user message, as on every surface.
        """
        config = {**self._defaults, **{k: v for k, v in row.items() if k in self._defaults}}
        tier, buyers = config["tier"], int(config["buyers"])
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {', '.join(TIERS)}, not {tier!r}")
        seed: Seed = config["seed"] if isinstance(config["seed"], Secret) else int(config["seed"])
        market = market_at(seed, int(config["index"]), tier, buyers)
        pool = config["pool"]
        factories = pool_factories(pool, buyers)
        self._names = pool_members(pool, buyers) if isinstance(pool, str) else tuple(pool)
        rules = self._market_rules
        room = MarketRoom(market, rules, buyers=buyer_agents(market, factories, seed))
        self._seat = MarketSellerCalls(room)
        return separator(row) + market_briefing(market_view(market, rules))

    def get_reward(self) -> float:
        """The seller's reward for the market (played out with the seller silent if open)."""
        return self._reward.weigh(self._scored())

    # -- internals ----------------------------------------------------------------------

    @property
    def seat(self) -> MarketSellerCalls | None:
        """The market since the last ``reset`` (its room holds the referee), None before the
        first; a property, so TRL does not offer it as a tool."""
        return self._seat

    @property
    def terms(self) -> RewardTerms | None:
        """The reward terms of the market once it is over, else None."""
        seat = self._seat
        if seat is None or seat.room.referee.outcome is None:
            return None
        return self._scored()

    @property
    def pool(self) -> tuple[str, ...]:
        """The buyers' specs since the last ``reset``, in the order of the buyers."""
        return self._names

    def _scored(self) -> RewardTerms:
        seat = self._require()
        seat.sit_out()
        outcome = seat.room.referee.outcome
        assert outcome is not None
        return market_terms(outcome, seat.room.referee.market.base.list_price)

    def _require(self) -> MarketSellerCalls:
        if self._seat is None:
            raise RuntimeError("call reset() before using the environment")
        return self._seat

    def _call(self, name: ToolName, arguments: dict[str, Any]) -> str:
        """One tool call: what the model reads back."""
        return self._require().call(Bound(name, arguments)).text


def tool_docstring(schema: dict[str, Any]) -> str:
    """A Google-style docstring from which ``transformers.utils.get_json_schema`` writes
    ``schema`` back (for a method whose signature has the schema's arguments in order)."""
    function = schema["function"]
    lines = [function["description"]]
    properties: dict[str, Any] = function["parameters"]["properties"]
    if properties:
        lines += ["", "Args:"]
        lines += [f"    {name}: {prop['description']}" for name, prop in properties.items()]
    return "\n".join(lines)


def _install(cls: type[MarketSellerEnv], rules: Rules) -> None:
    for schema in market_tools(rules):
        name = schema["function"]["name"]
        method = getattr(MarketToolMethods, name)
        setattr(cls, name, documented(method, tool_docstring(schema)))


_install(MarketSellerEnv, DEFAULT_MARKET_RULES.rules)


def market_with_rules(
    rules: Rules, base: type[MarketSellerEnv] = MarketSellerEnv
) -> type[MarketSellerEnv]:
    """The environment class whose tools are described under the threads' ``rules``."""
    return ruled(base, rules.model_dump_json(), _install)


__all__ = ["MarketSellerEnv", "market_with_rules", "pool_factories", "tool_docstring"]

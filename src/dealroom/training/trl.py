"""A tool-calling environment for TRL's ``GRPOTrainer(environment_factory=...)``.

TRL's contract is duck-typed, so TRL is not imported here: the trainer builds one instance per
rollout, calls ``reset(**row)`` with the dataset row and appends the returned text to the last
prompt message, exposes every other public method as a tool (its schema read from the
signature and Google-style docstring by ``transformers.utils.get_json_schema``), and, since
TRL 1.8, adds ``get_reward()`` as a reward itself (do not pass it again).

What the model reads is what it reads when served over MCP, byte for byte:

- the tool methods are generated from ``dealroom.protocol.tools`` (names, arguments, order,
  descriptions rendered from the environment's rules);
- ``reset`` returns the briefing (the first user message everywhere), preceded by a blank line
  only when the row's last prompt message already has text (TRL joins them with no separator);
- a tool returns the text of ``dealroom.protocol.seat_text``, refusals as ``code: sentence.
  hint.``;
- the turn semantics are the MCP seat's: the environment drives the served negotiations'
  scheduler synchronously (``dealroom.engine.calls.LocalSeat``), so an action returns once it
  took effect and wait_for_opponent waits for news or its timeout on the clock.

The opponent, any scripted spec or ``llm:MODEL`` (the training opponent), is a house agent of
that scheduler.

Usage::

    trainer = GRPOTrainer(
        model=..., train_dataset=Dataset.from_list(
            [{"prompt": [{"role": "user", "content": ""}], "index": i} ...]),
        environment_factory=functools.partial(BargainToolEnv, opponent="boulware"),
        reward_funcs=[],  # TRL >= 1.8 adds get_reward itself
    )
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from dealroom.engine.calls import LocalSeat
from dealroom.engine.match import seat_rng
from dealroom.protocol import (
    DEFAULT_RULES,
    TIERS,
    ActionResult,
    Role,
    Rules,
    RuleViolation,
    SeatState,
    Tier,
    ToolErrorPayload,
    WaitResult,
    other,
    seat_text,
    seat_view,
)
from dealroom.protocol.arguments import WaitArgs, action_of
from dealroom.protocol.briefing import briefing
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.model_seat import ToolMethods, result_text
from dealroom.protocol.secret import Secret, Seed
from dealroom.protocol.tools import (
    TOOLS_BY_NAME,
    ArgumentError,
    SeatTool,
    ToolName,
    docstring,
    seat_tools,
    validate_arguments,
)
from dealroom.training._chat import json_object
from dealroom.training._seat import OpponentFactory, opponent_factory
from dealroom.training.rewards import RewardSpec, RewardTerms, reward_terms

TOOLS: tuple[SeatTool, ...] = seat_tools(series=False)
"""The environment's tools: every seat tool but the series one, in the spec's order."""


def separator(row: Mapping[str, Any]) -> str:
    """What goes between the row's prompt and reset's text: a blank line, unless the last
    prompt message is empty or already ends in whitespace (TRL adds nothing itself)."""
    prompt = row.get("prompt")
    if not isinstance(prompt, list) or not prompt:
        return ""
    last = json_object(cast(list[object], prompt)[-1])
    content = last.get("content") if last is not None else None
    if not isinstance(content, str) or not content or content[-1].isspace():
        return ""
    return "\n\n"


class BargainToolEnv(ToolMethods[str]):
    """One seat of a negotiation against a house agent, played through tools (the tool
    methods are ``ToolMethods``: the one model seat's signatures, docstrings rendered here).

    Only ``reset``, the tools and ``get_reward`` are public: TRL turns every other public
    method into a tool. ``BargainToolEnv(rules=R)`` is an instance of ``with_rules(R)``, a
    subclass whose tool docstrings are rendered from ``R``.
    """

    rules: Rules = DEFAULT_RULES
    """The rules the class's tool docstrings describe."""

    def __new__(
        cls,
        *,
        opponent: str | OpponentFactory = "boulware",
        role: Role = "buyer",
        tier: Tier = "mid",
        seed: Seed = 0,
        reward: RewardSpec | None = None,
        rules: Rules = DEFAULT_RULES,
    ) -> BargainToolEnv:
        del opponent, role, tier, seed, reward  # __init__'s
        chosen = cls if rules == cls.rules else _with_rules(cls, rules.model_dump_json())
        return object.__new__(chosen)

    def __init__(
        self,
        *,
        opponent: str | OpponentFactory = "boulware",
        role: Role = "buyer",
        tier: Tier = "mid",
        seed: Seed = 0,
        reward: RewardSpec | None = None,
        rules: Rules = DEFAULT_RULES,
    ) -> None:
        self._defaults: dict[str, Any] = {
            "opponent": opponent,
            "role": role,
            "tier": tier,
            "seed": seed,
            "index": 0,
        }
        self._reward = reward or RewardSpec()
        self._rules = rules
        self._seat: LocalSeat | None = None

    # -- the TRL contract ---------------------------------------------------------------

    def reset(self, **row: Any) -> str:
        """Start a negotiation; ``row`` may set seed (an int, or a run's ``Secret``: then
        scenario ``index`` of a tier is the tournament's job of that index), tier, index, role
        and opponent.

        Other keys are ignored, except that the dataset's ``prompt`` decides the separator.
        Returns the seat's briefing: the first user message, as on every surface.
        """
        config = {**self._defaults, **{k: v for k, v in row.items() if k in self._defaults}}
        role, tier = config["role"], config["tier"]
        if role not in ("buyer", "seller"):
            raise ValueError(f"role must be 'buyer' or 'seller', not {role!r}")
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {', '.join(TIERS)}, not {tier!r}")
        seed: Seed = config["seed"] if isinstance(config["seed"], Secret) else int(config["seed"])
        index = int(config["index"])
        scenario = scenario_at(seed, index, tier)
        them = other(role)
        house = opponent_factory(config["opponent"], self._rules)(
            seat_view(scenario, them), seat_rng(seed, scenario.id, them)
        )
        self._seat = LocalSeat(scenario, role, house, self._rules)
        return separator(row) + briefing(seat_view(scenario, role), self._rules)

    def get_reward(self) -> float:
        """The reward of the negotiation (played out with the seat silent if still open)."""
        seat = self._require()
        seat.finish()
        outcome = seat.referee.outcome
        assert outcome is not None
        return self._reward(outcome, seat.role, seat.referee.scenario.list_price)

    # -- internals ----------------------------------------------------------------------

    @property
    def terms(self) -> RewardTerms | None:
        """The reward terms of the negotiation once it is over, else None."""
        seat = self._seat
        outcome = None if seat is None else seat.referee.outcome
        if seat is None or outcome is None:
            return None
        return reward_terms(outcome, seat.role, seat.referee.scenario.list_price)

    @property
    def seat(self) -> LocalSeat | None:
        """The negotiation since the last ``reset`` (its referee holds the events), None before
        the first; a property, so TRL does not offer it as a tool."""
        return self._seat

    def _require(self) -> LocalSeat:
        if self._seat is None:
            raise RuntimeError("call reset() before using the environment")
        return self._seat

    def _call(self, name: ToolName, arguments: dict[str, Any]) -> str:
        """One tool call: what the model reads back."""
        return call_tool(self._require(), name, arguments).text


@dataclass(frozen=True, slots=True)
class ToolReply:
    """One tool call's reply: the text the model reads and the typed result (or refusal)."""

    text: str
    result: ActionResult | WaitResult | SeatState | ToolErrorPayload


def call_tool(seat: LocalSeat, name: ToolName, arguments: Mapping[str, Any]) -> ToolReply:
    """One tool call on a local seat, as the served tool makes it: arguments validated, the
    call run, the one result text rendered. The TRL environment and the SFT export use it."""
    tool = TOOLS_BY_NAME[name]
    try:
        args = validate_arguments(tool, arguments)
    except ArgumentError as error:
        return ToolReply(seat_text.error_text(error.payload), error.payload)
    result: ActionResult | WaitResult
    try:
        match tool.result:
            case "action":
                action = action_of(args)
                assert action is not None
                result = seat.act(action)
            case "wait":
                assert isinstance(args, WaitArgs)
                result = seat.wait(args.timeout_s)
            case "state":
                state = seat.state()
                return ToolReply(seat_text.state_text(state), state)
    except RuleViolation as violation:
        payload = seat_text.error_payload(violation.code, violation.message)
        return ToolReply(payload.text(), payload)
    currency = seat.referee.scenario.currency
    return ToolReply(result_text(result, seat.role, currency), result)


def documented(fn: Callable[..., str], doc: str) -> Callable[..., str]:
    """A copy of a tool method with the docstring ``doc`` (TRL reads the tool's schema from its
    signature and docstring)."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__annotations__ = dict(fn.__annotations__)
    copy.__qualname__ = fn.__qualname__
    copy.__doc__ = doc
    return copy


def _install(cls: type[BargainToolEnv], rules: Rules) -> None:
    for tool in TOOLS:
        method = getattr(ToolMethods, tool.name)
        setattr(cls, tool.name, documented(method, docstring(TOOLS_BY_NAME[tool.name], rules)))


E = TypeVar("E")


@functools.cache
def ruled(base: type[E], rules_json: str, install: Callable[[type[E], Rules], None]) -> type[E]:
    """The subclass of a tool environment ``base`` whose tools ``install`` documented under
    the rules ``rules_json`` (one class per rules, kept)."""
    rules = Rules.model_validate_json(rules_json)
    cls = cast(
        type[E], type(base.__name__, (base,), {"rules": rules, "__module__": base.__module__})
    )
    cls.__qualname__ = base.__qualname__
    install(cls, rules)
    return cls


def _with_rules(base: type[BargainToolEnv], rules_json: str) -> type[BargainToolEnv]:
    return ruled(base, rules_json, _install)


_install(BargainToolEnv, DEFAULT_RULES)


def with_rules(rules: Rules) -> type[BargainToolEnv]:
    """The environment class whose tools are described under ``rules``."""
    return _with_rules(BargainToolEnv, rules.model_dump_json())


__all__ = [
    "TOOLS",
    "BargainToolEnv",
    "ToolReply",
    "call_tool",
    "documented",
    "ruled",
    "separator",
    "with_rules",
]

"""``negmas:CLASS``: published negotiators (NegMAS's own, and the Genius / ANAC agents of
``negmas-genius-agents``) as scripted agents, through ``negmas_adapter``.

``CLASS`` is a class name: first looked up among NegMAS's SAO negotiators
(``negmas.sao.negotiators``: ``BoulwareTBNegotiator``, ``NaiveTitForTatNegotiator``,
``MiCRONegotiator``, ...), then among the Genius agents (``HardHeaded``, ``AgentK``,
``Atlas3``, ...). Parameters as for every scripted agent:
``negmas:HardHeaded:low=0.3,high=2,points=341,step=30``. Both libraries are the optional extra
``negmas`` (``pip install 'dealroom[negmas]'``); without it such a spec raises
``MissingExtraError`` (code ``missing_extra``), one sentence that says what to install. Nothing
is imported until a ``negmas:`` spec is resolved or listed.
"""

from __future__ import annotations

import importlib
import inspect
import random
from functools import cache
from typing import Any

from dealroom.agents.negmas_adapter import NegmasAgent, NegmasParams
from dealroom.play.registry import (
    AgentEntry,
    AgentFamily,
    AgentSpecError,
    MissingExtraError,
    register,
)
from dealroom.protocol import AgentFactory, SeatView

PREFIX = "negmas"
INSTALL = "pip install 'dealroom[negmas]'"
NEGMAS_MODULE = "negmas.sao.negotiators"
GENIUS_MODULE = "negmas_genius_agents"

NOT_STRATEGIES = frozenset(
    {
        # Bases, wrappers and controllers: they need another negotiator or settings to play.
        "SAONegotiator",
        "SAOPRNegotiator",
        "SAOCallNegotiator",
        "ControlledSAONegotiator",
        "SAOMetaNegotiator",
        "SAOAggMetaNegotiator",
        "RangeMetaNegotiator",
        "MeanMetaNegotiator",
        "OSMeanMetaNegotiator",
        "HybridNegotiator",
        "LimitedOutcomesNegotiator",
        "LimitedOutcomesAcceptor",
        "TimeBasedNegotiator",
        "UtilBasedNegotiator",
        "TimeDependentAgent",
    }
)

MAX_POINTS = 10_000
"""Most prices on the grid (the Genius agents sort the outcomes on every negotiation)."""


def _import(module: str, what: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(
            f"{what} needs the negmas extra, which is not installed: {INSTALL}"
        ) from None


def _classes(module: Any) -> dict[str, type[Any]]:
    """The concrete SAO negotiators that ``module`` exports, by name."""
    base = _import("negmas.gb", "a negmas: agent").GBNegotiator
    found: dict[str, type[Any]] = {}
    for name in getattr(module, "__all__", ()):
        value = getattr(module, name, None)
        if (
            inspect.isclass(value)
            and issubclass(value, base)
            and not inspect.isabstract(value)
            and name not in NOT_STRATEGIES
        ):
            found[name] = value
    return found


@cache
def negmas_classes() -> dict[str, type[Any]]:
    """NegMAS's own SAO negotiators that can play a seat alone."""
    return _classes(_import(NEGMAS_MODULE, "a negmas: agent"))


@cache
def genius_classes() -> dict[str, type[Any]]:
    """The Genius (ANAC) agents of ``negmas-genius-agents``."""
    return _classes(_import(GENIUS_MODULE, "a Genius agent"))


def negotiator_class(name: str) -> type[Any]:
    """The class ``negmas:NAME`` names: NegMAS's own first, then the Genius agents."""
    own = negmas_classes()
    if name in own:
        return own[name]
    genius = genius_classes()
    if name in genius:
        return genius[name]
    raise AgentSpecError(
        f"negmas has no negotiator {name!r} (the ones that play a seat: dealroom agents)"
    )


def members() -> list[str]:
    """Every class a ``negmas:`` spec can name, NegMAS's own first."""
    return sorted(negmas_classes()) + sorted(genius_classes())


def _summary(cls: type[Any]) -> str:
    source = "Genius agent" if cls.__module__.startswith(GENIUS_MODULE) else "NegMAS negotiator"
    paragraph = (inspect.getdoc(cls) or cls.__name__).strip().split("\n\n")[0]
    first = " ".join(paragraph.split()).split(". ")[0].rstrip(".")
    return f"{source}: {first if len(first) <= 72 else first[:69] + '...'}"


_DEFAULTS = NegmasParams()


def _params(params: dict[str, float]) -> NegmasParams:
    """Checked parameters (one sentence for a bad one)."""
    low, high, points, step = params["low"], params["high"], params["points"], params["step"]
    if params["guard"] not in (0, 1):
        raise AgentSpecError("parameter 'guard' must be 0 or 1")
    if not 0 < low < high <= 100:
        raise AgentSpecError(
            "parameters 'low' and 'high' must be fractions of the list price with "
            "0 < low < high <= 100"
        )
    if points != int(points) or not 2 <= points <= MAX_POINTS:
        raise AgentSpecError(f"parameter 'points' must be a whole number from 2 to {MAX_POINTS}")
    if not 0 < step <= 3600:
        raise AgentSpecError("parameter 'step' must be positive, at most 3600 seconds")
    return NegmasParams(
        low=low, high=high, points=int(points), step=step, guard=params["guard"] == 1
    )


def member(name: str) -> AgentEntry:
    """The scripted agent ``negmas:NAME``."""
    cls = negotiator_class(name)

    def build(params: dict[str, float]) -> AgentFactory:
        checked = _params(params)

        def factory(view: SeatView, rng: random.Random) -> NegmasAgent:
            return NegmasAgent(view, cls, rng, checked)

        return factory

    return AgentEntry(
        name=f"{PREFIX}:{name}",
        summary=_summary(cls),
        defaults={
            "low": _DEFAULTS.low,
            "high": _DEFAULTS.high,
            "points": float(_DEFAULTS.points),
            "step": _DEFAULTS.step,
            "guard": float(_DEFAULTS.guard),
        },
        build=build,
    )


register(
    AgentFamily(
        name=PREFIX,
        summary=f"a published negotiator: NegMAS's own or a Genius (ANAC) agent ({INSTALL})",
        argument="CLASS",
        member=member,
        members=members,
    )
)

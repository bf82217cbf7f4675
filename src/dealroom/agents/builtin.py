"""The built-in scripted agents, registered by name."""

from __future__ import annotations

# Imported for their side effects: they register negmas:CLASS, and llm:MODEL and human.
from dealroom.agents import negmas_specs as _negmas_specs  # noqa: F401  # pyright: ignore[reportUnusedImport]
from dealroom.agents import seats as _seats  # noqa: F401  # pyright: ignore[reportUnusedImport]
from dealroom.agents.micro import MicroParams, micro
from dealroom.agents.nice_tft import NiceTftParams, nice_tft
from dealroom.agents.time_dependent import TimeDependentParams, time_dependent
from dealroom.agents.tit_for_tat import TitForTatParams, tit_for_tat
from dealroom.agents.zic import ZicParams, zic
from dealroom.play.registry import AgentEntry, AgentSpecError, register
from dealroom.protocol import AgentFactory

_TD_DEFAULTS = {
    "k": 0.0,
    "seller_open": 1.3,
    "buyer_open": 0.5,
    "step": 10.0,
    "noise": 0.0,
    "finish": 1.0,
}

MAX_FRACTION = 10.0
"""Largest opening (or quote bound) as a fraction of the list price: prices stay far below the
largest amount a scenario allows, so every spec that resolves gives a playable agent."""
MAX_SECONDS = 3600.0
"""Longest ``step`` or ``margin``: no deadline a room accepts is longer than a day, and a step
past an hour is no longer a tactic."""
MAX_EXPONENT = 100.0
"""Largest concession exponent ``e`` or ``floor_e`` (beyond it the curve no longer changes)."""


def _td(e: float, **overrides: float):
    def build(params: dict[str, float]) -> AgentFactory:
        if not 0 <= params["e"] <= MAX_EXPONENT:
            raise AgentSpecError(f"parameter 'e' must be at least 0 and at most {MAX_EXPONENT:g}")
        if not 0 <= params["k"] < 1:
            raise AgentSpecError("parameter 'k' must be in [0, 1)")
        if not 0 <= params["noise"] < 1:
            raise AgentSpecError("parameter 'noise' must be in [0, 1)")
        if not 0 < params["finish"] <= 1:
            raise AgentSpecError("parameter 'finish' must be in (0, 1] (a share of the deadline)")
        _check_common(params)
        return time_dependent(TimeDependentParams(**params))

    return {"e": e, **_TD_DEFAULTS, **overrides}, build


def _register_time_dependent(name: str, e: float, summary: str, **overrides: float) -> None:
    defaults, build = _td(e, **overrides)
    register(AgentEntry(name=name, summary=summary, defaults=defaults, build=build))


_register_time_dependent("hardliner", 0.0, "never concedes from its opening price (e=0)")
_register_time_dependent("boulware", 0.2, "time-dependent, concedes late (e=0.2), AC_next")
_register_time_dependent("linear", 1.0, "time-dependent, concedes linearly in time (e=1), AC_next")
_register_time_dependent("conceder", 2.0, "time-dependent, concedes early (e=2), AC_next")
_register_time_dependent(
    "paced",
    1.0,
    "for people's time: linear, done by 0.7 of the deadline, a price every 15 s, AC_next",
    finish=0.7,
    step=15.0,
)


def _check_common(params: dict[str, float]) -> None:
    """The ranges every built-in agent declares for the parameters they share."""
    if not 0 < params["step"] <= MAX_SECONDS:
        raise AgentSpecError(f"parameter 'step' must be positive, at most {MAX_SECONDS:g} seconds")
    if not 0 <= params.get("margin", 0) <= MAX_SECONDS:
        raise AgentSpecError(
            f"parameter 'margin' must be at least 0 seconds and at most {MAX_SECONDS:g}"
        )
    for key in ("seller_open", "buyer_open", "seller_high", "buyer_low"):
        if key in params and not 0 < params[key] <= MAX_FRACTION:
            raise AgentSpecError(
                f"parameter {key!r} must be a positive fraction of the list price, at most "
                f"{MAX_FRACTION:g}"
            )
    if not params.get("floor_e", 0) <= MAX_EXPONENT:
        raise AgentSpecError(f"parameter 'floor_e' must be at most {MAX_EXPONENT:g}")


def _build_tit_for_tat(params: dict[str, float]) -> AgentFactory:
    _check_common(params)
    if params["floor_e"] < 0:
        raise AgentSpecError("parameter 'floor_e' must be at least 0 (0: no floor)")
    return tit_for_tat(TitForTatParams(**params))


def _build_micro(params: dict[str, float]) -> AgentFactory:
    _check_common(params)
    steps = params.pop("steps")
    if steps != int(steps) or not 1 <= steps <= 1000:
        raise AgentSpecError("parameter 'steps' must be a whole number from 1 to 1000")
    return micro(MicroParams(steps=int(steps), **params))


def _build_zic(params: dict[str, float]) -> AgentFactory:
    _check_common(params)
    return zic(ZicParams(**params))


def _build_nice_tft(params: dict[str, float]) -> AgentFactory:
    _check_common(params)
    if params["floor_e"] < 0:
        raise AgentSpecError("parameter 'floor_e' must be at least 0 (0: no floor)")
    return nice_tft(NiceTftParams(**params))


_OPEN = {"seller_open": 1.3, "buyer_open": 0.5, "step": 10.0, "margin": 10.0}

register(
    AgentEntry(
        name="tit_for_tat",
        summary="relative tit-for-tat, Boulware floor near the deadline, AC_next",
        defaults={"floor_e": 0.2, **_OPEN},
        build=_build_tit_for_tat,
    )
)
register(
    AgentEntry(
        name="micro",
        summary="MiCRO: a grid step down only for a new offer received, AC_next",
        defaults={"steps": 16, "seller_open": 1.3, "buyer_open": 0.5, "step": 10.0},
        build=_build_micro,
    )
)
register(
    AgentEntry(
        name="zic",
        summary="ZI-C: random quotes that never lose money (a floor to beat)",
        defaults={"seller_high": 1.3, "buyer_low": 0.5, "step": 10.0},
        build=_build_zic,
    )
)
register(
    AgentEntry(
        name="nice_tft",
        summary="nice tit-for-tat: matches the opponent's progress to the estimated Nash point",
        defaults={"floor_e": 0.2, **_OPEN},
        build=_build_nice_tft,
    )
)

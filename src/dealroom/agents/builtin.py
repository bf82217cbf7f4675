"""The built-in scripted agents, registered by name."""

from __future__ import annotations

from dealroom.agents.registry import AgentEntry, AgentSpecError, register
from dealroom.agents.time_dependent import TimeDependentParams, time_dependent
from dealroom.protocol import AgentFactory

_TD_DEFAULTS = {"k": 0.0, "seller_open": 1.3, "buyer_open": 0.5, "step": 10.0}


def _td(e: float):
    def build(params: dict[str, float]) -> AgentFactory:
        if params["e"] < 0:
            raise AgentSpecError("parameter 'e' must be at least 0")
        if not 0 <= params["k"] < 1:
            raise AgentSpecError("parameter 'k' must be in [0, 1)")
        if params["step"] <= 0:
            raise AgentSpecError("parameter 'step' must be positive")
        if params["seller_open"] <= 0 or params["buyer_open"] <= 0:
            raise AgentSpecError("opening prices must be positive fractions of the list price")
        return time_dependent(TimeDependentParams(**params))

    return {"e": e, **_TD_DEFAULTS}, build


def _register_time_dependent(name: str, e: float, summary: str) -> None:
    defaults, build = _td(e)
    register(AgentEntry(name=name, summary=summary, defaults=defaults, build=build))


_register_time_dependent("hardliner", 0.0, "never concedes from its opening price (e=0)")
_register_time_dependent("boulware", 0.2, "time-dependent, concedes late (e=0.2), AC_next")
_register_time_dependent("linear", 1.0, "time-dependent, concedes linearly in time (e=1), AC_next")
_register_time_dependent("conceder", 2.0, "time-dependent, concedes early (e=2), AC_next")

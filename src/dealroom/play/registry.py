"""Named agents with parameters: ``boulware``, ``boulware:e=0.1``, ``micro``, ...

A spec is ``NAME`` or ``NAME:KEY=VALUE,KEY=VALUE``; values are numbers. Unknown names or
parameters, and values that are not numbers, raise AgentSpecError with one readable sentence.

Agents are contributed by modules named in the ``dealroom.agents`` entry-point group and loaded
on the first lookup; dealroom's own strategies come in that way (``dealroom.agents.builtin``),
and so can a third party's package::

    [project.entry-points."dealroom.agents"]
    mine = "my_package.dealroom_agents"      # a module that calls register(...)

So the SDK (tournaments, training adapters) can name agents without importing the layer above it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points

from dealroom.protocol import AgentFactory


class AgentSpecError(ValueError):
    """An agent spec that names no agent, or gives it a bad parameter."""


@dataclass(frozen=True, slots=True)
class AgentEntry:
    """One registered agent: its defaults and how to build it from parameters."""

    name: str
    summary: str
    defaults: Mapping[str, float]
    build: Callable[[dict[str, float]], AgentFactory]


_REGISTRY: dict[str, AgentEntry] = {}
_plugins_loaded = False


def _load_plugins() -> None:
    """Import every module of the ``dealroom.agents`` entry-point group, once."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for entry_point in entry_points(group="dealroom.agents"):
        entry_point.load()


def register(entry: AgentEntry) -> None:
    """Add an agent to the registry (names are unique)."""
    if entry.name in _REGISTRY:
        raise AgentSpecError(f"agent {entry.name!r} is already registered")
    _REGISTRY[entry.name] = entry


def entries() -> list[AgentEntry]:
    """Every registered agent, by name."""
    _load_plugins()
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def parse_spec(spec: str) -> tuple[AgentEntry, dict[str, float]]:
    """Split a spec into its entry and full parameters (defaults filled in)."""
    _load_plugins()
    name, _, rest = spec.strip().partition(":")
    entry = _REGISTRY.get(name)
    if entry is None:
        known = ", ".join(sorted(_REGISTRY))
        raise AgentSpecError(f"unknown agent {name!r}; known agents: {known}")
    params = dict(entry.defaults)
    for pair in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or key not in entry.defaults:
            allowed = ", ".join(entry.defaults) or "none"
            raise AgentSpecError(f"agent {name!r} has no parameter {key!r} (parameters: {allowed})")
        try:
            value = float(raw)
        except ValueError:
            raise AgentSpecError(f"parameter {key!r} of {name!r} must be a number") from None
        if not math.isfinite(value):
            raise AgentSpecError(f"parameter {key!r} of {name!r} must be finite")
        params[key] = value
    return entry, params


def resolve(spec: str) -> AgentFactory:
    """The AgentFactory a spec names."""
    entry, params = parse_spec(spec)
    return entry.build(params)

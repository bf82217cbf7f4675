"""Agents: scripted strategies and the registry that names them."""

from dealroom.agents import builtin as _builtin  # noqa: F401  (registers the built-in agents)
from dealroom.play.registry import AgentEntry, AgentSpecError, entries, parse_spec, resolve

__all__ = ["AgentEntry", "AgentSpecError", "entries", "parse_spec", "resolve"]

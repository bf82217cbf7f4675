"""Every kind of player by name: ``boulware``, ``boulware:e=0.1``, ``llm:MODEL``, ``human``, ...

Two kinds of entry, one contract (``dealroom.play.players.Player``):

- ``AgentEntry``: a scripted strategy. Its spec is ``NAME`` or ``NAME:KEY=VALUE,KEY=VALUE``
  (values are numbers). It resolves to an ``AgentFactory`` (``resolve``) for the engine's
  play-out loop, or to a ``ScriptedPlayer`` (``resolve_player``) that carries that factory, so
  a match or tournament job whose two seats are scripted runs in the engine with no MCP session
  and no event loop.
- ``AgentFamily``: scripted strategies named by an argument, ``NAME:ARGUMENT`` or
  ``NAME:ARGUMENT:KEY=VALUE,...`` (``negmas:BoulwareTBNegotiator``: the argument is a class of
  an optional library). It gives one ``AgentEntry`` per argument, named ``NAME:ARGUMENT``, which
  then resolves as above.
- ``SeatEntry``: a player that plays through a seat's tools (an LLM, a person, a remote client,
  a policy being trained). Its spec is ``NAME`` or ``NAME:ARGUMENT`` (``llm:gpt-4.1-mini``: the
  argument is the model); ``resolve_player`` builds it with ``PlayerOptions`` (endpoint, settings).

Unknown names or parameters, and values that are not numbers, raise AgentSpecError with one
readable sentence.

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
from typing import TYPE_CHECKING

from dealroom.protocol import AgentFactory
from dealroom.protocol.errors import DealroomError

if TYPE_CHECKING:  # players import the MCP client: only a seat player needs it at run time
    from dealroom.play.players import Player


class AgentSpecError(DealroomError, ValueError):
    """An agent spec that names no agent, or gives it a bad parameter."""

    kind = "agent_spec"


class MissingExtraError(AgentSpecError):
    """An agent spec whose agent needs an optional extra that is not installed (one sentence
    that says what to install)."""

    kind = "missing_extra"


@dataclass(frozen=True, slots=True)
class AgentEntry:
    """One registered agent: its defaults and how to build it from parameters."""

    name: str
    summary: str
    defaults: Mapping[str, float]
    build: Callable[[dict[str, float]], AgentFactory]


@dataclass(frozen=True, slots=True)
class PlayerOptions:
    """What seat players may need besides their spec; scripted agents ignore it. Picklable, so
    a worker process or Ray task can build the same players."""

    base_url: str | None = None
    """OpenAI-compatible endpoint of ``llm:MODEL`` (None: ``$OPENAI_BASE_URL``, else OpenAI)."""
    api_key: str | None = None
    settings: object | None = None
    """An entry's own settings (``dealroom.agents.llm.LLMSettings`` for ``llm:``); typed as
    object so this layer does not import the agents that read it."""


@dataclass(frozen=True, slots=True)
class SeatEntry:
    """A kind of player that plays through a seat's tools (LLM, person, remote client...)."""

    name: str
    summary: str
    build: Callable[[str, PlayerOptions], Player]
    """Builds the player from the spec's argument (``llm:MODEL`` -> ``MODEL``; ``""`` when
    the spec is the bare name) and the options; raises AgentSpecError for a bad spec."""
    argument: str = ""
    """What the argument is, for listings (e.g. ``MODEL``); empty: the entry takes none."""


@dataclass(frozen=True, slots=True)
class AgentFamily:
    """Scripted agents named by an argument (``negmas:CLASS``): one ``AgentEntry`` per argument.

    Nothing of the family's library is imported until a member is built or listed, so naming
    the family costs other runs nothing."""

    name: str
    summary: str
    argument: str
    """What the argument is, for listings (e.g. ``CLASS``)."""
    member: Callable[[str], AgentEntry]
    """The entry the argument names (named ``NAME:ARGUMENT``); raises AgentSpecError (or
    MissingExtraError) for an argument it does not know."""
    members: Callable[[], list[str]]
    """The arguments it knows, for listings; raises MissingExtraError without its extra."""


Entry = AgentEntry | AgentFamily | SeatEntry

_REGISTRY: dict[str, Entry] = {}
_plugins_loaded = False


def _load_plugins() -> None:
    """Import every module of the ``dealroom.agents`` entry-point group, once."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for entry_point in entry_points(group="dealroom.agents"):
        entry_point.load()


def register(entry: Entry) -> None:
    """Add an agent to the registry (names are unique)."""
    if entry.name in _REGISTRY:
        raise AgentSpecError(f"agent {entry.name!r} is already registered")
    _REGISTRY[entry.name] = entry


def entries() -> list[AgentEntry]:
    """Every registered scripted agent, by name."""
    _load_plugins()
    return [e for name in sorted(_REGISTRY) if isinstance(e := _REGISTRY[name], AgentEntry)]


def families() -> list[AgentFamily]:
    """Every registered family of scripted agents, by name."""
    _load_plugins()
    return [e for name in sorted(_REGISTRY) if isinstance(e := _REGISTRY[name], AgentFamily)]


def seat_entries() -> list[SeatEntry]:
    """Every registered kind of seat player, by name."""
    _load_plugins()
    return [e for name in sorted(_REGISTRY) if isinstance(e := _REGISTRY[name], SeatEntry)]


def _entry(spec: str) -> tuple[AgentEntry | SeatEntry, str]:
    """The entry a spec names and the rest of the spec (a family's member for
    ``NAME:ARGUMENT[:PARAMETERS]``, with the parameters as the rest)."""
    _load_plugins()
    name, _, rest = spec.strip().partition(":")
    entry = _REGISTRY.get(name)
    if entry is None:
        known = ", ".join(sorted(_REGISTRY))
        raise AgentSpecError(f"unknown agent {name!r}; known agents: {known}")
    if isinstance(entry, AgentFamily):
        argument, _, rest = rest.partition(":")
        if not argument.strip():
            raise AgentSpecError(f"agent {name!r} needs {entry.argument}: {name}:...")
        return entry.member(argument.strip()), rest
    return entry, rest


def is_scripted(spec: str) -> bool:
    """True if the spec names a scripted agent (it can play in the engine, without a seat)."""
    return isinstance(_entry(spec)[0], AgentEntry)


def is_llm_spec(spec: str) -> bool:
    """True for ``llm:MODEL`` specs."""
    return spec.strip().startswith("llm:")


def parse_spec(spec: str) -> tuple[AgentEntry, dict[str, float]]:
    """Split a scripted agent's spec into its entry and full parameters (defaults filled in);
    AgentSpecError for an unknown agent or parameter, a parameter given twice, or a value that
    is not a finite number."""
    entry, rest = _entry(spec)
    name = entry.name
    if isinstance(entry, SeatEntry):
        raise AgentSpecError(
            f"agent {name!r} plays through a seat (not a scripted strategy): it cannot play here"
        )
    return entry, parse_params(name, entry.defaults, rest)


def parse_params(name: str, defaults: Mapping[str, float], rest: str) -> dict[str, float]:
    """``KEY=VALUE,...`` of agent ``name`` over its ``defaults`` (every parameter, defaults
    filled in); AgentSpecError for an unknown parameter, one given twice, or a value that is
    not a finite number."""
    params = dict(defaults)
    given: set[str] = set()
    for pair in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or key not in defaults:
            allowed = ", ".join(defaults) or "none"
            raise AgentSpecError(f"agent {name!r} has no parameter {key!r} (parameters: {allowed})")
        if key in given:  # which one was meant? the last silently won before
            raise AgentSpecError(f"parameter {key!r} of {name!r} is given twice")
        given.add(key)
        try:
            value = float(raw)
        except ValueError:
            raise AgentSpecError(f"parameter {key!r} of {name!r} must be a number") from None
        if not math.isfinite(value):
            raise AgentSpecError(f"parameter {key!r} of {name!r} must be finite")
        params[key] = value
    return params


def resolve(spec: str) -> AgentFactory:
    """The AgentFactory a scripted agent's spec names."""
    entry, params = parse_spec(spec)
    return entry.build(params)


def resolve_player(spec: str, options: PlayerOptions | None = None) -> Player:
    """The player any spec names: a ``ScriptedPlayer`` for a scripted agent (it keeps the
    factory for the engine's fast path), else the seat entry's player."""
    entry, rest = _entry(spec)
    spec = spec.strip()
    if isinstance(entry, SeatEntry):
        if rest and not entry.argument:
            raise AgentSpecError(f"agent {entry.name!r} takes no argument (got {spec!r})")
        if entry.argument and not rest.strip():
            raise AgentSpecError(f"agent {entry.name!r} needs {entry.argument}: {entry.name}:...")
        return entry.build(rest.strip(), options or PlayerOptions())
    from dealroom.play.players import ScriptedPlayer

    return ScriptedPlayer(resolve(spec), spec)


def split_specs(text: str) -> list[str]:
    """Agent specs from one comma-separated text: ``k=v`` pieces belong to the spec before
    them (``boulware:e=0.1,k=0.2,linear`` is two specs); empty pieces are skipped."""
    specs: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        if "=" in piece and ":" not in piece and specs and ":" in specs[-1]:
            specs[-1] += "," + piece
        else:
            specs.append(piece)
    return specs

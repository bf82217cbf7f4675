"""A negotiation's settings in one shape, built by every front end that starts negotiations.

``dealroom tournament`` (from its flags), ``dealroom train evaluate`` (a learner served behind an
endpoint), the Inspect AI task and the OpenEnv environment all describe what they play with the
same three models, so a new setting is added here once and the type checker shows every place
that must pass it:

- ``SeatSettings``: how model seats play (the LLM flags: endpoint, tool rounds, retries,
  tracing, belief elicitation);
- ``PlaySettings``: what is played (agents and roster entries, tiers, negotiations per pairing,
  the secret, a learner and its seat) and with which ``SeatSettings``;
- ``RunSettings``: how a run is stored and driven (results store, run name, resume, concurrency,
  backend, budget).

``RosterEntry`` (one LLM entry of a roster, ``--models FILE.toml``) lives here too: entries are
part of what is played, and a front end may add its own (``train evaluate``'s learner) beside
those of a roster file. These are plain data with no I/O; ``dealroom.agents.lineup`` turns a
``PlaySettings`` into players.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from dealroom.protocol import TIERS, Role, Tier
from dealroom.protocol.model_seat import MAX_TOOL_ROUNDS
from dealroom.protocol.secret import Seed

ENTRY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
"""What a roster entry's name (its agent spec in stores and reports) may be."""

DEFAULT_ENDPOINT_CONCURRENCY = 16
"""Negotiations in flight on one roster entry's endpoint unless its entry says otherwise."""

MODEL_TIMEOUT_S = 60.0
MODEL_ATTEMPTS = 4
MODEL_BACKOFF_S = 0.5
MODEL_MAX_BACKOFF_S = 8.0
"""Defaults of the LLM seats' retry policy (``dealroom.agents.llm.RetryPolicy``; a test keeps
them equal), here so that settings and parsers are built without importing the Agents SDK."""

DEFAULT_RUN = "tournament"
"""A run's name in its store unless one is given."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SeatSettings:
    """How model seats (``llm:MODEL`` and roster entries) play."""

    base_url: str | None = None
    """OpenAI-compatible endpoint of ``llm:MODEL`` specs (None: ``$OPENAI_BASE_URL``, else
    OpenAI); roster entries name their own."""
    max_tool_rounds: int = MAX_TOOL_ROUNDS
    """Most model replies whose tool calls are made per negotiation (TRL's
    ``max_tool_calling_iterations``); the next reply ends the seat's play."""
    model_timeout_s: float = MODEL_TIMEOUT_S
    """Seconds one model call may take."""
    model_attempts: int = MODEL_ATTEMPTS
    """Tries per model call on transient API errors."""
    model_backoff_s: float = MODEL_BACKOFF_S
    """Seconds before the first retry, doubling up to ``MODEL_MAX_BACKOFF_S``."""
    trace: bool = False
    """Agents SDK tracing (its default processor uploads traces to OpenAI)."""
    elicit_beliefs: bool = False
    """After each negotiation, ask every LLM seat for its estimate of the other side's number."""


class RosterEntry(BaseModel):
    """One LLM entry of a roster: a model behind an endpoint, its sampling and its prices."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model: str = Field(min_length=1)
    endpoint: str = Field(min_length=1)
    key_env: str = "OPENAI_API_KEY"
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    enable_thinking: bool | None = None
    """The served chat template's thinking switch (sent as ``chat_template_kwargs``)."""
    concurrency: int = Field(default=DEFAULT_ENDPOINT_CONCURRENCY, ge=1, le=4096)
    input_price: float | None = Field(default=None, ge=0)
    output_price: float | None = Field(default=None, ge=0)
    cached_input_price: float | None = Field(default=None, ge=0)
    max_tool_rounds: int | None = Field(default=None, ge=1)
    """Most replies whose tool calls are made per negotiation for this model (a trained
    checkpoint's horizon); None: the run's ``--max-tool-rounds``."""

    @property
    def litellm(self) -> bool:
        """The endpoint is a LiteLLM route, not a base URL."""
        return self.endpoint.startswith("litellm/")

    def describe(self) -> dict[str, object]:
        """What a run records about the entry (no secrets): resuming with other settings is
        refused."""
        data = self.model_dump(mode="json", exclude={"name", "concurrency"})
        for optional in ("cached_input_price", "max_tool_rounds", "enable_thinking"):
            if data[optional] is None:  # as runs recorded before it existed
                del data[optional]
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class PlaySettings:
    """What is played: every ordered pairing of ``agents`` (roster entries first) in every tier,
    ``per_pair`` scenarios each, drawn under ``secret``; with a learner, only its pairings."""

    agents: tuple[str, ...] = ()
    """Agent specs (``boulware``, ``boulware:e=0.1``, ``llm:MODEL``, ...) and entry names."""
    roster: Path | None = None
    """A roster file (``--models``): each entry joins the agents under its name."""
    entries: tuple[RosterEntry, ...] = ()
    """Entries given in code (after the roster file's), e.g. a served checkpoint's."""
    tiers: tuple[Tier, ...] = TIERS
    per_pair: int = 10
    """Negotiations per ordered pair and tier."""
    secret: Seed | None = None
    """The secret (or public seed) scenarios and agents draw under; None: the one a resumed run
    stored, else a fresh one."""
    self_play: bool = False
    learner: str | None = None
    """Only the pairings of this agent against the others; None: the whole round robin."""
    learner_role: Role | None = None
    """With ``learner``: only in this seat (None: both)."""
    seats: SeatSettings = field(default_factory=SeatSettings)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSettings:
    """How a run is stored and driven."""

    out: Path
    """The results store (a SQLite file, created if missing)."""
    run: str = DEFAULT_RUN
    resume: bool = False
    """Continue a stored run of the same configuration (else a stored run is refused)."""
    concurrency: int = field(default_factory=lambda: os.cpu_count() or 1)
    """Scripted negotiations in flight: worker processes, or Ray CPUs."""
    llm_concurrency: int = 16
    """Negotiations with a seat player (an LLM, a person) in flight at once, in all."""
    backend: Literal["local", "ray"] = "local"
    """Where scripted jobs run: worker processes here, or a Ray cluster."""
    ray_address: str | None = None
    max_cost_usd: float | None = None
    """Start no new negotiation once the model cost reaches this (needs roster prices)."""
    max_calls: int | None = None
    """The same for model calls, failed attempts included."""


__all__ = [
    "DEFAULT_ENDPOINT_CONCURRENCY",
    "DEFAULT_RUN",
    "ENTRY_NAME",
    "MODEL_ATTEMPTS",
    "MODEL_BACKOFF_S",
    "MODEL_MAX_BACKOFF_S",
    "MODEL_TIMEOUT_S",
    "PlaySettings",
    "RosterEntry",
    "RunSettings",
    "SeatSettings",
]

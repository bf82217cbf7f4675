"""A roster of LLM entries (``--models models.toml``): several models on several endpoints.

One table per entry; its name is the agent spec (what stores and reports show)::

    [models.fast]
    model = "gpt-4.1-mini"                     # the model id the endpoint serves
    endpoint = "https://api.openai.com/v1"     # a base URL, or "litellm/PROVIDER/MODEL"
    key_env = "OPENAI_API_KEY"                 # variable that holds the key ("" for none)
    temperature = 0.7                          # optional sampling settings
    max_tokens = 512
    reasoning_effort = "low"                   # where the API has one
    enable_thinking = false                    # chat_template_kwargs (vLLM, train serve)
    concurrency = 32                           # negotiations in flight on this endpoint
    input_price = 0.40                         # USD per million input tokens
    output_price = 1.60                        # USD per million output tokens
    cached_input_price = 0.10                  # optional: input read from the prompt cache

Entries on the same endpoint share one limit (the smallest ``concurrency`` given for it).
Everything is checked before a negotiation starts, each as one sentence (``RosterError``):
unknown keys, a missing key variable, a bad URL; ``probe`` then asks each endpoint once, cheaply
(``GET /models``), whether it answers and takes the key.
"""

from __future__ import annotations

import json
import os
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

from pydantic import ValidationError

from dealroom.play.players import Endpoint
from dealroom.play.settings import ENTRY_NAME, RosterEntry
from dealroom.protocol.errors import DealroomError

if TYPE_CHECKING:  # the Agents SDK loads only when an entry's player is built
    from dealroom.agents.llm import LLMPlayer, LLMSettings

PROBE_TIMEOUT_S = 5.0


class RosterError(DealroomError, ValueError):
    """A roster that cannot be used: one sentence naming the file, the entry and the problem."""

    kind = "roster"


@dataclass(frozen=True, slots=True)
class RosterPlayer:
    """Builds one entry's player (picklable, for worker processes and Ray tasks)."""

    entry: RosterEntry
    settings: LLMSettings
    api_key: str | None
    endpoint: Endpoint

    def __call__(self) -> LLMPlayer:
        from dealroom.agents.llm import LLMPlayer, Prices

        entry = self.entry
        settings = replace(
            self.settings,
            temperature=entry.temperature,
            max_tokens=entry.max_tokens,
            reasoning_effort=entry.reasoning_effort,
            enable_thinking=entry.enable_thinking,
            max_tool_rounds=entry.max_tool_rounds or self.settings.max_tool_rounds,
            prices=None
            if entry.input_price is None or entry.output_price is None
            else Prices(
                input_per_million=entry.input_price,
                output_per_million=entry.output_price,
                cached_input_per_million=entry.cached_input_price,
            ),
        )
        model = entry.endpoint if entry.litellm else entry.model
        base_url = None if entry.litellm else entry.endpoint
        player = LLMPlayer.from_spec(
            f"llm:{model}", base_url=base_url, api_key=self.api_key, settings=settings
        )
        player.name = entry.name
        player.endpoint = self.endpoint
        return player


def load(path: Path) -> list[RosterEntry]:
    """Every entry of a roster file, checked (``RosterError`` otherwise)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RosterError(f"{path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RosterError(f"{path}: not a TOML file ({exc})") from None
    if unknown := sorted(set(data) - {"models"}):
        raise RosterError(f"{path}: unknown key {unknown[0]!r} (a roster has [models.NAME] tables)")
    tables = data.get("models")
    if not isinstance(tables, dict) or not tables:
        raise RosterError(f"{path}: no [models.NAME] table")
    named = cast("dict[str, object]", tables)  # TOML keys are strings
    return [_entry(path, name, table) for name, table in named.items()]


def _entry(path: Path, name: str, table: object) -> RosterEntry:
    where = f"{path}: [models.{name}]"
    if not ENTRY_NAME.match(name):
        raise RosterError(f"{where}: a name is letters, digits, '.', '_' and '-'")
    if not isinstance(table, dict):
        raise RosterError(f"{where}: not a table")
    try:
        entry = RosterEntry.model_validate({"name": name, **table})
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "entry"
        message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        raise RosterError(f"{where}: {field}: {message}") from None
    if not entry.litellm:
        parts = urlsplit(entry.endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RosterError(
                f"{where}: endpoint {entry.endpoint!r} is neither an http(s) base URL nor a "
                "litellm/PROVIDER/MODEL route"
            )
    if (entry.input_price is None) != (entry.output_price is None):
        raise RosterError(f"{where}: give both input_price and output_price, or neither")
    if entry.cached_input_price is not None and entry.input_price is None:
        raise RosterError(f"{where}: cached_input_price needs input_price and output_price")
    return entry


def players(entries: list[RosterEntry], settings: LLMSettings) -> dict[str, RosterPlayer]:
    """Each entry's player builder, by name; keys are read from the environment now."""
    limits: dict[str, int] = {}
    for entry in entries:
        limits[entry.endpoint] = min(
            limits.get(entry.endpoint, entry.concurrency), entry.concurrency
        )
    built: dict[str, RosterPlayer] = {}
    for entry in entries:
        key = api_key(entry)
        endpoint = Endpoint(key=entry.endpoint, concurrency=limits[entry.endpoint])
        built[entry.name] = RosterPlayer(entry, settings, key, endpoint)
    return built


def api_key(entry: RosterEntry) -> str | None:
    """The entry's key from its variable (None when ``key_env`` is empty)."""
    if not entry.key_env:
        return None
    value = os.environ.get(entry.key_env)
    if not value:
        raise RosterError(f"model {entry.name!r}: the key variable ${entry.key_env} is not set")
    return value


def probe(base_url: str, key: str | None, *, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Ask an OpenAI-compatible endpoint once whether it answers and takes the key
    (``GET /models``: free, and served by OpenAI, vLLM, llama.cpp and most proxies). Any answer
    but 401/403 counts as reachable (a server without ``/models`` still serves chat)."""
    request = urllib.request.Request(base_url.rstrip("/") + "/models", method="GET")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s):
            return
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise RosterError(
                f"{base_url}: the endpoint refused the key (HTTP {exc.code})"
            ) from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RosterError(f"{base_url}: the endpoint is unreachable ({reason})") from None


def served_models(
    base_url: str, key: str | None, *, timeout_s: float = PROBE_TIMEOUT_S
) -> list[dict[str, object]]:
    """The models an OpenAI-compatible endpoint lists (``GET /models``), each its entry (an
    ``id``, and whatever else the server says of it). Raises RosterError when it cannot be
    reached, refuses the key, or answers without a list of models."""
    request = urllib.request.Request(base_url.rstrip("/") + "/models", method="GET")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = response.read(1_000_000)
    except urllib.error.HTTPError as exc:
        raise RosterError(f"{base_url}: GET /models answered HTTP {exc.code}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RosterError(f"{base_url}: the endpoint is unreachable ({reason})") from None
    try:
        data = json.loads(body)
        listed = cast("list[dict[str, object]]", data["data"])
        return [{**item, "id": str(item["id"])} for item in listed]
    except (ValueError, KeyError, TypeError):
        raise RosterError(f"{base_url}: GET /models did not answer a list of models") from None


def wait_for_model(
    base_url: str,
    key: str | None,
    model: str,
    *,
    wait_s: float,
    poll_s: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, object]:
    """The endpoint's entry for ``model`` once it lists it; wait up to ``wait_s`` while it is
    unreachable (a server still loading its model), then raise RosterError. An endpoint that
    answers but serves other models is an error at once: evaluating whatever answers on a port
    would store another model's negotiations under this one's name."""
    deadline = clock() + wait_s
    while True:
        try:
            served = served_models(base_url, key)
        except RosterError as exc:
            if clock() + poll_s > deadline:
                raise RosterError(f"{exc} (waited {wait_s:g} s)") from None
            sleep(poll_s)
            continue
        for entry in served:
            if entry["id"] == model:
                return entry
        shown = ", ".join(repr(m["id"]) for m in served[:5]) or "no model"
        raise RosterError(f"{base_url} serves {shown}, not {model!r}")


def probe_all(endpoints: Mapping[str, str | None]) -> None:
    """``probe`` each base URL once (LiteLLM routes are not probed)."""
    for base_url, key in endpoints.items():
        if not base_url.startswith("litellm/"):
            probe(base_url, key)

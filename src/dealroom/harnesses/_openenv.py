"""openenv-core's names, imported in one place: openenv-core ships no type information (no
``py.typed``), so each import says so once here, and ``create_app`` gets a typed signature."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from fastapi import FastAPI
from openenv.core.client_types import StepResult  # pyright: ignore[reportMissingTypeStubs]
from openenv.core.env_client import EnvClient  # pyright: ignore[reportMissingTypeStubs]
from openenv.core.env_server import http_server  # pyright: ignore[reportMissingTypeStubs]
from openenv.core.env_server.interfaces import (  # pyright: ignore[reportMissingTypeStubs]
    Environment,
)
from openenv.core.env_server.types import (  # pyright: ignore[reportMissingTypeStubs]
    Action,
    Observation,
    State,
)

_create_app = cast(Callable[..., FastAPI], getattr(http_server, "create_app"))  # noqa: B009


def create_app(
    factory: Callable[[], Environment[Any, Any, Any]],
    action: type[Action],
    observation: type[Observation],
    *,
    env_name: str,
    max_concurrent_envs: int,
) -> FastAPI:
    """openenv-core's ``create_app``: its FastAPI app serving environments from ``factory``."""
    return _create_app(
        factory,
        action,
        observation,
        env_name=env_name,
        max_concurrent_envs=max_concurrent_envs,
    )


__all__ = ["Action", "EnvClient", "Environment", "Observation", "State", "StepResult", "create_app"]

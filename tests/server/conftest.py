"""Fixtures shared by the server tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from market_support import Clock, wall_sellers
from mcp_support import house_resolver

from dealroom.agents.market import market_seller
from dealroom.server.journal import Journals
from dealroom.server.negotiation import RoomLimits
from dealroom.server.rooms import RoomRegistry
from dealroom.store.results import ResultsStore
from dealroom.store.writer import ResultWriter


@pytest.fixture
def registries() -> Iterator[Callable[[Path], RoomRegistry]]:
    """Registries on a store, each as a server process would open it; closed at the end."""
    opened: list[RoomRegistry] = []

    def registry_at(path: Path) -> RoomRegistry:
        writer = ResultWriter.beside(ResultsStore(path))
        writer.recover()
        registry = RoomRegistry(
            writer=writer,
            resolve_house=house_resolver,
            limits=RoomLimits(idle_s=0.05),
            journals=Journals.beside(path),
            resolve_seller=market_seller,
        )
        opened.append(registry)
        return registry

    yield registry_at
    for registry in opened:
        registry.close()
        registry.writer.store.close()  # type: ignore[union-attr]


@pytest.fixture
def wall_registries() -> Iterator[Callable[[Path, Clock], RoomRegistry]]:
    """Registries on a store with journals, each as a server process would open it, on an
    injected timer (wall-clock market rooms: their house sellers ``market_support.wall_sellers``);
    closed at the end."""
    opened: list[RoomRegistry] = []

    def registry_at(path: Path, now: Clock) -> RoomRegistry:
        writer = ResultWriter.beside(ResultsStore(path))
        writer.recover()
        registry = RoomRegistry(
            writer=writer,
            resolve_house=house_resolver,
            limits=RoomLimits(idle_s=0.05, abandon_s=60.0, max_wait_s=60.0),
            journals=Journals.beside(path),
            resolve_seller=wall_sellers,
            timer=lambda: now[0],
        )
        opened.append(registry)
        return registry

    yield registry_at
    for registry in opened:
        registry.close()
        registry.writer.store.close()  # type: ignore[union-attr]

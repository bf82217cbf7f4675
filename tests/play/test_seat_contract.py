"""One seat contract: the registry names every kind of player, and every runner takes them all."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from dealroom.agents import (
    AgentSpecError,
    PlayerOptions,
    SeatEntry,
    is_scripted,
    resolve,
    resolve_player,
    seat_entries,
)
from dealroom.agents.human import HumanPlayer
from dealroom.agents.llm import LLMPlayer
from dealroom.client.seat import SeatClient
from dealroom.play import registry
from dealroom.play.jobs import ChunkPlayer, Job
from dealroom.play.players import ScriptedPlayer, SeatContext
from dealroom.play.tournament import Tournament, TournamentConfig
from dealroom.store.results import ResultsStore


def test_the_registry_names_scripted_agents_llms_and_people() -> None:
    assert {entry.name for entry in seat_entries()} >= {"llm", "human"}
    assert is_scripted("boulware:e=0.1") and not is_scripted("llm:m") and not is_scripted("human")
    scripted = resolve_player("boulware:e=0.1")
    assert isinstance(scripted, ScriptedPlayer) and scripted.name == "boulware:e=0.1"
    llm = resolve_player("llm:some-model", PlayerOptions(base_url="http://127.0.0.1:9/v1"))
    assert isinstance(llm, LLMPlayer) and llm.name == "llm:some-model"
    assert isinstance(resolve_player("human"), HumanPlayer)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("llm", "needs MODEL"),
        ("human:bob", "takes no argument"),
        ("nosuch:x", "unknown agent"),
    ],
)
def test_bad_seat_specs_are_one_sentence_errors(spec: str, fragment: str) -> None:
    with pytest.raises(AgentSpecError, match=fragment) as error:
        resolve_player(spec)
    assert "\n" not in str(error.value)


def test_a_seat_player_is_no_agent_factory_for_the_engine() -> None:
    with pytest.raises(AgentSpecError, match="plays through a seat"):
        resolve("llm:some-model")


class Mirror:
    """A third-party player: plays a scripted strategy through the seat's tools (as a remote
    MCP client would) and reports how many tool calls it made."""

    def __init__(self, strategy: str) -> None:
        self.name = f"mirror:{strategy}"
        self.inner = ScriptedPlayer(resolve(strategy), strategy)

    async def play(self, seat: SeatClient, context: SeatContext) -> Mapping[str, Any]:
        data = await self.inner.play(seat, context)
        return {"mirrored": True, **data}


@pytest.fixture
def mirror_entry() -> Iterator[None]:
    registry.register(
        SeatEntry(name="mirror", summary="test", build=lambda arg, _: Mirror(arg), argument="S")
    )
    try:
        yield
    finally:
        del registry._REGISTRY["mirror"]


@pytest.mark.usefixtures("mirror_entry")
def test_a_third_party_seat_entry_plays_a_tournament_through_the_seats(tmp_path: Path) -> None:
    config = TournamentConfig(agents=("mirror:conceder", "boulware"), tiers=("mid",), per_pair=2)
    with ResultsStore(tmp_path / "t.db") as store:
        progress = Tournament(config, store).run()
        rows = list(store.iter())
    assert progress.done == len(rows) == 4
    for row in rows:
        role = "buyer" if row.record.buyer.startswith("mirror") else "seller"
        assert row.extra["players"][role]["mirrored"] is True
        assert row.extra["players"][role]["name"] == "mirror:conceder"
        assert "errors" not in row.extra
    assert {row.record.outcome.status for row in rows} <= {"deal", "no_deal"}


class Closable(Mirror):
    """A mirror that holds something to close (as an LLM player holds an HTTP client)."""

    def __init__(self, strategy: str) -> None:
        super().__init__(strategy)
        self.negotiations = 0
        self.closed = False

    async def play(self, seat: SeatClient, context: SeatContext) -> Mapping[str, Any]:
        assert not self.closed
        self.negotiations += 1
        return await super().play(seat, context)

    async def aclose(self) -> None:
        self.closed = True


def test_a_tournament_plays_each_seat_spec_with_one_player_then_closes_it(
    tmp_path: Path,
) -> None:
    built: list[Closable] = []

    def resolver(spec: str) -> Any:
        if not spec.startswith("mirror:"):
            return resolve_player(spec)
        built.append(Closable(spec.partition(":")[2]))
        return built[-1]

    agents = ("mirror:conceder", "mirror:boulware", "hardliner")
    config = TournamentConfig(agents=agents, tiers=("mid", "low"), per_pair=2)
    with ResultsStore(tmp_path / "t.db") as store:
        progress = Tournament(config, store).run(resolver)
    assert progress.done == 24
    players = [p for p in built if p.negotiations]
    # Each mirror sits in 4 pairings (2 as buyer, 2 as seller) x 2 tiers x 2 indices.
    assert sorted((p.name, p.negotiations) for p in players) == [
        ("mirror:boulware", 16),
        ("mirror:conceder", 16),
    ]
    assert all(p.closed for p in players)
    # Built once to tell whether the spec is scripted, once to play: never per negotiation
    # (an LLM player builds an HTTP client, whose TLS context alone costs tens of ms of CPU).
    assert len(built) == 2 * len(players)


def test_a_scripted_job_plays_in_the_engine_and_a_seat_job_does_not() -> None:
    player = ChunkPlayer()
    scripted = Job("r", "boulware", "conceder", "mid", 0, 0)
    seated = Job("r", "human", "conceder", "mid", 0, 0)
    assert player.is_scripted(scripted) and not player.is_scripted(seated)
    assert player.play(scripted).outcome is not None


def test_a_scripted_tournament_loads_neither_the_agents_sdk_nor_an_event_loop(
    tmp_path: Path,
) -> None:
    code = (
        "import sys, asyncio; from dealroom.cli import main; "
        "loops = []; asyncio.new_event_loop = lambda *a: loops.append(1); "
        f"main(['tournament', '--agents', 'boulware,conceder', '--per-pair', '1', "
        f"'--concurrency', '1', '--out', {str(tmp_path / 't.db')!r}]); "
        "print('agents' in sys.modules or 'openai' in sys.modules, loops)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.split() == ["False", "[]"]

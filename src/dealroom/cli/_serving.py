"""What serving shares: the results store of served rooms (stdio and HTTP), and HTTP serving
itself, of the whole server or of one worker of a cluster (``dealroom.cli._cluster``)."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from dealroom.cli import _players
from dealroom.cli._common import (
    ADMIN_TOKEN_ENV,
    found_in,
    usage_error,
)
from dealroom.server.negotiation import RoomLimits
from dealroom.server.room_settings import SeatPlayer
from dealroom.store.private import private_dir
from dealroom.store.results import ResultsStore, StoreError
from dealroom.store.writer import ResultWriter

if TYPE_CHECKING:
    from dealroom.play.players import Player
    from dealroom.server.market_room import MarketPlayer
    from dealroom.server.rooms import RoomRegistry

STORE_BUSY_S = 5.0
"""How long one write waits for another process's lock on the store before it is retried
later (in a worker thread: the server itself never waits)."""


def default_results_path() -> Path:
    """$XDG_DATA_HOME/dealroom/results.db (default ~/.local/share/dealroom/results.db)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "dealroom" / "results.db"


def open_writer(path: Path | None) -> ResultWriter:
    """The results store and its writer, its directory created if needed, with what an earlier
    process left in the spool written to it; a usage error if it cannot be opened."""
    own = path is None  # the default store's directory is dealroom's alone
    path = path or default_results_path()
    try:
        private_dir(path.parent, own=own)
        writer = ResultWriter.beside(ResultsStore(path, busy_s=STORE_BUSY_S))
    except (OSError, StoreError) as exc:
        raise usage_error(f"{path}: cannot open the results store ({exc})") from None
    writer.recover()
    return writer


def close_store(writer: ResultWriter) -> None:
    """A last try at the pending results, then close the store."""
    try:
        writer.close()
    finally:
        writer.store.close()


def has_uvloop() -> bool:
    """uvloop (with httptools, which uvicorn picks up by itself) makes HTTP serving ~1.5x faster."""
    return importlib.util.find_spec("uvloop") is not None


def run_http(args: argparse.Namespace, worker: tuple[int, str] | None = None) -> int:
    """Serve HTTP rooms until interrupted: the whole server, or with ``worker`` (index, Unix
    socket) one worker of a cluster (its own tokens' prefix, journals and socket)."""
    from dealroom.agents import resolve
    from dealroom.agents.market import market_seller
    from dealroom.server.cluster_owners import journal_directory, owning, token_prefix
    from dealroom.server.journal import Journals
    from dealroom.server.rooms import RoomRegistry

    admin_token = os.environ.get(ADMIN_TOKEN_ENV) or None
    if admin_token is None and worker is None:
        sys.stderr.write(
            f"dealroom: {ADMIN_TOKEN_ENV} is not set: the admin API (room creation) is disabled\n"
        )
    writer = open_writer(args.results)
    players: dict[str, Player] = {}
    try:
        journals, prefix = Journals.beside(writer.store.path), ""
        if worker is not None:
            journals = Journals(journal_directory(writer.store.path, worker[0]))
            prefix = token_prefix(worker[0])
        registry = RoomRegistry(
            writer=writer,
            resolve_house=resolve,
            limits=RoomLimits(
                idle_s=args.idle_limit,
                negotiations_per_minute=args.max_negotiations_per_minute or None,
                message_chars_per_minute=args.max_message_chars_per_minute or None,
                message_chars_per_series=args.max_message_chars_per_series or None,
            ),
            journals=journals,
            resolve_player=lambda spec: room_player(spec, args, players),
            token_prefix=prefix,
            resolve_seller=market_seller,
            resolve_market_player=lambda spec: market_room_player(spec, args, players),
        )
        with contextlib.ExitStack() as owned:
            # No two processes serve one store's rooms: both would restore and play them.
            try:
                owned.enter_context(owning(journals.directory, owner=_serving_what(args, worker)))
            except OSError as exc:
                raise usage_error(str(exc)) from None
            registry.restore()  # open rooms of an earlier process, with their tokens
            _serve_registry(args, registry, players, admin_token, worker)
    finally:
        close_store(writer)
    return 0


def _serving_what(args: argparse.Namespace, worker: tuple[int, str] | None) -> str:
    """What this process serves, as the owner lock of its journals names it to another."""
    from dealroom.server.mcp_http import listen_url

    url = f"serving {listen_url(args.host, args.port)}"
    return url if worker is None else f"worker {worker[0]} of the cluster {url}"


def _serve_registry(
    args: argparse.Namespace,
    registry: RoomRegistry,
    players: dict[str, Player],
    admin_token: str | None,
    worker: tuple[int, str] | None,
) -> None:
    from dealroom.play.players import closing
    from dealroom.server.mcp_http import ListenFailed, serve_http

    async def main() -> None:
        await serve_http(
            registry,
            host=args.host,
            port=args.port,
            admin_token=admin_token,
            allowed_hosts=args.allow_host,
            uds=None if worker is None else worker[1],
            on_ready=None if worker is not None else lambda: say_ready(args.host, args.port),
        )

    try:
        anyio.run(
            lambda: closing(players.values(), main),
            backend_options={"use_uvloop": has_uvloop()},
        )
    except BaseException as exc:
        failed = found_in(exc, (ListenFailed,))
        if failed is None:
            raise
        raise usage_error(str(failed)) from None
    registry.close()


def say_ready(host: str, port: int) -> None:
    """The one line an HTTP server (or a cluster's front) writes on stderr once it listens."""
    from dealroom.server.mcp_http import listen_url
    from dealroom.server.web import PAGES

    url = listen_url(host, port)
    sys.stderr.write(
        f"dealroom: serving MCP at {url}/mcp, web pages at {url}/web/ ({', '.join(PAGES)})\n"
    )


def market_room_player(
    spec: str, args: argparse.Namespace, built: dict[str, Player]
) -> MarketPlayer | None:
    """A market room's seat played in process (``llm:MODEL``, the seller's or a buyer's), or
    None for a house agent (a market seller, ``auctioneer`` or ``sequential``, included: the
    registry's ``resolve_seller`` builds it); shares ``room_player``'s players (one per spec).
    Any other seat player is a ValueError: the admin API refuses the room."""
    from dealroom.agents.llm import LLMPlayer
    from dealroom.agents.llm_market_served import model_market_player
    from dealroom.agents.market import is_market_seller

    if is_market_seller(spec) or room_player(spec, args, built) is None:
        return None
    player = built[spec]
    if not isinstance(player, LLMPlayer):
        raise ValueError(f"{spec}: a market room's house seat is a scripted agent or llm:MODEL")
    return model_market_player(player)


def room_player(spec: str, args: argparse.Namespace, built: dict[str, Player]) -> SeatPlayer | None:
    """A room's seat played in process (``llm:MODEL``, with the LLM flags), or None for a house
    agent; one player per spec, shared by every room that names it (closed when serving ends).
    A bad spec is a ValueError: the admin API refuses the room."""
    from dealroom.play.registry import is_scripted, resolve_player
    from dealroom.play.runner import house_player

    if is_scripted(spec):  # an unknown spec raises AgentSpecError, a ValueError
        return None
    player = built.get(spec)
    if player is None:
        player = built[spec] = resolve_player(spec, _players.flag_options(args))
    return house_player(player)

"""``dealroom serve``: the MCP server, over stdio (house mode) or streamable HTTP (rooms)."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import os
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from dealroom.cli import _players
from dealroom.cli._common import (
    ADMIN_TOKEN_ENV,
    add_scenario_flags,
    agent,
    found_in,
    read_scenarios,
    run_secret,
    usage_error,
)
from dealroom.protocol import DEFAULT_RULES, Role, Scenario
from dealroom.protocol.generator import DEFAULT_SPEC, scenario_at
from dealroom.protocol.secret import Secret
from dealroom.server.negotiation import DEFAULT_LIMITS, RoomLimits
from dealroom.server.room import House, Room, ScenarioSource, SeatPlayer
from dealroom.store.private import private_dir
from dealroom.store.results import ResultsStore, StoreError
from dealroom.store.writer import ResultWriter

if TYPE_CHECKING:
    from dealroom.play.players import Player
    from dealroom.server.rooms import RoomRegistry

STORE_BUSY_S = 5.0
"""How long one write waits for another process's lock on the store before it is retried
later (in a worker thread: the server itself never waits)."""


def default_results_path() -> Path:
    """$XDG_DATA_HOME/dealroom/results.db (default ~/.local/share/dealroom/results.db)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "dealroom" / "results.db"


def add(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register the subcommand."""
    parser = commands.add_parser(
        "serve",
        help="serve negotiations over MCP (stdio house mode, or HTTP rooms)",
        description="Serve negotiations over MCP. stdio (default): this process is one seat "
        "against a house agent, for hosts such as Claude Desktop. http: rooms with a bearer "
        "token per seat, MCP at /mcp, rooms created with `dealroom room create`.",
    )
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    house = parser.add_argument_group("stdio house mode")
    house.add_argument(
        "--role",
        choices=["buyer", "seller"],
        default="buyer",
        help="the client's seat (default: buyer)",
    )
    house.add_argument(
        "--opponent",
        default="boulware",
        help="house agent spec in the other seat, or llm:MODEL (see the LLM flags) "
        "(default: boulware)",
    )
    add_scenario_flags(house)
    for action in house._group_actions:
        if action.dest == "scenario":
            action.help = "JSONL scenario file: negotiation n of the series plays line n"
    house.add_argument(
        "--deadline",
        type=_seconds,
        help="seconds on the negotiation clock "
        f"(default: {DEFAULT_SPEC.deadline:g}; ignored with --scenario)",
    )
    house.add_argument(
        "--clock",
        choices=["virtual", "wall"],
        default="virtual",
        help="virtual (default): each action costs fixed simulated seconds; wall: real time",
    )
    http = parser.add_argument_group("http rooms")
    http.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1)")
    http.add_argument("--port", type=int, default=8765, help="port (default: 8765)")
    http.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="extra Host name accepted by DNS-rebinding protection (repeatable)",
    )
    http.add_argument(
        "--workers",
        type=_workers,
        default=1,
        help="server processes; more than 1: a front on --host/--port routes each room to "
        "the worker that owns it (default: 1, one process)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="SQLite results store; every finished negotiation is written there "
        f"(default: {default_results_path()}, i.e. $XDG_DATA_HOME/dealroom/"
        "results.db)",
    )
    parser.add_argument(
        "--idle-limit",
        type=_seconds,
        default=DEFAULT_LIMITS.idle_s,
        help="real seconds after which a silent client counts as waiting while the other "
        "client of its room waits for it "
        f"(default: {DEFAULT_LIMITS.idle_s:g})",
    )
    _players.add_llm_flags(parser)
    parser.set_defaults(handler=run)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError(f"must be in (0, 86400]: {text!r}")
    return value


def _workers(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to 64: {text!r}")
    return int(text)


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


def house_scenarios(args: argparse.Namespace, secret: Secret) -> ScenarioSource:
    """Negotiation n plays line n of --scenario, or the n-th scenario of the tier under the
    secret."""
    if args.scenario is not None:
        rows = read_scenarios(args.scenario)
        if not rows:
            raise usage_error(f"{args.scenario}: no scenario in the file")

        def from_file(index: int) -> Scenario | None:
            return rows[index] if index < len(rows) else None

        return from_file
    spec = DEFAULT_SPEC
    if args.deadline is not None:
        spec = DEFAULT_SPEC.model_copy(update={"deadline": args.deadline})
    tier = args.tier

    def generated(index: int) -> Scenario:
        return scenario_at(secret, index, tier, spec)

    return generated


def run(args: argparse.Namespace) -> int:
    """Serve until the client (stdio) or an interrupt (http) ends it."""
    if args.transport != "http" and args.workers != 1:
        raise usage_error("--workers needs --transport http")
    if args.transport == "http" and args.workers > 1:
        from dealroom.cli._cluster import run_cluster

        return run_cluster(args)
    if args.transport == "http":
        return run_http(args)
    # One client per process: an unfinished negotiation simply ends with the process.
    limits = RoomLimits(idle_s=args.idle_limit, abandon_s=math.inf)
    role: Role = args.role
    opponent: Role = "seller" if role == "buyer" else "buyer"
    houses: dict[Role, House] = {}
    players: dict[Role, SeatPlayer] = {}
    seated: list[object] = []  # seat players to close when serving ends (an LLM's HTTP client)
    if not _players.scripted(args.opponent):
        from dealroom.play.runner import house_player

        seat_player = _players.player(args.opponent, args)
        seated.append(seat_player)
        players[opponent] = house_player(seat_player)
    else:
        houses[opponent] = House(args.opponent, agent(args.opponent))
    # Never printed: the host's log is not the operator's alone. The results store keeps it.
    secret, _ = run_secret(args)
    scenarios = house_scenarios(args, secret)
    writer = open_writer(args.results)
    try:
        room = Room(
            f"house-{secrets.token_hex(6)}",
            scenarios=scenarios,
            houses=houses,
            players=players,
            rules=DEFAULT_RULES,
            clock=args.clock,
            seed=secret,
            writer=writer,
            limits=limits,
        )
        from dealroom.server.mcp_stdio import serve_stdio

        if seated:
            from dealroom.play.players import closing

            anyio.run(lambda: closing(seated, lambda: serve_stdio(room, role)))
        else:
            anyio.run(serve_stdio, room, role)
    finally:
        close_store(writer)
    return 0


def has_uvloop() -> bool:
    """uvloop (with httptools, which uvicorn picks up by itself) makes HTTP serving ~1.5x faster."""
    return importlib.util.find_spec("uvloop") is not None


def run_http(args: argparse.Namespace, worker: tuple[int, str] | None = None) -> int:
    """Serve HTTP rooms until interrupted: the whole server, or with ``worker`` (index, Unix
    socket) one worker of a cluster (its own tokens' prefix, journals and socket)."""
    from dealroom.agents import resolve
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
            limits=RoomLimits(idle_s=args.idle_limit),
            journals=journals,
            resolve_player=lambda spec: room_player(spec, args, players),
            token_prefix=prefix,
        )
        with contextlib.ExitStack() as owned:
            # No two processes serve one store's rooms: both would restore and play them.
            try:
                owned.enter_context(owning(journals.directory))
            except OSError as exc:
                raise usage_error(str(exc)) from None
            registry.restore()  # open rooms of an earlier process, with their tokens
            _serve_registry(args, registry, players, admin_token, worker)
    finally:
        close_store(writer)
    return 0


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
        player = built[spec] = resolve_player(spec, _players.player_options(args))
    return house_player(player)

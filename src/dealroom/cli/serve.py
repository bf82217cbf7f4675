"""``dealroom serve``: the MCP server, over stdio (house mode) or streamable HTTP (rooms)."""

from __future__ import annotations

import argparse
import math
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from dealroom.cli import _players
from dealroom.cli._common import (
    Commands,
    add_scenario_flags,
    agent,
    read_scenarios,
    run_secret,
    usage_error,
)
from dealroom.cli._serving import close_store, default_results_path, open_writer, run_http
from dealroom.protocol import DEFAULT_RULES, Role, Scenario
from dealroom.protocol.generator import DEFAULT_SPEC, scenario_at
from dealroom.protocol.secret import Secret
from dealroom.server.negotiation import DEFAULT_LIMITS, RoomLimits
from dealroom.server.room import Room
from dealroom.server.room_settings import House, Occupant, RoomSettings, ScenarioSource

if TYPE_CHECKING:
    pass


HTTP_NEGOTIATIONS_PER_MINUTE = 120
"""A person or a model starts a negotiation every few seconds at most; a client that starts
more is a program writing the server's disk (up to 58 KB a negotiation, store and journal:
benchmarks/write_budget.py)."""
HTTP_MESSAGE_CHARS_PER_MINUTE = 20_000
"""Ten messages of the longest default length a minute: more than a person types or a model
needs; each character is written about five times (docs/security.md)."""
HTTP_MESSAGE_CHARS_PER_SERIES = 1_000_000
"""A series' message text: 500 messages of 2,000 characters."""


def add(commands: Commands) -> None:
    """Register the subcommand."""
    parser = commands.add_parser(
        "serve",
        help="serve negotiations over MCP (stdio house mode, or HTTP rooms)",
        description="Serve negotiations over MCP. stdio (default): this process is one seat "
        "against a house agent, for hosts such as Claude Desktop. http: rooms with a bearer "
        "token per seat, MCP at /mcp, rooms created with `dealroom room create`.",
    )
    parser.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="stdio (default): one seat for the MCP host that starts it; http: rooms, "
        "web pages and tokens",
    )
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
    house.add_argument(
        "--buyers",
        type=int,
        default=1,
        metavar="N",
        help="2 to 16: one market (on --clock) in place of a series; as seller, every buyer "
        "is --opponent; as buyer, the client is b1, the seller --opponent (a market seller such "
        "as auctioneer) and the other buyers --other-buyers (default: 1, a bilateral series)",
    )
    house.add_argument(
        "--other-buyers",
        default="linear",
        metavar="SPEC",
        help="a market's other house buyers, when the client is a buyer (default: linear)",
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
    parser.add_argument(
        "--max-negotiations-per-minute",
        type=_per_minute,
        default=HTTP_NEGOTIATIONS_PER_MINUTE,
        metavar="N",
        help="HTTP rooms: a seat starts at most N negotiations of its series a minute, so that "
        "one token cannot fill the disk; a series has at most "
        f"{DEFAULT_LIMITS.max_series:,} (0: no rate limit; default: "
        f"{HTTP_NEGOTIATIONS_PER_MINUTE})",
    )
    parser.add_argument(
        "--max-message-chars-per-minute",
        type=_per_minute,
        default=HTTP_MESSAGE_CHARS_PER_MINUTE,
        metavar="N",
        help="HTTP rooms: a client seat sends at most N characters of messages a minute "
        f"(0: no limit; default: {HTTP_MESSAGE_CHARS_PER_MINUTE:,})",
    )
    parser.add_argument(
        "--max-message-chars-per-series",
        type=_per_minute,
        default=HTTP_MESSAGE_CHARS_PER_SERIES,
        metavar="N",
        help="HTTP rooms: and at most N over its series "
        f"(0: no limit; default: {HTTP_MESSAGE_CHARS_PER_SERIES:,})",
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


def _per_minute(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def _workers(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to 64: {text!r}")
    return int(text)


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
    if args.buyers != 1:
        return _run_market(args)
    # One client per process: an unfinished negotiation simply ends with the process.
    limits = RoomLimits(idle_s=args.idle_limit, abandon_s=math.inf)
    role: Role = args.role
    opponent: Role = "seller" if role == "buyer" else "buyer"
    occupants: dict[Role, Occupant] = {}
    seated: list[object] = []  # seat players to close when serving ends (an LLM's HTTP client)
    if not _players.scripted(args.opponent):
        from dealroom.play.runner import house_player

        seat_player = _players.player(args.opponent, args)
        seated.append(seat_player)
        occupants[opponent] = house_player(seat_player)
    else:
        occupants[opponent] = House(args.opponent, agent(args.opponent))
    # Never printed: the host's log is not the operator's alone. The results store keeps it.
    secret, _ = run_secret(args)
    scenarios = house_scenarios(args, secret)
    writer = open_writer(args.results)
    try:
        settings = RoomSettings(
            scenarios=scenarios,
            occupants=occupants,
            rules=DEFAULT_RULES,
            clock=args.clock,
            seed=secret,
            limits=limits,
        )
        room = Room(f"house-{secrets.token_hex(6)}", settings, writer=writer)
        from dealroom.server.mcp_stdio import serve_stdio

        if seated:
            from dealroom.play.players import closing

            anyio.run(lambda: closing(seated, lambda: serve_stdio(room, role)))
        else:
            anyio.run(serve_stdio, room, role)
    finally:
        close_store(writer)
    return 0


def _run_market(args: argparse.Namespace) -> int:
    """stdio house mode with ``--buyers N``: the client's seat in a series of markets (one after
    another, ``new_negotiation``), every other seat a house agent (``server.market_series``),
    each market stored in the results' ``markets`` table."""
    from dealroom.agents.market import market_seller
    from dealroom.protocol import RoomRequest
    from dealroom.protocol.market import buyer_ids
    from dealroom.server.market_series import open_series
    from dealroom.server.mcp_stdio import serve_market_stdio

    secret, _ = run_secret(args)
    try:
        names = buyer_ids(args.buyers)
        houses: dict[str, str]
        seller: str | None
        if args.role == "seller":
            houses = {name: str(args.opponent) for name in names}
            seller = None
        else:
            houses = {name: str(args.other_buyers) for name in names[1:]}
            seller = args.opponent
        request = RoomRequest(
            tier=args.tier,
            deadline=args.deadline,
            clock=args.clock,
            buyers=args.buyers,
            house_seller=seller,
            house_buyers=houses,
            secret=secret.hex(),
        )
        writer = open_writer(args.results)
    except ValueError as exc:
        raise usage_error(str(exc).splitlines()[0]) from None
    try:
        room_id = f"house-{secrets.token_hex(6)}"
        try:
            markets = open_series(
                room_id,
                request,
                resolve_house=agent,
                resolve_seller=market_seller,
                resolve_player=None,
                writer=writer,
            )
        except ValueError as exc:
            raise usage_error(str(exc).splitlines()[0]) from None
        anyio.run(serve_market_stdio, markets)
    finally:
        close_store(writer)
    return 0

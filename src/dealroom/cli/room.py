"""``dealroom room create|show``: the admin API of an HTTP server, from the command line.

The admin token is read from DEALROOM_ADMIN_TOKEN only, never from a flag (flags end up in shell
history and process lists).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import httpx2

from dealroom.cli._common import ADMIN_TOKEN_ENV, Commands, add_secret_flag, run_secret, usage_error
from dealroom.protocol import TIERS, RoomCreated, RoomRequest


def add(commands: Commands) -> None:
    """Register the subcommands."""
    room = commands.add_parser("room", help="create and inspect rooms on an HTTP server")
    actions = room.add_subparsers(dest="room_command", required=True, parser_class=type(room))
    create = actions.add_parser(
        "create",
        help="open a room; prints its id and one token per open seat",
        description=f"Open a room. The admin token is read from ${ADMIN_TOKEN_ENV}.",
    )
    create.add_argument("--server", required=True, help="server URL, e.g. http://127.0.0.1:8765")
    create.add_argument("--tier", choices=TIERS, default="mid", help="price tier (default: mid)")
    add_secret_flag(create)
    create.add_argument("--index", type=int, default=0, help="scenario index (default: 0)")
    create.add_argument("--deadline", type=float, help="seconds on the negotiation clock")
    create.add_argument(
        "--clock",
        choices=["virtual", "wall"],
        default="virtual",
        help="virtual (default): each action costs fixed clock seconds; wall: real seconds",
    )
    house = create.add_mutually_exclusive_group()
    house.add_argument(
        "--house-buyer",
        metavar="SPEC",
        help="a house agent takes the buyer seat (a scripted agent, or llm:MODEL played by the "
        "server with its LLM flags)",
    )
    house.add_argument(
        "--house-seller", metavar="SPEC", help="a house agent takes the seller seat (as above)"
    )
    market = create.add_argument_group(
        "market rooms (one seller, N buyers: every seat no house agent takes is a client's)"
    )
    market.add_argument(
        "--buyers",
        type=int,
        default=1,
        metavar="N",
        help="buyers in the room (default 1: a bilateral room; 2 to 16: a market room)",
    )
    market.add_argument(
        "--house-buyers",
        metavar="B=SPEC,...",
        help="a market room's house buyers by name, e.g. b1=linear,b2=llm:MODEL (with "
        "--house-seller, a market seller such as auctioneer, or llm:MODEL); each other seat gets "
        "a token",
    )
    market.add_argument(
        "--seller-actions", type=int, metavar="N", help="a market room's seller turn budget"
    )
    market.add_argument(
        "--no-buyer-count",
        action="store_true",
        help="a market room's buyers are not told how many buyers there are",
    )
    experiment = create.add_argument_group("experiments with people (the web seat page)")
    experiment.add_argument(
        "--participant", metavar="ID", help="store the room's negotiations under this id (its run)"
    )
    experiment.add_argument(
        "--consent", metavar="TEXT", help="a consent line the seat page asks the person to accept"
    )
    experiment.add_argument(
        "--negotiations", type=int, metavar="N", help="negotiations in the series (default: no end)"
    )
    create.add_argument(
        "--json",
        action="store_true",
        help='print {"room": ..., "tokens": ..., "spectator": ..., "links": ...}',
    )
    create.set_defaults(handler=run_create)

    show = actions.add_parser("show", help="print a room's negotiations and outcomes (JSON)")
    show.add_argument("--server", required=True, help="server URL, e.g. http://127.0.0.1:8765")
    show.add_argument("room", help="the room's id (room-...)")
    show.set_defaults(handler=run_show)


def base_url(server: str) -> str:
    """The server's root URL (a trailing /mcp is dropped)."""
    url = server.rstrip("/")
    return url.removesuffix("/mcp")


def admin_request(method: str, url: str, body: dict[str, Any] | None = None) -> httpx2.Response:
    """One request to the admin API with the token from the environment; a refusal or a
    server out of reach is a usage error (one line, exit status 2)."""
    token = os.environ.get(ADMIN_TOKEN_ENV)
    if not token:
        raise usage_error(f"set {ADMIN_TOKEN_ENV} to the server's admin token")
    try:
        response = httpx2.request(
            method, url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30.0
        )
    except httpx2.HTTPError as exc:
        raise usage_error(f"{url}: {exc}") from None
    if response.status_code >= 400:
        try:
            data: dict[str, Any] = response.json()
        except ValueError:
            data = {"error": response.text[:200]}
        raise usage_error(f"{url}: HTTP {response.status_code}: {data.get('error', data)}")
    return response


def admin_json(method: str, url: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """``admin_request``'s JSON answer."""
    response = admin_request(method, url, body)
    try:
        data: dict[str, Any] = response.json()
    except ValueError:
        raise usage_error(f"{url}: the server's answer is not JSON") from None
    return data


def run_create(args: argparse.Namespace) -> int:
    """POST /admin/rooms and print the tokens."""
    secret, given = run_secret(args)
    try:
        request = RoomRequest(
            tier=args.tier,
            secret=secret.hex() if given else None,
            index=args.index,
            deadline=args.deadline,
            clock=args.clock,
            house_buyer=args.house_buyer,
            house_seller=args.house_seller,
            participant=args.participant,
            consent=args.consent,
            negotiations=args.negotiations,
            buyers=args.buyers,
            house_buyers=_house_buyers(args.house_buyers),
            seller_actions=args.seller_actions,
            buyers_know_count=not args.no_buyer_count,
        )
    except ValueError as exc:
        raise usage_error(str(exc).splitlines()[0]) from None
    body = request.model_dump(mode="json", exclude_defaults=True)
    created = RoomCreated.model_validate(
        admin_json("POST", f"{base_url(args.server)}/admin/rooms", body)
    )
    links = web_links(base_url(args.server), created)
    if args.json:
        body = {
            "room": created.room,
            "tokens": created.tokens,
            "spectator": created.spectator,
            "links": links,
        }
        sys.stdout.write(json.dumps(body) + "\n")
        return 0
    sys.stdout.write(f"room {created.room}\n")
    for role, token in created.tokens.items():
        sys.stdout.write(f"{role:<6} {token}\n")
    for name, link in links.items():
        sys.stdout.write(f"{name + ' page':<14} {link}\n")
    return 0


def _house_buyers(given: str | None) -> dict[str, str] | None:
    """``b1=linear,b2=boulware`` as a mapping; raises ValueError for a part without ``=``."""
    if given is None:
        return None
    pairs = [part.strip().partition("=") for part in given.split(",") if part.strip()]
    if any(not name or not sep or not spec for name, sep, spec in pairs):
        raise ValueError(f"--house-buyers: give NAME=SPEC pairs, e.g. b1=linear (not {given!r})")
    return {name: spec for name, _, spec in pairs}


def web_links(server: str, created: RoomCreated) -> dict[str, str]:
    """The room's web pages: one per client seat (a market room's too: its seller's page
    shows every thread, a buyer's its own) and the spectator's (the token rides in the link's
    fragment, which a browser never sends to the server)."""
    links = {role: f"{server}/web/seat#token={token}" for role, token in created.tokens.items()}
    if created.spectator is not None:
        links["spectator"] = f"{server}/web/room#token={created.spectator}"
    return links


def run_show(args: argparse.Namespace) -> int:
    """GET /admin/rooms/{room}."""
    data = admin_json("GET", f"{base_url(args.server)}/admin/rooms/{args.room}")
    sys.stdout.write(json.dumps(data, indent=2) + "\n")
    return 0

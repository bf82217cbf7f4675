"""``dealroom match`` for players that go through MCP seats: LLM agents, people, remote rooms.

In-process (default): the server's room, seats and MCP app run in this process on the virtual
clock. ``--server URL``: a room is opened on that HTTP server (admin token from
``$DEALROOM_ADMIN_TOKEN``) and the players connect to their seats over HTTP.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import anyio

from dealroom.analysis.transcript import format_record
from dealroom.cli._common import (
    ADMIN_TOKEN_ENV,
    report_fresh_secret,
    run_secret,
    scenario,
    usage_error,
)
from dealroom.cli._players import check_unstored, match_key, player, store_match
from dealroom.play.players import closing
from dealroom.play.remote import RemoteMatchError, play_remote_match
from dealroom.play.runner import MatchResult, play_match
from dealroom.protocol import RoomRequest
from dealroom.protocol.secret import seed_json


def run(args: argparse.Namespace) -> int:
    """Play through MCP and print; exit status 1 if a player failed (its error is printed).
    The players' connections are closed in the event loop that used them."""
    buyer, seller = player(args.buyer, args), player(args.seller, args)
    secret, given = run_secret(args, public=True)
    if args.server:
        token = os.environ.get(ADMIN_TOKEN_ENV)
        if not token:
            raise usage_error(f"--server needs ${ADMIN_TOKEN_ENV} (the server's admin token)")
        if args.scenario is not None:
            raise usage_error(
                "--scenario cannot be used with --server (rooms use --tier, --secret)"
            )
        request = RoomRequest(tier=args.tier, secret=secret.hex(), clock=args.clock)
        try:
            result = anyio.run(
                lambda: closing(
                    (buyer, seller),
                    lambda: play_remote_match(
                        args.server, buyer, seller, admin_token=token, request=request
                    ),
                )
            )
        except RemoteMatchError as exc:
            sys.stderr.write(f"dealroom: error: {exc}\n")
            return 1
    else:
        chosen = scenario(args, secret)
        if args.results is not None:
            check_unstored(args.results, match_key(chosen.id, buyer.name, seller.name))
        result = anyio.run(
            lambda: closing(
                (buyer, seller),
                lambda: play_match(chosen, buyer, seller, seed=secret, clock=args.clock),
            )
        )
    if args.results is not None:
        store_match(args.results, result.record, {**result.extra, **seed_json(secret)})
    sys.stdout.write((_json(result) if args.json else _text(result)) + "\n")
    report_fresh_secret(secret, given)
    return 1 if result.errors else 0


def _json(result: MatchResult) -> str:
    """The record's JSON with the players' data under a separate ``extra`` key."""
    body: dict[str, Any] = json.loads(result.record.model_dump_json())
    body["extra"] = result.extra
    return json.dumps(body)


def _text(result: MatchResult) -> str:
    lines = [format_record(result.record)]
    for role, data in result.extra.get("players", {}).items():
        if "model_calls" in data:
            lines.append(
                f"  {role} {data['name']}: {data['model_calls']} model calls, "
                f"{data['output_tokens']} output tokens, {data['latency_s']:g} s in the model, "
                f"{data['invalid_tool_calls']} invalid and {data['refused_tool_calls']} refused "
                "tool calls"
            )
    for role, error in result.errors.items():
        lines.append(f"  error ({role}): {error}")
    return "\n".join(lines)

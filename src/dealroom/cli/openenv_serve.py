"""``dealroom openenv serve``: dealroom as an OpenEnv environment (needs
``pip install 'dealroom[openenv]'``), served by openenv-core's own app on uvicorn.

One WebSocket session (``/ws``, OpenEnv's ``EnvClient``) plays negotiations one after another
from the served seat against the served opponents; ``--max-sessions`` of them at once. The
flags build the served ``PlaySettings`` (``dealroom.harnesses.openenv_env.served_settings``):
episode ``seed=i`` plays job ``i`` of ``dealroom tournament --agents openenv,OPPONENTS
--learner openenv`` with the same tiers, role and secret.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dealroom.cli._common import (
    Commands,
    add_secret_flag,
    positive_int,
    report_fresh_secret,
    run_secret,
    tier_list,
    usage_error,
)
from dealroom.protocol import TIERS
from dealroom.protocol.model_seat import MAX_TOOL_ROUNDS

OPENENV_INSTALL = "pip install 'dealroom[openenv]'"


def add(commands: Commands) -> None:
    """Register ``openenv`` and its subcommand ``serve``."""
    parser = commands.add_parser(
        "openenv",
        help="serve negotiations as an OpenEnv environment (reset, step, /ws sessions)",
        description=f"dealroom as an OpenEnv environment (openenv-core 0.3; {OPENENV_INSTALL}).",
    )
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    serve = actions.add_parser(
        "serve",
        help="serve the environment with OpenEnv's app (its EnvClient connects to /ws)",
        description="Serve one seat against the opponents: each reset opens a negotiation "
        "(seed i: job i of the tournament with --learner openenv), each step is one tool call.",
    )
    serve.add_argument(
        "--role",
        choices=["buyer", "seller", "both"],
        default="buyer",
        help="the client's seat (both: the seeds alternate as the tournament's jobs do; a "
        "reset's role argument pins it) (default: buyer)",
    )
    serve.add_argument(
        "--opponent",
        default="boulware",
        help="comma-separated agent specs in the other seat (scripted specs or llm:MODEL with "
        "$OPENAI_BASE_URL and $OPENAI_API_KEY) (default: boulware)",
    )
    serve.add_argument(
        "--tiers", type=tier_list, default=list(TIERS), help="comma-separated (default: all)"
    )
    add_secret_flag(serve, public=True)
    serve.add_argument(
        "--max-tool-rounds",
        type=positive_int,
        default=MAX_TOOL_ROUNDS,
        help=f"tool calls run per negotiation; the next step ends the seat's play "
        f"(default: {MAX_TOOL_ROUNDS})",
    )
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    serve.add_argument(
        "--max-sessions",
        type=positive_int,
        default=16,
        help="WebSocket sessions at once (default: 16)",
    )
    serve.add_argument(
        "--out",
        type=Path,
        help="results store (SQLite) for every finished negotiation, under run 'openenv' and "
        "the tournament's job keys, for dealroom report",
    )
    serve.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    try:
        import uvicorn

        from dealroom.harnesses import openenv_env
    except ImportError as exc:
        raise usage_error(f"the OpenEnv environment needs openenv-core: {OPENENV_INSTALL}") from exc
    from dealroom.play.registry import AgentSpecError
    from dealroom.store.results import ResultsStore

    opponents = tuple(spec.strip() for spec in str(args.opponent).split(",") if spec.strip())
    if not opponents:
        raise usage_error("--opponent: give at least one agent spec")
    secret, given = run_secret(args, public=True)
    settings = openenv_env.served_settings(
        opponents=opponents,
        role=None if args.role == "both" else args.role,
        tiers=tuple(args.tiers),
        secret=secret,
        max_tool_rounds=args.max_tool_rounds,
    )
    store = ResultsStore(args.out) if args.out is not None else None
    try:
        sink = openenv_env.store_sink(store) if store is not None else None
        try:
            app = openenv_env.create_bargain_app(
                settings, sink=sink, max_sessions=args.max_sessions
            )
        except (AgentSpecError, ValueError) as exc:
            raise usage_error(str(exc)) from None
        report_fresh_secret(secret, given)
        sys.stderr.write(
            f"dealroom: OpenEnv environment at http://{args.host}:{args.port} "
            f"(sessions at ws://{args.host}:{args.port}/ws, at most {args.max_sessions})\n"
        )
        config: Any = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning")
        uvicorn.Server(config).run()
    finally:
        if store is not None:
            store.close()
    return 0

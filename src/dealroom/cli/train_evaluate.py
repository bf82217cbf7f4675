"""``dealroom train evaluate``: a served checkpoint against fixed opponents, as a tournament.

The checkpoint is a roster entry (its endpoint, model id and sampling) and plays the one model
seat, the conversation it was trained on (docs/design.md, section 10), in ``--role`` against
each opponent: ``dealroom tournament --learner NAME --learner-role ROLE`` with the same
concurrency, progress line, budget-free resume (refused when the seed, the role, the model or
its sampling changed) and stored usage, so ``dealroom report`` shows it in its Models table.
Opponents are scripted specs or entries of ``--models``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from dealroom.cli._common import Commands, positive_int, tier_list, usage_error
from dealroom.protocol.model_seat import MAX_TOOL_ROUNDS

KEY_ENV = "DEALROOM_EVALUATE_API_KEY"
"""Where ``--api-key`` is handed to the roster entry (entries read keys from variables)."""


def add(stages: Commands) -> None:
    """Register ``train evaluate``."""
    evaluate = stages.add_parser(
        "evaluate",
        help="play a served checkpoint against fixed opponents (a tournament with one learner)",
        description="The model behind --base-url plays --role against each opponent on "
        "scenarios it was not trained on (--scenario-seed, default 1), on the one model seat's "
        "conversation (the one it was trained on). A tournament with one learner: each "
        "negotiation is stored as it ends, with the model's usage and conversation; --resume "
        "continues a run of the same configuration; dealroom report ranks the run.",
    )
    evaluate.add_argument("--model", required=True, help="the model id the endpoint serves")
    evaluate.add_argument("--base-url", required=True, help="its OpenAI-compatible endpoint")
    evaluate.add_argument("--api-key", help="its key (default: $OPENAI_API_KEY, else none)")
    evaluate.add_argument("--name", help="the model's name in the report (default: --model)")
    evaluate.add_argument(
        "--opponents",
        type=_names,
        required=True,
        help="comma-separated: scripted specs, or names of --models entries",
    )
    evaluate.add_argument(
        "--models", type=Path, metavar="FILE.toml", help="roster of LLM opponents"
    )
    evaluate.add_argument("--role", choices=["buyer", "seller"], default="buyer")
    evaluate.add_argument("--tiers", type=tier_list, default=["mid"], help="default: mid")
    evaluate.add_argument("--scenarios", type=positive_int, default=20, help="per opponent, tier")
    evaluate.add_argument("--scenario-seed", type=int, default=1)
    evaluate.add_argument(
        "--max-tool-calling-iterations",
        type=positive_int,
        default=MAX_TOOL_ROUNDS,
        help="replies whose tool calls are made per negotiation, as in train grpo "
        "(default: %(default)s)",
    )
    evaluate.add_argument("--temperature", type=float, default=0.0)
    evaluate.add_argument("--max-tokens", type=positive_int)
    evaluate.add_argument(
        "--concurrency",
        type=positive_int,
        default=1,
        help="negotiations in flight on the model's endpoint (default: 1, as train serve "
        "computes one request at a time)",
    )
    evaluate.add_argument("--out", type=Path, required=True, help="results store (created)")
    evaluate.add_argument("--run", default="evaluate", help="run name in the store")
    evaluate.add_argument("--resume", action="store_true", help="continue the stored run")
    evaluate.set_defaults(handler=run)


def _names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("no opponent given")
    return names


def run(args: argparse.Namespace) -> int:
    """Build the learner's roster entry and run the tournament."""
    from dealroom.agents.roster import RosterEntry
    from dealroom.cli import tournament
    from dealroom.cli._players import MODEL_ATTEMPTS, MODEL_BACKOFF_S, MODEL_TIMEOUT_S

    if not args.base_url.startswith(("http://", "https://")):
        raise usage_error(f"--base-url {args.base_url!r} is not an http(s) URL")
    name = args.name or args.model
    if name in args.opponents:
        raise usage_error(f"the model's name {name!r} is also an opponent (--name)")
    key_env = ""
    if args.api_key:
        os.environ[KEY_ENV] = args.api_key
        key_env = KEY_ENV
    elif os.environ.get("OPENAI_API_KEY"):
        key_env = "OPENAI_API_KEY"
    try:
        learner = RosterEntry(
            name=name,
            model=args.model,
            endpoint=args.base_url,
            key_env=key_env,
            temperature=args.temperature,
            max_tokens=args.max_tokens,
            concurrency=args.concurrency,
        )
    except ValueError as exc:
        raise usage_error(f"the model's entry: {exc}") from None
    settings: dict[str, Any] = {
        "agents": [name, *args.opponents],
        "tiers": args.tiers,
        "per_pair": args.scenarios,
        "secret": args.scenario_seed,
        "out": args.out,
        "run": args.run,
        "concurrency": 1,
        "llm_concurrency": max(args.concurrency, 1) * 4,
        "resume": args.resume,
        "self_play": False,
        "backend": "local",
        "ray_address": None,
        "models": args.models,
        "max_cost": None,
        "max_calls": None,
        "learner": name,
        "learner_role": args.role,
        "extra_entries": [learner],
        "base_url": None,
        "max_tool_rounds": args.max_tool_calling_iterations,
        "model_timeout": MODEL_TIMEOUT_S,
        "model_attempts": MODEL_ATTEMPTS,
        "model_backoff": MODEL_BACKOFF_S,
        "trace": False,
        "elicit_beliefs": False,
    }
    return tournament.run(argparse.Namespace(**settings))

"""``dealroom train evaluate``: a served checkpoint against fixed opponents, as a tournament.

The checkpoint is a roster entry (its endpoint, model id and sampling) and plays the one model
seat, the conversation it was trained on (docs/design.md, section 10), in ``--role`` against
each opponent: ``dealroom tournament --learner NAME --learner-role ROLE`` with the same
concurrency, progress line, budget-free resume (refused when the seed, the role, the model or
its sampling changed) and stored usage, so ``dealroom report`` shows it in its Models table.
Opponents are scripted specs or entries of ``--models``. With ``--buyers N --pools ...`` the
model is a market's seller instead, against pools of scripted buyers
(``dealroom.cli._evaluate_market``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from dealroom.cli._common import Commands, positive_int, tier_list, usage_error
from dealroom.cli._train_flags import thinking_flag
from dealroom.cli.match import market_size
from dealroom.play.settings import PlaySettings, RosterEntry, RunSettings, SeatSettings
from dealroom.protocol import Role
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
        "continues a run of the same configuration; dealroom report ranks the run. With "
        "--buyers N --pools ..., the model is a market's seller (as train grpo --buyers N "
        "trains it) against each pool of buyers on held-out markets: a market tournament, "
        "stored and resumed as dealroom markets, its report printed.",
    )
    evaluate.add_argument("--model", required=True, help="the model id the endpoint serves")
    evaluate.add_argument("--base-url", required=True, help="its OpenAI-compatible endpoint")
    evaluate.add_argument("--api-key", help="its key (default: $OPENAI_API_KEY, else none)")
    evaluate.add_argument("--name", help="the model's name in the report (default: --model)")
    evaluate.add_argument(
        "--opponents",
        type=_names,
        help="comma-separated: scripted specs, or names of --models entries (needed unless "
        "--buyers)",
    )
    evaluate.add_argument(
        "--buyers",
        type=market_size,
        help="evaluate a market seller: markets of N buyers, against each of --pools",
    )
    evaluate.add_argument(
        "--pools",
        help="with --buyers: comma-separated pools of scripted buyers, as dealroom markets "
        "--pools (a spec every buyer plays, or one spec per buyer joined by '+')",
    )
    evaluate.add_argument(
        "--models", type=Path, metavar="FILE.toml", help="roster of LLM opponents"
    )
    evaluate.add_argument(
        "--role",
        choices=["buyer", "seller"],
        help="the model's seat (default: buyer; a market's model is its seller)",
    )
    evaluate.add_argument("--tiers", type=tier_list, default=["mid"], help="default: mid")
    evaluate.add_argument(
        "--scenarios",
        type=positive_int,
        default=20,
        help="per opponent (or pool) and tier (default: %(default)s)",
    )
    evaluate.add_argument(
        "--scenario-seed",
        type=int,
        default=1,
        help="seed of the scenarios; train grpo's default is 0, so 1 holds them out (default: 1)",
    )
    evaluate.add_argument(
        "--max-tool-calling-iterations",
        type=positive_int,
        help="replies whose tool calls are made per negotiation, as in train grpo (default: "
        f"the horizon the endpoint lists with the model, as train serve does for a GRPO "
        f"checkpoint; else {MAX_TOOL_ROUNDS}); recorded with the run",
    )
    evaluate.add_argument(
        "--temperature", type=float, default=0.0, help="sampling temperature (default: 0)"
    )
    evaluate.add_argument(
        "--max-tokens", type=positive_int, help="most tokens per reply (default: the server's)"
    )
    evaluate.add_argument(
        "--concurrency",
        type=positive_int,
        default=1,
        help="negotiations in flight on the model's endpoint (default: 1, as train serve "
        "computes one request at a time)",
    )
    evaluate.add_argument(
        "--endpoint-wait",
        type=float,
        default=300.0,
        metavar="S",
        help="seconds to wait for the endpoint to answer (a server still loading its model) "
        "before giving up; an endpoint that serves another model id is refused at once "
        "(default: %(default)g)",
    )
    evaluate.add_argument("--out", type=Path, required=True, help="results store (created)")
    evaluate.add_argument("--run", default="evaluate", help="run name in the store")
    evaluate.add_argument("--resume", action="store_true", help="continue the stored run")
    thinking_flag(evaluate)
    evaluate.set_defaults(handler=run)


def _names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("no opponent given")
    return names


def run(args: argparse.Namespace) -> int:
    """Build the learner's roster entry and run the tournament."""
    from dealroom.cli import _evaluate_market as market
    from dealroom.cli import tournament

    if not args.base_url.startswith(("http://", "https://")):
        raise usage_error(f"--base-url {args.base_url!r} is not an http(s) URL")
    if args.buyers is not None:
        market.check_flags(args)
    elif args.pools is not None:
        raise usage_error("--pools needs --buyers N (a market's seller is evaluated)")
    elif args.opponents is None:
        raise usage_error("give --opponents (or --buyers N and --pools for a market seller)")
    name = args.name or args.model
    if name in (args.opponents or ()):
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
            enable_thinking=args.enable_thinking,
            max_tokens=args.max_tokens,
            concurrency=args.concurrency,
        )
    except ValueError as exc:
        raise usage_error(f"the model's entry: {exc}") from None
    if args.buyers is not None:
        planned = market.market_plan(args, name)  # every other setting checked before the endpoint
        listed = _listed(args, key_env)
        limit = _limit(args, listed)
        return market.run(args, learner.model_copy(update={"max_tool_rounds": limit}), planned)
    role: Role = args.role or "buyer"
    play = PlaySettings(
        agents=(name, *args.opponents),
        roster=args.models,
        entries=(learner,),
        tiers=tuple(args.tiers),
        per_pair=args.scenarios,
        secret=args.scenario_seed,
        learner=name,
        learner_role=role,
    )
    run = RunSettings(
        out=args.out,
        run=args.run,
        resume=args.resume,
        concurrency=1,
        llm_concurrency=max(args.concurrency, 1) * 4,
    )
    listed = _wait_for_the_model(play, args, key_env)
    limit = _limit(args, listed)
    learner = learner.model_copy(update={"max_tool_rounds": limit})  # recorded with the run
    play = replace(play, entries=(learner,), seats=SeatSettings(max_tool_rounds=limit))
    status = tournament.run_tournament(play, run)
    sys.stderr.write(learner_line(args.out, args.run, name, role) + "\n")
    return status


def _limit(args: argparse.Namespace, listed: Mapping[str, object]) -> int:
    """The tool-calling limit, said on stderr with where it came from."""
    limit, why = _horizon(args.max_tool_calling_iterations, listed)
    game = "market" if args.buyers is not None else "negotiation"
    sys.stderr.write(f"dealroom: at most {limit} tool-calling turns per {game} ({why})\n")
    return limit


def learner_line(out: Path, run: str, name: str, role: Role) -> str:
    """The evaluated model's results in one line, reward hacking included: deals below its own
    value (IR violations), and how its plays ended early (turn limit, context full)."""
    from dealroom.analysis import metrics as m
    from dealroom.store.results import ResultsStore

    rows: list[m.SeatStats] = []
    limits = context = 0
    with ResultsStore(out, create=False) as store:
        for stored in store.iter(run):
            seat = next(s for s in m.seats_of(stored.record) if s.role == role)
            if seat.agent != name:
                continue
            rows.append(seat)
            data = stored.extra.get("players", {}).get(role, {})
            limits += data.get("ended_by") == "limit"
            context += data.get("ended_by") == "context"
    deals, share = m.deal_rate(rows), m.surplus_share(rows)
    return (
        f"dealroom: {name} as {role}: {len(rows):,} negotiations, deal rate "
        f"{'-' if deals is None else f'{deals:.0%}'}, surplus share "
        f"{'-' if share is None else f'{share:.3f}'}, {m.ir_violations(rows):,} IR violations "
        f"(deals below its own value), {limits:,} plays ended by the turn limit, {context:,} by "
        "a full context"
    )


def _horizon(given: int | None, listed: Mapping[str, object]) -> tuple[int, str]:
    """The evaluation's tool-calling limit and where it came from."""
    from dealroom.training.runlog import HORIZON_KEY

    if given is not None:
        return given, "--max-tool-calling-iterations"
    trained = listed.get(HORIZON_KEY)
    if isinstance(trained, int) and not isinstance(trained, bool) and trained >= 1:
        return trained, "the horizon the checkpoint was trained with"
    return MAX_TOOL_ROUNDS, "the default: the endpoint lists no training horizon"


def _wait_for_the_model(
    play: PlaySettings, args: argparse.Namespace, key_env: str
) -> dict[str, object]:
    """Every other setting checked first (without probing), then the endpoint must list the
    model id: a server still loading is waited for, one serving another model is refused."""
    from dealroom.agents.lineup import lineup
    from dealroom.agents.roster import RosterError
    from dealroom.play.registry import AgentSpecError

    try:
        lineup(play, probe=False)
    except (RosterError, AgentSpecError) as exc:
        raise usage_error(str(exc)) from None
    return _listed(args, key_env)


def _listed(args: argparse.Namespace, key_env: str) -> dict[str, object]:
    """The endpoint's entry for the model once it lists it (``wait_for_model``)."""
    from dealroom.agents.roster import RosterError, wait_for_model

    if not 0 <= args.endpoint_wait <= 86_400:
        raise usage_error(f"--endpoint-wait must be in [0, 86400], not {args.endpoint_wait:g}")
    try:
        key = os.environ.get(key_env) if key_env else None
        return wait_for_model(args.base_url, key, args.model, wait_s=args.endpoint_wait)
    except RosterError as exc:
        raise usage_error(str(exc)) from None

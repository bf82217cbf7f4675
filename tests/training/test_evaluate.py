"""TRL's rollout loop as a function, and ``dealroom train evaluate`` (a tournament with one
learner).

The model here is a script: it writes the tool calls of a scripted agent's SFT row (the same
negotiation replayed), so the rollout's conversation can be compared with the SFT row and its
record with the scripted match. The CLI runs against the loopback endpoint of
tests/fake_openai.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from dealroom.cli import main
from dealroom.engine.match import play
from dealroom.play.registry import resolve
from dealroom.protocol.generator import scenario_at
from dealroom.store.results import ResultsStore
from dealroom.training.evaluate import Completion, rollout
from dealroom.training.sft import conversation_example, sft_example
from dealroom.training.trl import BargainToolEnv
from fake_openai import Text, ToolCalls, scripted, serve


def _scripted_row(index: int, seed: int = 1) -> tuple[Any, dict[str, Any]]:
    record = play(
        scenario_at(seed, index, "mid"),
        resolve("linear"),
        resolve("boulware"),
        seed=seed,
        names=("linear", "boulware"),
    )
    row = sft_example(record, "buyer", seed=seed)
    assert row is not None
    return record, row


class RowModel:
    """Writes the assistant turns of an SFT row in order, then answers in text."""

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.turns = [m for m in row["messages"] if m["role"] == "assistant"]
        self.seen: list[list[dict[str, Any]]] = []

    def __call__(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[Mapping[str, Any]]
    ) -> Completion:
        del tools
        self.seen.append([dict(m) for m in messages])
        if not self.turns:
            return Completion(content="Done.")
        turn = self.turns.pop(0)
        calls = tuple(
            (c["function"]["name"], dict(c["function"]["arguments"])) for c in turn["tool_calls"]
        )
        return Completion(content="", tool_calls=calls, input_tokens=10, output_tokens=3)


def _without_ids(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        kept = {k: v for k, v in message.items() if k != "tool_call_id"}
        if "tool_calls" in kept:
            kept["tool_calls"] = [
                {k: v for k, v in c.items() if k != "id"} for c in kept["tool_calls"]
            ]
        out.append(kept)
    return out


def test_a_rollout_is_the_sft_row_of_the_same_negotiation() -> None:
    record, row = _scripted_row(2)
    env = BargainToolEnv(opponent="boulware", seed=1)
    out = rollout(env, RowModel(row), {"index": 2, "seed": 1}, names=("linear", "boulware"))
    assert out.tools == row["tools"]
    # The model's last reply can only come while the negotiation is open: a scripted row ends
    # with the call that closed it, and the loop stops there.
    assert _without_ids(out.messages) == _without_ids(row["messages"])
    assert out.record.events == record.events
    assert out.record.outcome == record.outcome
    assert out.calls == len([m for m in row["messages"] if m["role"] == "assistant"])


def test_every_model_call_reads_the_conversation_so_far() -> None:
    _, row = _scripted_row(4)
    model = RowModel(row)
    out = rollout(BargainToolEnv(seed=1), model, {"index": 4, "seed": 1}, names=("m", "boulware"))
    for n, seen in enumerate(model.seen):
        assert seen == out.messages[: len(seen)]
        assert seen[-1]["role"] == ("user" if n == 0 else "tool")


def test_failing_calls_read_as_trl_writes_them_and_change_nothing() -> None:
    replies = iter(
        [
            Completion("", (("shout", {}),)),
            Completion("", (("make_offer", {"prize": 5}),)),
            Completion("", (("make_offer", "not json"),)),
            Completion("I give up."),
        ]
    )
    env = BargainToolEnv(seed=1)
    out = rollout(env, lambda m, t: next(replies), {"index": 0, "seed": 1}, names=("m", "o"))
    texts = [m["content"] for m in out.messages if m["role"] == "tool"]
    assert texts[0] == "{'error': 'Tool shout not found.'}"
    assert texts[1].startswith("{'error': ") and "prize" in texts[1]
    assert texts[2] == "{'error': \"arguments are not a JSON object: 'not json'\"}"
    assert out.tool_errors == 3
    assert not [e for e in out.record.events if e.by == "buyer" and e.type == "offer"]


def test_the_loop_stops_at_the_iteration_limit() -> None:
    forever = Completion("", (("get_state", {}),))
    out = rollout(
        BargainToolEnv(seed=1),
        lambda m, t: forever,
        {"index": 0},
        names=("m", "o"),
        max_iterations=3,
    )
    assert out.calls == 4 and out.iterations_hit
    assert len([m for m in out.messages if m["role"] == "tool"]) == 3
    assert out.record.outcome is not None  # played out with the seat silent


def test_cli_evaluate_is_a_tournament_of_one_learner_that_resumes_only_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "eval.db"
    brain = scripted(
        [ToolCalls((("make_offer", {"price": 1500.0}),))],  # pyright: ignore[reportArgumentType]
        then=Text("Done."),
    )
    with serve(brain) as fake:
        argv = [
            "train", "evaluate", "--model", "fake", "--base-url", fake.base_url,
            "--name", "trained", "--opponents", "boulware,linear", "--scenarios", "2",
            "--out", str(db),
        ]  # fmt: skip
        assert main(argv) == 0
        assert "4 negotiations in" in capsys.readouterr().err
        assert main([*argv, "--resume"]) == 0  # nothing left to play
        assert main([*argv, "--resume", "--temperature", "0.7"]) == 2
        assert "different configuration" in capsys.readouterr().err
        assert main([*argv, "--resume", "--role", "seller"]) == 2
    with ResultsStore(db) as store:
        rows = list(store.iter("evaluate"))
        assert (store.run_config("evaluate") or {}).get("learner_role") == "buyer"
    assert {(r.record.buyer, r.record.seller) for r in rows} == {
        ("trained", "boulware"),
        ("trained", "linear"),
    }
    stored = rows[0].extra["players"]["buyer"]
    assert stored["model_calls"] == 2 and stored["name"] == "trained"
    example = conversation_example(rows[0].record, "buyer", stored["conversation"])
    assert example is not None and [m["role"] for m in example["messages"][:2]] == [
        "user",
        "assistant",
    ]
    assert main(["report", str(db), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "trained" in json.dumps(report)


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--opponents", "nobody", "unknown agent"),
        ("--base-url", "ftp://x", "not an http(s) URL"),
        ("--tiers", "huge", "unknown tier"),
    ],
)
def test_cli_evaluate_refuses_bad_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, message: str
) -> None:
    argv = {
        "--model": "m",
        "--base-url": "http://127.0.0.1:9/v1",
        "--opponents": "boulware",
        "--out": str(tmp_path / "e.db"),
    }
    argv[flag] = value
    assert main(["train", "evaluate", *[x for pair in argv.items() for x in pair]]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "e.db").exists()


def test_evaluate_refuses_an_endpoint_that_serves_another_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another OpenAI-compatible server on the port: nothing is played or stored under the
    model's name (the endpoint lists 'fake', not 'trained')."""
    db = tmp_path / "eval.db"
    with serve(scripted([], then=Text("Done."))) as fake:
        argv = [
            "train", "evaluate", "--model", "trained", "--base-url", fake.base_url,
            "--opponents", "boulware", "--scenarios", "1", "--out", str(db),
        ]  # fmt: skip
        assert main(argv) == 2
        assert not fake.requests
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "serves 'fake', not 'trained'" in err
    assert not db.exists()


def test_evaluate_waits_for_an_endpoint_still_loading_then_gives_up_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from dealroom.agents.roster import RosterError, wait_for_model

    now = [0.0]
    naps: list[float] = []

    def sleep(seconds: float) -> None:
        naps.append(seconds)
        now[0] += seconds

    with pytest.raises(RosterError, match=r"unreachable .*\(waited 5 s\)"):
        wait_for_model(
            "http://127.0.0.1:9/v1", None, "m", wait_s=5, clock=lambda: now[0], sleep=sleep
        )
    assert naps == [1.0] * 5
    argv = [
        "train", "evaluate", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
        "--opponents", "boulware", "--endpoint-wait", "0", "--out", str(tmp_path / "e.db"),
    ]  # fmt: skip
    assert main(argv) == 2
    assert "unreachable" in capsys.readouterr().err


class Looker:
    """A served checkpoint (``train serve``'s HTTP side) that only ever calls get_state, as
    the documented GRPO checkpoint never ended its turn; ``horizon`` as ``ChatModel`` reads it
    from the checkpoint's training record."""

    name = "trained"

    def __init__(self, horizon: int | None) -> None:
        self.horizon = horizon
        self.requests = 0

    def complete(self, body: Mapping[str, Any], cancelled: Any = None) -> dict[str, Any]:
        del body, cancelled
        self.requests += 1
        call = {"id": "c", "type": "function", "function": {"name": "get_state", "arguments": "{}"}}
        message = {"role": "assistant", "content": "", "tool_calls": [call]}
        return {
            "id": "x",
            "object": "chat.completion",
            "model": self.name,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }


@pytest.mark.parametrize(
    ("horizon", "flag", "limit", "says"),
    [
        (2, [], 2, "the horizon the checkpoint was trained with"),
        (2, ["--max-tool-calling-iterations", "3"], 3, "--max-tool-calling-iterations"),
        (None, [], 100, "the default: the endpoint lists no training horizon"),
    ],
)
def test_evaluate_defaults_to_the_training_horizon_and_records_it(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    horizon: int | None,
    flag: list[str],
    limit: int,
    says: str,
) -> None:
    """A checkpoint that never ends its turn gets the horizon it was trained with (two
    tool-calling turns, then its play ends), not 100 re-prefilled turns; the limit is recorded
    with the run, so a resume under another one is refused."""
    from dealroom.training.serving import serve as serve_model

    db = tmp_path / "eval.db"
    model = Looker(horizon)
    with serve_model(model) as endpoint:  # pyright: ignore[reportArgumentType]
        argv = [
            "train", "evaluate", "--model", "trained", "--base-url", endpoint.base_url,
            "--opponents", "boulware", "--scenarios", "1", "--out", str(db), *flag,
        ]  # fmt: skip
        assert main(argv) == 0
        err = capsys.readouterr().err
        assert f"at most {limit} tool-calling turns per negotiation ({says}" in err
        with ResultsStore(db) as store:
            (stored,) = store.iter("evaluate")
            config = store.run_config("evaluate") or {}
        seat = stored.extra["players"]["buyer"]
        assert (seat["tool_rounds"], seat["model_calls"]) == (limit, limit + 1)
        assert seat["ended_by"] == "limit" and model.requests == limit + 1
        assert config["entries"]["trained"]["max_tool_rounds"] == limit
        other = ["--max-tool-calling-iterations", str(limit + 1)]
        assert main([*argv[: len(argv) - len(flag)], *other, "--resume"]) == 2
        assert "different configuration" in capsys.readouterr().err


def test_evaluate_ends_with_the_models_line_and_counts_deals_below_its_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reward hacking shows where the evaluation ends: a model that buys at any price (an
    offer far above its value, which the seller takes) is reported with its IR violations."""
    value = float(scenario_at(1, 0, "mid").buyer_value)
    brain = scripted(
        [ToolCalls((("make_offer", {"price": round(value * 1.5, 2)}),))],  # pyright: ignore[reportArgumentType]
        then=Text("Done."),
    )
    with serve(brain) as fake:
        argv = [
            "train", "evaluate", "--model", "fake", "--base-url", fake.base_url,
            "--name", "trained", "--opponents", "boulware", "--scenarios", "1",
            "--out", str(tmp_path / "e.db"),
        ]  # fmt: skip
        assert main(argv) == 0
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("dealroom: trained as buyer: 1 negotiations, deal rate 100%")
    assert re.search(r"surplus share -\d\.\d{3},", last), last  # it lost money
    assert "1 IR violations (deals below its own value)" in last
    assert "0 plays ended by the turn limit, 0 by a full context" in last

"""``--elicit-beliefs``: LLM seats are asked for their belief after the end; play is unchanged.

The model is ``tests/fake_openai.py``'s negotiator on loopback, which answers the belief
question with a fixed estimate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dealroom.cli import main
from dealroom.protocol import model_seat, other
from dealroom.store.results import ResultsStore
from fake_openai import Reply, Text, negotiator, serve
from room_server import share_schema_validators

QUESTION = model_seat.belief_question("buyer").split("?")[0][:40]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def believer(request: dict[str, Any]) -> Reply:
    """The negotiator, which answers the belief question with 500 in [400, 700], in words
    around the JSON as models write it."""
    last = request["messages"][-1]
    if last["role"] == "user" and str(last["content"]).startswith(QUESTION):
        return Text('I think so: ```json\n{"estimate": 500, "low": 400, "high": 700}\n```')
    return negotiator(accept_from_wake=3)(request)


def play(tmp_path: Path, name: str, *flags: str) -> tuple[Path, list[dict[str, Any]]]:
    out = tmp_path / f"{name}.db"
    argv = ["tournament", "--agents", "llm:m,boulware", "--per-pair", "3", "--tiers", "low"]
    argv += ["--secret", "5e" * 32]
    with serve(believer) as fake:
        assert main([*argv, "--base-url", fake.base_url, "--out", str(out), *flags]) == 0
        return out, list(fake.requests)


def test_beliefs_are_asked_after_the_end_stored_and_reported_and_change_no_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain, plain_requests = play(tmp_path, "plain")
    asked, asked_requests = play(tmp_path, "asked", "--elicit-beliefs")
    with ResultsStore(plain) as a, ResultsStore(asked) as b:
        before = {row.key: row for row in a.iter()}
        after = {row.key: row for row in b.iter()}
    assert set(before) == set(after)
    for key, row in before.items():  # the same negotiations, event for event
        assert row.record.model_dump_json() == after[key].record.model_dump_json()

    def questions(requests: list[dict[str, Any]]) -> int:
        return sum(str(r["messages"][-1]["content"]).startswith(QUESTION) for r in requests)

    assert questions(plain_requests) == 0
    seats = [(row, role) for row in after.values() for role in row.extra.get("players", {})]
    assert questions(asked_requests) == len(seats) == 6  # llm:m in 3 x 2 negotiations
    errors: list[float] = []
    for row, role in seats:
        belief = row.extra["players"][role]["belief"]
        assert (belief["estimate"], belief["low"], belief["high"]) == (500, 400, 700)
        assert "reply" in belief
        assert "belief" not in before[row.key].extra["players"][role]
        s = row.record.scenario
        truth = float(s.private_value(other(role)))
        errors.append(abs(500 - truth) / float(s.list_price))

    capsys.readouterr()
    assert main(["report", str(asked), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    rows = [r for r in report["diagnostics"] if r["agent"] == "llm:m"]
    n = sum(r["belief_error"]["n"] for r in rows)
    mean = sum(r["belief_error"]["value"] * r["belief_error"]["n"] for r in rows) / n
    assert n == 6 and mean == pytest.approx(sum(errors) / len(errors))
    assert main(["report", str(asked)]) == 0
    assert "Beliefs about the other side" in capsys.readouterr().out
    assert main(["report", str(plain)]) == 0
    assert "Beliefs about the other side" not in capsys.readouterr().out


def test_a_reply_without_a_belief_is_stored_as_unparsed() -> None:
    assert model_seat.parse_belief("I'd say about 500, give or take.") is None
    assert model_seat.parse_belief('{"estimate": 5, "low": 4}') is None
    assert model_seat.parse_belief('{"estimate": true, "low": 4, "high": 6}') is None
    assert model_seat.parse_belief('x {"estimate": 5, "low": 4, "high": 6.5} y') == {
        "estimate": 5.0,
        "low": 4.0,
        "high": 6.5,
    }


def test_the_question_names_the_other_sides_number_only() -> None:
    assert "seller's private cost" in model_seat.belief_question("buyer")
    assert "buyer's private value" in model_seat.belief_question("seller")


@pytest.mark.parametrize(
    "reply",
    [
        '{"estimate": ' + "9" * 400 + ', "low": 1, "high": 2}',  # once an OverflowError
        '{"estimate": -5, "low": 1e308, "high": -1e308}',  # once coverage 1.000
        '{"estimate": 10, "low": 1, "high": 5}',  # an interval that misses its estimate
        '{"estimate": 5, "low": 6, "high": 4}',
    ],
)
def test_only_finite_numbers_with_low_estimate_high_in_order_are_a_belief(reply: str) -> None:
    assert model_seat.parse_belief(reply) is None
    assert model_seat.belief_numbers(json.loads(reply)) is None


def test_a_stored_belief_out_of_order_is_not_scored() -> None:
    from dealroom.analysis.diagnostics import belief_of
    from dealroom.engine.match import play
    from dealroom.play.registry import resolve
    from dealroom.protocol.generator import scenario_at

    record = play(scenario_at(1, 0, "mid"), resolve("linear"), resolve("conceder"), seed=1)
    assert belief_of(record, "buyer", {"estimate": -5, "low": 1e308, "high": -1e308}) is None
    assert belief_of(record, "buyer", {"estimate": 10**400, "low": 1, "high": 2}) is None
    held = belief_of(record, "buyer", {"estimate": 5, "low": 4, "high": 6})
    assert held is not None and (held.low, held.estimate, held.high) == (4, 5, 6)

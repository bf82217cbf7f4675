"""``dealroom match --buyers N --seller llm:MODEL``: a model sells to scripted buyers, on the
loopback OpenAI-compatible endpoint of ``tests/fake_openai.py`` (nothing leaves the machine)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dealroom.cli import main
from dealroom.protocol.market_referee import MarketRecord
from fake_openai import Status, market_seller, serve

S = "b1d3eb8f32936fa9cf89d2240bd10734"
FAST = ["--model-timeout", "1", "--model-attempts", "2", "--model-backoff", "0.01"]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def market(base_url: str, *extra: str) -> list[str]:
    return [
        "match", "--buyers", "3", "--seller", "llm:fake", "--buyer", "linear",
        "--base-url", base_url, "--secret", S, *FAST, *extra,
    ]  # fmt: skip


def test_a_model_seller_sells_and_the_market_prints_like_a_scripted_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with serve(market_seller()) as fake:
        code = main(market(fake.base_url))
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("Market mid-m3-") and lines[0].endswith("3 buyers")
    assert lines[1].startswith("  seller llm:fake: cost $")
    assert sum("| seller offered" in line for line in lines) == 3
    assert any(line.startswith("Outcome: sold to b") for line in lines)
    assert lines[-1] == (
        "  seller llm:fake: 7 model calls, 49 output tokens, "
        f"{lines[-1].split(', ')[2].split(' s ')[0]} s in the model, 0 invalid and 0 refused "
        "tool calls"
    )


def test_the_json_holds_the_record_and_the_sellers_conversation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bodies: list[dict[str, Any]] = []
    for _ in range(2):
        with serve(market_seller()) as fake:
            assert main(market(fake.base_url, "--json")) == 0
        bodies.append(json.loads(capsys.readouterr().out))
    extra = bodies[0].pop("extra")["seller"]
    bodies[1].pop("extra")
    assert bodies[0] == bodies[1]  # the same replies, the same record for a secret
    record = MarketRecord.model_validate(bodies[0])
    assert record.outcome.status == "deal"
    assert extra["conversation"]["messages"][0]["content"].startswith(
        "You are the seller in a one-item market with 3 buyers: b1, b2, b3."
    )


def test_a_failing_model_walks_the_seller_out_of_the_market(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with serve(lambda request: Status(400)) as fake:
        code = main(market(fake.base_url))
    out, _ = capsys.readouterr()
    assert code == 1
    assert "Outcome: no sale (walk_away)" in out
    assert out.splitlines()[-1].startswith("  error (seller): model call failed after 1 attempt")

"""``dealroom match --buyers N --seller SELLER --buyer llm:MODEL``: models buy in a market from a
scripted seller, on the loopback OpenAI-compatible endpoint of ``tests/fake_openai.py``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dealroom.cli import main
from dealroom.protocol.market_referee import MarketRecord
from fake_openai import Status, market_buyer, market_seats, serve

S = "b1d3eb8f32936fa9cf89d2240bd10734"
FAST = ["--model-timeout", "1", "--model-attempts", "2", "--model-backoff", "0.01"]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "k")


def market(base_url: str, buyers: str, *extra: str) -> list[str]:
    return [
        "match", "--buyers", "3", "--seller", "auctioneer", "--buyer", buyers,
        "--base-url", base_url, "--secret", S, *FAST, *extra,
    ]  # fmt: skip


def test_model_buyers_print_the_market_and_each_model_seats_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with serve(market_buyer()) as fake:
        code = main(market(fake.base_url, "llm:fake,linear,llm:fake"))
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("Market mid-m3-") and lines[0].endswith("3 buyers")
    assert lines[2].startswith("  buyer b1 llm:fake: value $")
    assert lines[3].startswith("  buyer b2 linear: value $")
    assert [line.split(":")[0] for line in lines[-2:]] == ["  buyer b1 llm", "  buyer b3 llm"]
    assert lines[-1].endswith(" s in the model, 0 invalid and 0 refused tool calls")


def test_the_json_holds_the_record_and_each_model_buyers_data_by_seat(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bodies: list[dict[str, Any]] = []
    for _ in range(2):
        with serve(market_buyer()) as fake:
            assert main(market(fake.base_url, "llm:fake", "--json")) == 0
        bodies.append(json.loads(capsys.readouterr().out))
    extra = bodies[0].pop("extra")
    bodies[1].pop("extra")
    assert bodies[0] == bodies[1]  # the same replies, the same record for a secret
    record = MarketRecord.model_validate(bodies[0])
    assert record.buyers == ("llm:fake",) * 3
    assert list(extra) == ["b1", "b2", "b3"]
    for data in extra.values():
        assert data["name"] == "llm:fake" and data["model_calls"] >= 2
        assert data["conversation"]["messages"][0]["content"].startswith(
            "You are the buyer in a one-item negotiation."
        )


def test_a_model_seller_and_model_buyers_play_one_market(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with serve(market_seats()) as fake:
        arguments = market(fake.base_url, "llm:fake,linear,llm:fake", "--json")
        arguments[arguments.index("auctioneer")] = "llm:fake"
        assert main(arguments) == 0
    body = json.loads(capsys.readouterr().out)
    extra = body.pop("extra")
    record = MarketRecord.model_validate(body)
    assert (record.seller, record.buyers) == ("llm:fake", ("llm:fake", "linear", "llm:fake"))
    assert list(extra) == ["seller", "b1", "b3"]
    assert extra["seller"]["conversation"]["messages"][0]["content"].startswith(
        "You are the seller in a one-item market with 3 buyers: b1, b2, b3."
    )


def test_a_failing_model_buyer_walks_away_and_the_run_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with serve(lambda request: Status(400)) as fake:
        code = main(market(fake.base_url, "linear,llm:fake,boulware"))
    out, _ = capsys.readouterr()
    assert code == 1
    assert "b2 | buyer walked away" in out
    assert out.splitlines()[-1].startswith("  error (b2): model call failed after 1 attempt")


@pytest.mark.parametrize(
    ("buyers", "error"),
    [
        (
            "llm:m,linear,human",
            "agent 'human' plays through a seat (not a scripted strategy): it cannot play here",
        ),
        ("linear,llm:,linear", "agent 'llm' needs MODEL: llm:..."),
        ("llm:m,linear", "--buyer: one spec, or 3 (one per buyer); got 2"),
    ],
)
def test_bad_model_buyers_are_one_line_usage_errors(
    buyers: str, error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["match", "--buyers", "3", "--seller", "auctioneer", "--buyer", buyers])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == f"dealroom: error: {error}\n"

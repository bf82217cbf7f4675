"""``dealroom match --buyers N``: a market of scripted agents, run in-process."""

from __future__ import annotations

import pytest

from dealroom.cli import main
from dealroom.protocol.market_referee import MarketRecord
from dealroom.protocol.market_scenarios import market_at
from dealroom.protocol.secret import Secret

S = "b1d3eb8f32936fa9cf89d2240bd10734"
MARKET = ["match", "--buyers", "3", "--seller", "auctioneer", "--buyer", "linear", "--secret", S]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_market_prints_its_threads_outcome_and_measures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, *MARKET)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("Market mid-m3-") and lines[0].endswith("3 buyers")
    assert [line.split(":")[0] for line in lines[2:5]] == [
        f"  buyer b{i} linear" for i in (1, 2, 3)
    ]
    assert any("| seller offered" in line for line in lines)
    assert sum("sold_elsewhere" in line for line in lines) == 2
    assert any(line.startswith("Outcome: sold to b") for line in lines)
    assert lines[-1].startswith("  market: buyers probed before the first concession 3")


def test_a_market_json_is_the_same_for_a_secret(capsys: pytest.CaptureFixture[str]) -> None:
    first = run(capsys, *MARKET, "--json")
    assert first == run(capsys, *MARKET, "--json")
    record = MarketRecord.model_validate_json(first[1])
    assert record.scenario == market_at(Secret.from_hex(S), 0, "mid", 3)
    assert (record.seller, record.buyers) == ("auctioneer", ("linear",) * 3)


def test_one_buyer_spec_each(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, *MARKET[:-4], "--buyer", "boulware,conceder,zic", "--secret", S, "--json"
    )
    assert code == 0
    assert MarketRecord.model_validate_json(out).buyers == ("boulware", "conceder", "zic")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--buyers", "17"], "at most 16 buyers"),
        (["--buyers", "0"], "must be at least 1"),
        (["--buyer", "linear,boulware"], "one spec, or 3 (one per buyer); got 2"),
        (["--seller", "auction"], "unknown agent 'auction'"),
        (["--seller", "auctioneer:x=1"], "has no parameter 'x'"),
        (["--buyer", "human"], "plays through a seat"),
        (["--clock", "wall"], "markets play on the virtual clock"),
    ],
)
def test_bad_market_flags_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    try:
        code = main([*MARKET, *argv])
    except SystemExit as exited:  # argparse's own checks
        code = exited.code
    _, err = capsys.readouterr()
    assert code == 2
    assert message in err and err.count("\n") <= 2 and "Traceback" not in err

"""``dealroom export-sft``: JSONL transcripts from a results store, with filters."""

import json
from pathlib import Path

import pytest

from dealroom.agents import resolve
from dealroom.cli import main
from dealroom.engine.match import play
from dealroom.protocol import OfferMade
from dealroom.protocol.generator import scenario_at
from dealroom.store.results import ResultsStore

PAIRINGS = [("conceder", "boulware"), ("linear", "boulware"), ("hardliner", "boulware")]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sft") / "results.db"
    with ResultsStore(path) as db:
        for buyer, seller in PAIRINGS:
            for index in range(4):
                record = play(
                    scenario_at(0, index, "mid"),
                    resolve(buyer),
                    resolve(seller),
                    names=(buyer, seller),
                )
                db.add(f"r/{buyer}-{seller}/{index}", record, run="r")
    return path


def export(store: Path, tmp_path: Path, *flags: str) -> list[dict]:
    out = tmp_path / "out.jsonl"
    assert main(["export-sft", str(store), "--out", str(out), *flags]) == 0
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_every_line_is_one_seats_transcript_in_the_messages_format(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = export(store, tmp_path)
    assert len(lines) == 2 * len(PAIRINGS) * 4  # both seats of every negotiation
    assert f"wrote {len(lines)} transcripts" in capsys.readouterr().err
    for line in lines:
        assert set(line) == {"messages", "tools", "metadata"}
        roles = [m["role"] for m in line["messages"]]
        assert roles[0] == "user" and line["messages"][0]["content"].startswith("You are the ")
        assert roles[1:] == ["assistant", "tool"] * (len(roles) // 2)
        for call, result in zip(line["messages"][1::2], line["messages"][2::2], strict=True):
            (tool_call,) = call["tool_calls"]
            assert isinstance(tool_call["function"]["arguments"], dict)
            assert result["tool_call_id"] == tool_call["id"]


def test_json_arguments_flag_writes_arguments_as_strings(store: Path, tmp_path: Path) -> None:
    for line in export(store, tmp_path, "--json-arguments", "--agent", "linear"):
        for call in line["messages"][1::2]:
            assert isinstance(json.loads(call["tool_calls"][0]["function"]["arguments"]), dict)


def test_a_record_that_does_not_replay_is_skipped_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "altered.db"
    record = play(
        scenario_at(0, 1, "mid"),
        resolve("linear"),
        resolve("boulware"),
        names=("linear", "boulware"),
    )
    offer = next(e for e in record.events if isinstance(e, OfferMade))
    events = tuple(
        offer.model_copy(update={"price": offer.price + 1}) if e is offer else e
        for e in record.events
    )
    with ResultsStore(path) as db:
        db.add("r/good", record, run="r")
        db.add("r/bad", record.model_copy(update={"events": events}), run="r")
    lines = export(path, tmp_path)
    assert {line["metadata"]["key"] for line in lines} == {"r/good"}
    err = capsys.readouterr().err
    assert "wrote 2 transcripts" in err
    assert "skipped 2 that do not replay (events differ: 2)" in err


@pytest.mark.parametrize("client", ["mcp", "person"])
def test_a_house_seat_opposite_a_servers_client_is_skipped_as_such_in_the_count_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], client: str
) -> None:
    path = tmp_path / "served.db"
    with ResultsStore(path) as db:
        for key, names in [("r/pair", ("linear", "boulware")), ("r/room", (client, "boulware"))]:
            record = play(
                scenario_at(0, 1, "mid"), resolve("linear"), resolve("boulware"), names=names
            )
            db.add(key, record, run="r")
    lines = export(path, tmp_path)
    assert {line["metadata"]["key"] for line in lines} == {"r/pair"}
    out = tmp_path / "out.jsonl"
    assert capsys.readouterr().err == (  # no line per skipped seat
        f"wrote 2 transcripts to {out}; skipped 2 that do not replay "
        "(opposite a remote client: 1, remote client: 1)\n"
    )


def test_filters_that_keep_nothing_are_one_line_and_status_2_and_write_nothing(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.jsonl"
    assert main(["export-sft", str(store), "--out", str(out), "--agent", "nosuch"]) == 2
    assert capsys.readouterr().err == (
        f"dealroom: error: {store}: no transcript matches the filters\n"
    )
    assert not out.exists()


def test_role_and_agent_filters(store: Path, tmp_path: Path) -> None:
    buyers = export(store, tmp_path, "--role", "buyer")
    assert {line["metadata"]["role"] for line in buyers} == {"buyer"}
    linear = export(store, tmp_path, "--agent", "linear")
    assert len(linear) == 4
    assert {(x["metadata"]["role"], x["metadata"]["agent"]) for x in linear} == {
        ("buyer", "linear")
    }


def test_deals_only_and_min_share_filters(store: Path, tmp_path: Path) -> None:
    deals = export(store, tmp_path, "--deals-only")
    assert deals and all(line["metadata"]["status"] == "deal" for line in deals)
    with ResultsStore(store) as db:
        expected = {
            (row.key, "buyer") for row in db.iter() if (row.record.outcome.buyer_share or -1) >= 0.5
        } | {
            (row.key, "seller")
            for row in db.iter()
            if (row.record.outcome.seller_share or -1) >= 0.5
        }
    rich = export(store, tmp_path, "--min-share", "0.5")
    assert {(x["metadata"]["key"], x["metadata"]["role"]) for x in rich} == expected
    assert 0 < len(rich) < len(deals)


def test_no_line_holds_the_other_sides_value(store: Path, tmp_path: Path) -> None:
    with ResultsStore(store) as db:
        scenarios = {row.key: row.record.scenario for row in db.iter()}
    for line in export(store, tmp_path):
        meta = line["metadata"]
        s = scenarios[meta["key"]]
        hidden = s.seller_cost if meta["role"] == "buyer" else s.buyer_value
        text = json.dumps(line)
        assert f"{hidden:,.2f}" not in text and f"{hidden:.2f}" not in text


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--min-share", "1.5"], "must be between 0 and 1"),
        (["--min-share", "lots"], "not a number"),
        (["--role", "broker"], "invalid choice"),
    ],
)
def test_bad_flags_are_one_line_errors_with_status_2(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    out = tmp_path / "x.jsonl"
    assert main(["export-sft", str(store), "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_missing_or_foreign_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.jsonl"
    assert main(["export-sft", str(tmp_path / "none.db"), "--out", str(out)]) == 2
    assert "no such file" in capsys.readouterr().err
    foreign = tmp_path / "notes.txt"
    foreign.write_text("hello, not a database\n" * 100, encoding="utf-8")
    assert main(["export-sft", str(foreign), "--out", str(out)]) == 2
    assert "not a results store" in capsys.readouterr().err

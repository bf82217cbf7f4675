"""A client seat's conversation is stored with its negotiation: the briefing, then each call
that reached the seat with exactly the text the client read, the ending call's reply included;
``dealroom export-sft`` exports it. Calls answered after the end, calls whose arguments could
not be read and negotiations rebuilt from the journal leave nothing false behind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import TextContent
from mcp_support import client_for, house_room, ok, scenario, secret_with_gains, text_of

from dealroom.cli import main as cli_main
from dealroom.protocol import DEFAULT_RULES
from dealroom.protocol.text import money
from dealroom.protocol.tools import function_schemas
from dealroom.server.journal import Op
from dealroom.server.negotiation import RoomLimits
from dealroom.server.room import Room
from dealroom.server.room_settings import RoomSettings
from dealroom.store.results import ResultsStore, SerializedRecord
from dealroom.store.spool import PendingRow
from dealroom.store.writer import ResultWriter
from store_faults import Disk, failing_writer

pytestmark = pytest.mark.anyio


class Seen:
    """An MCP client that writes down each call and the text it read, as a transcript would."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.calls: list[tuple[str, dict[str, Any], str]] = []

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        self.calls.append((tool, arguments, text_of(result)))
        return result.structured_content or {}

    def messages(self) -> list[tuple[str, dict[str, Any], str]]:
        return list(self.calls)


def stored_calls(conversation: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """(tool, arguments, text) of each call in a stored conversation, checking its shape."""
    messages = conversation["messages"]
    calls = []
    for n, (asked, answered) in enumerate(zip(messages[1::2], messages[2::2], strict=True), 1):
        (call,) = asked["tool_calls"]
        assert (asked["role"], asked["content"], call["id"]) == ("assistant", "", f"call_{n}")
        assert (answered["role"], answered["tool_call_id"]) == ("tool", call["id"])
        calls.append((call["function"]["name"], call["function"]["arguments"], answered["content"]))
    return calls


def only_row(store: ResultsStore) -> Any:
    (row,) = store.iter()
    return row


async def test_a_client_seat_stores_what_it_read_and_did_and_export_sft_exports_it(
    tmp_path: Path,
) -> None:
    store = ResultsStore(tmp_path / "r.db")
    room = house_room(opponent="hardliner", seed=secret_with_gains(), store=store)
    async with client_for(room, "buyer") as client:
        briefing = (await client.get_prompt("briefing")).messages[0].content
        assert isinstance(briefing, TextContent)
        seat = Seen(client)
        await seat.call("get_state")
        await seat.call("accept", offer_id="o-nonexistent")  # refused by the rules: kept
        unreadable = await client.call_tool("make_offer", {"price": "cheap"})  # not kept
        assert unreadable.is_error
        await seat.call("make_offer", price=1.0, message="A first offer.")
        while True:
            woke = await seat.call("wait_for_opponent", timeout_s=30)
            theirs = [o for o in woke["live_offers"] if o["by"] == "seller"]
            if theirs:
                ended = await seat.call("accept", offer_id=theirs[-1]["offer_id"])
                break
            await seat.call("make_offer", price=2.0)
        assert ended["outcome"]["status"] == "deal"
        after = await ok(client, "get_state")  # answered after the end: not part of it
        assert after["observation"]["outcome"]["status"] == "deal"

    row = only_row(store)
    stored = row.extra["players"]["buyer"]
    assert set(row.extra["players"]) == {"buyer"}  # the house agent's seat is replayable
    assert stored["name"] == "mcp"
    conversation = stored["conversation"]
    assert conversation["messages"][0] == {"role": "user", "content": briefing.text}
    assert conversation["tools"] == function_schemas(DEFAULT_RULES, series=True)
    assert stored_calls(conversation) == seat.messages()
    assert seat.calls[1][2].startswith("offer_not_found: ")  # the refusal as the client read it
    assert "deal" in seat.calls[-1][2]  # the ending call's reply is in
    scenario = row.record.scenario
    seller_value = money(scenario.private_value("seller"), scenario.currency)
    assert seller_value not in json.dumps(conversation)

    out = tmp_path / "sft.jsonl"
    assert cli_main(["export-sft", str(tmp_path / "r.db"), "--out", str(out)]) == 0
    (line,) = out.read_text().splitlines()
    example = json.loads(line)
    assert example["messages"] == conversation["messages"]
    assert example["metadata"]["role"] == "buyer"
    assert example["metadata"]["source"] == "conversation"


async def test_between_two_clients_each_keeps_the_calls_answered_before_the_end(
    tmp_path: Path,
) -> None:
    store = ResultsStore(tmp_path / "r.db")
    room = Room(
        "two",
        RoomSettings(scenarios=lambda i: scenario(1, index=i), limits=RoomLimits(idle_s=0.05)),
        writer=ResultWriter(store),
    )
    async with client_for(room, "buyer") as b, client_for(room, "seller") as s:
        buyer, seller = Seen(b), Seen(s)
        offer = await buyer.call("make_offer", price=float(room.current.scenario.list_price))
        await seller.call("get_state")
        (live,) = offer["live_offers"]
        await seller.call("accept", offer_id=live["offer_id"])  # ends it
        late = await buyer.call("wait_for_opponent", timeout_s=5)  # answered after the end
        assert late["outcome"]["status"] == "deal"
    players = only_row(store).extra["players"]
    assert stored_calls(players["seller"]["conversation"]) == seller.messages()
    assert stored_calls(players["buyer"]["conversation"]) == buyer.messages()[:-1]
    assert players["buyer"]["conversation"]["tools"] == function_schemas(DEFAULT_RULES)


async def test_each_negotiation_of_a_series_starts_its_own_conversation(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.db")
    room = house_room(opponent="hardliner", store=store)
    async with client_for(room, "buyer") as client:
        first = Seen(client)
        await first.call("walk_away")
        second = Seen(client)
        await client.call_tool("new_negotiation", {})
        await second.call("get_state")
        await second.call("walk_away")
    one, two = store.iter()
    assert stored_calls(one.extra["players"]["buyer"]["conversation"]) == first.messages()
    conversation = two.extra["players"]["buyer"]["conversation"]
    assert stored_calls(conversation) == second.messages()  # no new_negotiation call in it
    assert conversation["messages"][0]["content"] == room.records.briefing(
        two.record.scenario, "buyer"
    )


class ListJournal:
    def __init__(self) -> None:
        self.entries: list[tuple[int, Op]] = []

    def append(self, number: int, op: Op) -> None:
        self.entries.append((number, op))


async def test_a_negotiation_rebuilt_from_the_journal_stores_no_partial_conversation(
    tmp_path: Path,
) -> None:
    journal = ListJournal()
    before = house_room(opponent="hardliner")
    before.journal.file = journal  # type: ignore[assignment]
    async with client_for(before, "buyer") as client:
        await ok(client, "make_offer", price=1.0)
    store = ResultsStore(tmp_path / "r.db")
    after = house_room(opponent="hardliner", store=store)
    after.replay(journal.entries)  # what a restarted server does
    async with client_for(after, "buyer") as client:
        await ok(client, "walk_away")
    row = only_row(store)
    assert row.record.outcome.end_reason == "walk_away"
    assert "players" not in row.extra


async def test_an_amendment_replaces_a_rows_extra_before_and_after_it_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    played = ResultsStore(tmp_path / "played.db")
    room = house_room(opponent="hardliner", store=played)
    async with client_for(room, "buyer") as client:
        await ok(client, "walk_away")
    record = SerializedRecord.of(only_row(played).record)
    disk = Disk()
    writer = failing_writer(tmp_path / "r.db", disk)
    writer.put(PendingRow("k/1", "run", record, {"v": 1}))
    writer.amend("k/1", {"v": 2})  # nothing wrote the row yet: replaced in place
    await writer.flush()
    assert only_row(writer.store).extra == {"v": 2}
    assert not writer.has_pending("k/")
    disk.full = True
    writer.amend("k/1", {"v": 3})  # stored already: an update, kept until it lands
    warned: list[str] = []
    monkeypatch.setattr(
        "dealroom.store.writer.log.warning", lambda event, **_: warned.append(event)
    )
    await writer.flush()
    await writer.flush()
    assert writer.has_pending("k/") and only_row(writer.store).extra == {"v": 2}
    assert warned == ["cannot amend a stored result yet"]  # once, not once per retry
    disk.full = False
    await writer.flush()
    assert not writer.has_pending("k/")
    (row,) = writer.store.iter()
    assert row.extra == {"v": 3} and row.record == only_row(played).record


async def test_a_seat_over_the_call_limit_stores_no_partial_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("dealroom.server.conversations.MAX_LOGGED_CALLS", 3)
    store = ResultsStore(tmp_path / "r.db")
    room = house_room(opponent="hardliner", store=store)
    async with client_for(room, "buyer") as client:
        for _ in range(3):
            await ok(client, "get_state")
        await ok(client, "walk_away")  # the fourth call: over the limit, and the ending one
    assert "players" not in only_row(store).extra

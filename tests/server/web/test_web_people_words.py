"""The seat page reads in a person's words: through a whole experiment, on both clocks and in
both seats, no text the page gets (its view's briefing and hint, every call's reply and
refusal) names a seat tool; on the wall clock none tells the person to wait to hear from the
other side, on the virtual clock the briefing says which button waits."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp_support import HttpServer, http_server, share_schema_validators, tls

from dealroom.protocol import people_text
from dealroom.protocol.wire import ClockKind

pytestmark = pytest.mark.anyio

SECRET = "fb8e20fc2e4c3f248c60c39bd652f3c1"


@pytest.fixture(autouse=True)
def _shared_validators(monkeypatch: pytest.MonkeyPatch) -> None:
    share_schema_validators(monkeypatch)


def read_by_a_person(texts: list[str], clock: ClockKind) -> None:
    for text in texts:
        assert people_text.tool_names_in(text) == [], text
        assert "get_state" not in text and ": reason" not in text
        # No machine text: no offer ids, no clock milliseconds ("0:12", not "[12.001 s]").
        assert not re.search(r"\(o\d+\)|\d\.\d{3} s|\[\d", text), text
        if clock == "wall":
            assert "Wait for the other side" not in text and "hear from" not in text, text
            # Every move takes effect at once on the wall clock: no action costs are stated.
            assert not re.search(r"(offer|message|accept|reject)\w* \d+(\.\d+)? s\b", text), text


class Page:
    def __init__(self, http: httpx2.AsyncClient, server: HttpServer, token: str) -> None:
        self.http, self.server = http, server
        self.headers = {"Authorization": f"Bearer {token}"}
        self.texts: list[str] = []
        self.codes: list[str] = []

    async def view(self) -> dict[str, Any]:
        response = await self.http.get(f"{self.server.url}/web/api/seat", headers=self.headers)
        view = dict(response.json())
        self.texts += [view["briefing"], view["hint"]]
        return view

    async def press(self, tool: str, **arguments: Any) -> dict[str, Any]:
        response = await self.http.post(
            f"{self.server.url}/web/api/seat/call",
            json={"tool": tool, "arguments": arguments},
            headers=self.headers,
        )
        reply = dict(response.json())
        if "error" in reply:
            self.codes.append(reply["error"]["code"])
            self.texts.append(reply["error"]["text"])
        else:
            self.texts.append(reply["text"])
        await self.view()
        return reply


@pytest.mark.parametrize("clock", ["virtual", "wall"])
@pytest.mark.parametrize("role", ["buyer", "seller"])
async def test_an_experiment_page_names_no_tool_through_a_whole_series_with_refusals(
    tmp_path: Path, clock: ClockKind, role: str
) -> None:
    house = {"house_seller" if role == "buyer" else "house_buyer": "hardliner"}
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        created = await server.create_room(
            secret=SECRET,
            clock=clock,
            participant="p1",
            consent="I agree.",
            negotiations=2,
            **house,
        )
        page = Page(http, server, created["tokens"][role])
        first = await page.view()
        if clock == "virtual":
            assert 'press "Wait for the other side"' in first["briefing"]
        await page.press("make_offer", price=10.0)  # before consent
        await http.post(f"{server.url}/web/api/seat/consent", headers=page.headers)
        await page.press("get_state")
        await page.press("make_offer", price=0)  # an empty Price field
        await page.press("make_offer", price=1e12)
        await page.press("send_message", text="")
        await page.press("accept", offer_id="o99")
        await page.press("new_negotiation")
        await page.press("get_secret")
        await page.press("make_offer", price=1000.0, message="a fair price")
        await page.press("wait_for_opponent", timeout_s=1)
        await page.press("send_message", text="hello")
        await page.press("walk_away")
        await page.press("make_offer", price=1000.0)  # after the end
        await page.press("new_negotiation")
        await page.press("walk_away")
        await page.press("new_negotiation")  # the series is over
        assert page.codes == [
            "consent_required",
            "invalid_arguments",
            "price_out_of_range",
            "message_empty",
            "offer_not_found",
            "negotiation_running",
            "unknown_tool",
            "negotiation_closed",
            "series_over",
        ]
        read_by_a_person(page.texts, clock)

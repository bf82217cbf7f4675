"""Security of the web pages: no private value in anything a seat's or a spectator's page can
load, message text is never markup, the pages' scripts never parse text as HTML, the routes
keep the server's Host and Origin checks, and spectator tokens survive a restart."""

from __future__ import annotations

import contextlib
import json
import random
import re
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp_support import ADMIN, HttpServer, house_resolver, http_server, secret_of, tls
from test_faults import serve_process

from dealroom.protocol import RoomRequest, other
from dealroom.server.journal import Journals
from dealroom.server.rooms import RoomRegistry
from dealroom.server.web.routes import STREAMS_PER_TOKEN
from dealroom.server.web.views import spectator_view
from dealroom.store.results import ResultsStore
from dealroom.store.writer import ResultWriter

pytestmark = pytest.mark.anyio


def forms(value: Decimal) -> list[str]:
    return sorted({f"{value:.2f}", f"{value:,.2f}", repr(float(value)), str(value)})


def assert_no_value(text: str, value: Decimal, where: str) -> None:
    for form in forms(value):
        assert not re.search(rf"(?<![\d.,]){re.escape(form)}(?![\d])", text), (where, form)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def first_view(http: httpx2.AsyncClient, url: str, token: str) -> str:
    """The first view a live stream sends."""
    async with http.stream("GET", url, headers=auth(token)) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                return line
    raise AssertionError("the stream sent nothing")


async def play_randomly(
    http: httpx2.AsyncClient, server: HttpServer, created: dict[str, Any], rng: random.Random
) -> None:
    """A seat plays random calls through its page; every response either page loads is
    searched for what that page must not show."""
    role = next(iter(created["tokens"]))
    token, spectator = created["tokens"][role], created["spectator"]
    room = server.registry.rooms[created["room"]]
    scenario = room.current.scenario
    theirs = scenario.private_value(other(role))
    base = float(scenario.list_price)
    for step in range(12):
        tool, arguments = rng.choice(
            [
                ("make_offer", {"price": round(base * rng.uniform(0.3, 1.6), 2), "message": "hi"}),
                ("make_offer", {"price": -1}),
                ("accept", {"offer_id": f"o{rng.randint(1, 6)}"}),
                ("reject", {"offer_id": f"o{rng.randint(1, 6)}", "message": "no"}),
                ("send_message", {"text": "what is your value?"}),
                ("wait_for_opponent", {"timeout_s": 15}),
                ("get_state", {}),
            ]
        )
        body = {"tool": tool, "arguments": arguments}
        reply = await http.post(f"{server.url}/web/api/seat/call", json=body, headers=auth(token))
        seat_page = (await http.get(f"{server.url}/web/api/seat", headers=auth(token))).text
        room_page = (await http.get(f"{server.url}/web/api/room", headers=auth(spectator))).text
        where = f"{role} step {step} {tool}"
        for text in (reply.text, seat_page):
            assert_no_value(text, theirs, where)
        if json.loads(room_page)["open"]:
            for value in (scenario.buyer_value, scenario.seller_cost):
                assert_no_value(room_page, value, f"room page, {where}")
        if step == 0:
            stream = await first_view(http, f"{server.url}/web/api/seat/events", token)
            assert_no_value(stream, theirs, "seat stream")


async def test_no_page_a_seat_or_spectator_loads_shows_a_private_value_it_must_not(
    tmp_path: Path,
) -> None:
    rng = random.Random(15)
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        for n in range(8):
            house = rng.choice(["boulware", "conceder", "hardliner", "accept-any"])
            where = {"house_seller": house} if n % 2 else {"house_buyer": house}
            created = await server.create_room(**where, secret=secret_of(n).hex())
            room = created["spectator"]
            stream = await first_view(http, f"{server.url}/web/api/room/events", room)
            scenario = server.registry.rooms[created["room"]].current.scenario
            for value in (scenario.buyer_value, scenario.seller_cost):
                assert_no_value(stream, value, "room stream")
            await play_randomly(http, server, created, rng)


async def test_no_page_of_a_pair_participant_shows_the_other_participants_value(
    tmp_path: Path,
) -> None:
    """Two people in a pair study, two negotiations (a new match each), random presses: no view,
    stream, reply or final screen of one shows the other's value."""
    rng = random.Random(26)
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        body = {"id": "s", "participants": ["a", "b"], "matching": "pairs", "negotiations": 2}
        created = await http.post(f"{server.url}/admin/studies", json=body, headers=auth(ADMIN))
        tokens: dict[str, str] = created.json()["participants"]
        study = server.registry.studies.studies["s"]
        seen: dict[str, list[str]] = {"a": [], "b": []}
        hidden: dict[str, list[Decimal]] = {"a": [], "b": []}  # the other's, each negotiation

        async def press(label: str, tool: str, arguments: dict[str, Any]) -> None:
            call = {"tool": tool, "arguments": arguments}
            url, headers = server.url, auth(tokens[label])
            reply = await http.post(f"{url}/web/api/seat/call", json=call, headers=headers)
            view = await http.get(f"{url}/web/api/seat", headers=headers)
            seen[label] += [reply.text, view.text]

        for label in "ab":  # both arrive: matched
            seen[label].append(
                (await http.get(f"{server.url}/web/api/seat", headers=auth(tokens[label]))).text
            )
        for n in range(2):
            current = {label: study.current(study.participants[label]) for label in "ab"}
            room = next(c for c in current.values() if c is not None)[0]
            scenario = room.current.scenario
            theirs = {
                label: scenario.private_value(other(c[1])) for label, c in current.items() if c
            }
            for label, value in theirs.items():
                hidden[label].append(value)
            base = float(scenario.list_price)
            for _ in range(10):
                label = rng.choice("ab")
                tool, arguments = rng.choice(
                    [
                        ("make_offer", {"price": round(base * rng.uniform(0.3, 1.6), 2)}),
                        ("reject", {"offer_id": f"o{rng.randint(1, 4)}", "message": "no"}),
                        ("send_message", {"text": "what is your value?"}),
                        ("get_state", {}),
                    ]
                )
                await press(label, tool, arguments)
            for label in "ab":
                stream = await first_view(http, f"{server.url}/web/api/seat/events", tokens[label])
                seen[label].append(stream)
            await press("a", "walk_away", {})
            for label in "ab":
                for text in seen[label]:
                    assert_no_value(text, theirs[label], f"{label}, negotiation {n + 1}")
                seen[label] = []
            for label in "ab":  # Next: back in the queue, matched again (or done)
                await press(label, "new_negotiation", {})
        for label in "ab":
            final = await http.get(f"{server.url}/web/api/seat", headers=auth(tokens[label]))
            assert final.json()["completion"] is not None  # their final screen: their results
            assert len(hidden[label]) == 2
            for value in hidden[label]:
                assert_no_value(final.text, value, f"{label}, final screen")


def test_the_pages_scripts_never_parse_text_as_html() -> None:
    static = resources.files("dealroom.server.web").joinpath("static")
    scripts = {f.name: f.read_text() for f in static.iterdir() if f.name.endswith(".js")}
    shipped = {"common.js", "room.js", "market.js", "seat.js", "tournament.js", "chart.js"}
    assert shipped <= set(scripts)
    banned = re.compile(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|Function\(")
    for name, text in scripts.items():
        assert not banned.search(text), name
    pages = [f.read_text() for f in static.iterdir() if f.name.endswith(".html")]
    for page in pages:  # no inline script or handler: the content security policy forbids them
        assert not re.search(r"<script>|<script [^>]*>[^<]|\son[a-z]+=", page)


async def test_the_web_routes_refuse_a_foreign_host_or_origin(tmp_path: Path) -> None:
    async with http_server(tmp_path) as server, httpx2.AsyncClient(verify=tls()) as http:
        created = await server.create_room(house_seller="hardliner")
        seat = auth(created["tokens"]["buyer"])
        for path in ("/web/seat", "/web/api/seat"):
            host = await http.get(f"{server.url}{path}", headers={**seat, "Host": "evil.example"})
            assert host.status_code == 421, path
            origin = await http.get(
                f"{server.url}{path}", headers={**seat, "Origin": "http://evil.example"}
            )
            assert origin.status_code == 403, path
        post = await http.post(
            f"{server.url}/web/api/seat/call",
            json={"tool": "walk_away", "arguments": {}},
            headers={**seat, "Origin": "http://evil.example"},
        )
        assert post.status_code == 403
        assert server.registry.rooms[created["room"]].current.is_open  # nothing happened


async def test_a_spectator_token_survives_a_restart_and_opens_only_its_room(
    tmp_path: Path,
) -> None:
    path = tmp_path / "results.db"

    def registry() -> RoomRegistry:
        return RoomRegistry(
            writer=ResultWriter.beside(ResultsStore(path)),
            resolve_house=house_resolver,
            journals=Journals.beside(path),
        )

    first = registry()
    created = first.create(RoomRequest(house_seller="hardliner"))
    other_room = first.create(RoomRequest(house_seller="hardliner"))
    first.close()
    first.writer.store.close()  # type: ignore[union-attr]
    second = registry()
    try:
        second.restore()
        assert created.spectator is not None and other_room.spectator is not None
        room = second.room_for_spectator(created.spectator)
        assert room is not None and room.id == created.room
        assert spectator_view(room).room == created.room
        assert second.room_for_spectator(created.tokens["buyer"]) is None
        assert second.seat_for_token(created.spectator) is None
        assert second.room_for_spectator(created.spectator[:-1]) is None
    finally:
        second.close()
        second.writer.store.close()  # type: ignore[union-attr]


async def _send_big_call(url: str, token: str, *, chunked: bool) -> bytes:
    """POST a 500 MB seat call, announced (Content-Length) or chunked, a megabyte at most
    actually sent; what the server answered by then (b"" if nothing)."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {500 * 2**20}"
    head = (
        f"POST /web/api/seat/call HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n{framing}\r\n\r\n"
    )
    piece = b"[" * 65_536
    chunk = b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece
    answer = b""
    async with await anyio.connect_tcp(host, int(port)) as stream:
        await stream.send(head.encode())
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.EndOfStream):
            for _ in range(16):  # 1 MB
                await stream.send(chunk)
            with anyio.move_on_after(5):
                while b"\r\n\r\n" not in answer:
                    answer += await stream.receive()
    return answer


def _resident_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024  # type: ignore[union-attr]


async def test_a_huge_seat_call_body_is_refused_before_it_is_read(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with serve_process(tmp_path / "results.db") as (url, process):
            async with httpx2.AsyncClient() as http:
                response = await http.post(
                    f"{url}/admin/rooms",
                    json={"house_seller": "hardliner"},
                    headers={"Authorization": f"Bearer {ADMIN}"},
                )
                token = response.json()["tokens"]["buyer"]
                before = _resident_mb(process.pid)
                answers = [await _send_big_call(url, token, chunked=c) for c in (False, True)]
                grown = _resident_mb(process.pid) - before
                body = {"tool": "get_state", "arguments": {}}
                after = await http.post(f"{url}/web/api/seat/call", json=body, headers=auth(token))
            process.terminate()
            process.wait(10)
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 413"), answer[:80]
    assert grown < 20, f"{grown:.0f} MB more resident"
    assert after.status_code == 200 and "text" in after.json()


async def test_one_token_holds_a_few_live_streams_and_one_more_is_429(tmp_path: Path) -> None:
    pool = httpx2.Limits(max_connections=None, max_keepalive_connections=None)
    async with (
        http_server(tmp_path) as server,
        httpx2.AsyncClient(verify=tls(), timeout=30, limits=pool) as http,
    ):
        created = await server.create_room(house_seller="hardliner")
        for path, token in [
            ("/web/api/room/events", created["spectator"]),  # shareable with anyone
            ("/web/api/seat/events", created["tokens"]["buyer"]),
        ]:
            async with contextlib.AsyncExitStack() as streams:
                statuses = []
                for _ in range(STREAMS_PER_TOKEN + 3):
                    request = http.stream("GET", f"{server.url}{path}", headers=auth(token))
                    response = await streams.enter_async_context(request)
                    statuses.append(response.status_code)
                refused = await http.get(f"{server.url}{path}", headers=auth(token))
            assert statuses == [200] * STREAMS_PER_TOKEN + [429] * 3, path
            assert refused.status_code == 429 and "\n" not in refused.json()["error"]
            with anyio.fail_after(10):  # the closed streams are let go: one opens again
                while True:
                    async with http.stream("GET", f"{server.url}{path}", headers=auth(token)) as r:
                        if r.status_code == 200:
                            break
                    await anyio.sleep(0.05)

"""The OpenEnv environment, through OpenEnv's own client against a served app on loopback.

Whole negotiations, several sessions at once, played by one scripted policy (offer 90% of the
list price with a message, wait, then answer in text: a reply without tool calls); each reward
equals dealroom's own scoring of the negotiation's record, no observation carries the other
side's private value, a seed gives the same negotiation every time and the tournament's job of
that number, bad input is one sentence that leaves the session as it was, and ``/mcp`` is not
served.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from openenv.core.generic_client import GenericEnvClient

from dealroom.analysis import metrics
from dealroom.harnesses.openenv_env import (
    LEARNER,
    BargainAction,
    BargainClient,
    BargainEnvironment,
    Served,
    create_bargain_app,
    served_settings,
)
from dealroom.play.tournament import TournamentConfig
from dealroom.protocol import TIERS, model_seat
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Secret

pytestmark = pytest.mark.anyio

SECRET = Secret.from_hex("5eed" * 8)
OPPONENTS = ("boulware", "conceder")


def free_port() -> int:
    """An unused loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served_:
    """A running loopback app and what its sink received."""

    def __init__(self, url: str, records: list[tuple[str, NegotiationRecord]]) -> None:
        self.url = url
        self.records = records


@pytest.fixture(scope="module")
def served() -> Iterator[Served_]:
    records: list[tuple[str, NegotiationRecord]] = []
    lock = threading.Lock()

    def sink(key: str, record: NegotiationRecord) -> None:
        with lock:
            records.append((key, record))

    settings = served_settings(opponents=OPPONENTS, role=None, secret=SECRET, max_tool_rounds=8)
    app = create_bargain_app(settings, sink=sink, max_sessions=8)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield Served_(f"http://127.0.0.1:{port}", records)
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def list_price(briefing: str) -> float:
    return float(briefing.split("List price: $", 1)[1].split(" ", 1)[0].replace(",", ""))


def policy(briefing: str, calls: int) -> BargainAction:
    """The parity test's policy, one tool call a step."""
    if calls == 0:
        offer = {"price": round(list_price(briefing) * 0.9, 2), "message": "A fair price."}
        return BargainAction(tool="make_offer", arguments=offer)
    if calls == 1:
        return BargainAction(tool="wait_for_opponent", arguments={"timeout_s": 30})
    return BargainAction(tool=None)  # a reply in text: the seat's play ends


async def play(client: BargainClient, seed: int, **pins: Any) -> list[dict[str, Any]]:
    """One negotiation; every observation as JSON (what went over the wire, parsed)."""
    result = await client.reset(seed=seed, **pins)
    seen = [result.observation.model_dump(mode="json")]
    briefing = result.observation.briefing
    calls = 0
    while not result.done:
        result = await client.step(policy(briefing, calls))
        calls += 1
        seen.append(result.observation.model_dump(mode="json"))
    return seen


def scored(record: NegotiationRecord, role: str) -> float:
    """dealroom's own scoring of a record: the seat's surplus share (0 without a deal or
    gains), -1 for a losing deal (the reward ``dealroom.training`` trains on)."""
    seat = metrics.seats_of(record)[0 if role == "buyer" else 1]
    return (seat.share or 0.0) - (1.0 if seat.ir_violation else 0.0)


async def test_whole_negotiations_in_sessions_at_once_score_as_dealroom(
    served: Served_,
) -> None:
    sessions, per_session = 6, 2
    played: dict[int, list[dict[str, Any]]] = {}

    async def session(k: int) -> None:
        async with BargainClient(base_url=served.url) as client:
            for n in range(per_session):
                seed = k + sessions * n
                played[seed] = await play(client, seed)
                state = await client.state()
                assert state.done and state.seed == seed and state.step_count >= 2

    async with anyio.create_task_group() as group:
        for k in range(sessions):
            group.start_soon(session, k)

    config = TournamentConfig(
        agents=(LEARNER, *OPPONENTS), tiers=TIERS, seed=SECRET, learner=LEARNER
    )
    jobs = config.jobs(run="openenv")
    stored = dict(served.records)
    deals = 0
    for seed, seen in sorted(played.items()):
        first, last = seen[0], seen[-1]
        assert first["tools"] == model_seat.tools(model_seat_rules())
        assert first["briefing"] and not last["briefing"]
        job = jobs[seed]  # episode i is the tournament's job i
        assert (first["tier"], first["index"]) == (job.tier, job.index)
        assert first["role"] == ("buyer" if job.buyer == LEARNER else "seller")
        record = stored[job.key]
        assert record.scenario == job.scenario()
        assert (record.buyer, record.seller) == (job.buyer, job.seller)
        assert last["outcome"] == record.outcome.status
        deals += record.outcome.status == "deal"
        assert client_reward(seen) == pytest.approx(scored(record, first["role"]))
        # Nothing the seat reads holds the other side's private value.
        role = first["role"]
        theirs = record.scenario.private_value("seller" if role == "buyer" else "buyer")
        ours = record.scenario.private_value(role)
        wire = json.dumps(seen)
        assert f"{theirs:.2f}" not in wire and f"{theirs:,.2f}" not in wire, (seed, theirs)
        assert f"{ours:,.2f}" in first["briefing"]
    assert len(played) == sessions * per_session
    assert 0 < deals < len(played)


def client_reward(seen: list[dict[str, Any]]) -> float:
    """The reward the last observation carried (parsed by the client into the observation)."""
    rewards = [s["reward"] for s in seen]
    assert all(r is None for r in rewards[:-1]) and rewards[-1] is not None
    assert [s["done"] for s in seen] == [False] * (len(seen) - 1) + [True]
    return float(rewards[-1])


def model_seat_rules() -> Any:
    from dealroom.protocol import DEFAULT_RULES

    return DEFAULT_RULES


async def test_the_same_seed_plays_the_same_negotiation(served: Served_) -> None:
    async with BargainClient(base_url=served.url) as one, BargainClient(base_url=served.url) as two:
        first = await play(one, 40, opponent="conceder", tier="high", role="buyer")
        again = await play(two, 40, opponent="conceder", tier="high", role="buyer")
        other = await play(one, 52, opponent="conceder", tier="high", role="buyer")
    assert first == again
    assert first[0]["briefing"] != other[0]["briefing"]
    ours = [r for k, r in served.records if k == "openenv/high/00003/openenv/conceder"]
    assert len(ours) == 2 and ours[0] == ours[1]  # 40 // (3 tiers x 4 pairings) = index 3


async def test_bad_input_is_one_sentence_and_changes_nothing(served: Served_) -> None:
    async with BargainClient(base_url=served.url) as client:
        with pytest.raises(RuntimeError, match="no negotiation: call reset first"):
            await client.step(BargainAction(tool="get_state"))
        opened = await client.reset(seed=2)
        for pins, match in (
            ({"opponent": "nobody"}, "unknown opponent 'nobody': this server plays boulware"),
            ({"tier": "huge"}, "tier must be one of low, mid, high, not 'huge'"),
            ({"role": "broker"}, "role must be 'buyer' or 'seller'"),
            ({"colour": "red"}, "unknown reset argument 'colour'"),
            ({"index": -1}, "index must be a whole number"),
        ):
            with pytest.raises(RuntimeError, match=match) as caught:
                await client.reset(seed=2, **pins)
            assert "\n" not in str(caught.value)
        assert (await client.state()).seed == 2  # the open negotiation is still the one
        before = await client.step(BargainAction(tool="get_state"))
        for action, text in (
            (BargainAction(tool="haggle"), "{'error': 'Tool haggle not found.'}"),
            (
                BargainAction(tool="make_offer", arguments={"cost": 3}),
                "{'error': \"ToolMethods.make_offer() got an unexpected keyword argument 'cost'\"}",
            ),
            (
                BargainAction(tool="make_offer", arguments="price=3"),
                model_seat.bind("make_offer", "price=3"),
            ),
        ):
            step = await client.step(action)
            assert step.observation.result == text and not step.done
        after = await client.step(BargainAction(tool="get_state"))
        assert after.observation.result == before.observation.result  # no clock time, no event
        assert opened.observation.briefing
        done = await client.step(BargainAction(tool=None))
        assert done.done and done.reward is not None
        with pytest.raises(RuntimeError, match="the negotiation is over: call reset"):
            await client.step(BargainAction(tool="get_state"))
    # An action that is no BargainAction is refused by OpenEnv's own validation.
    async with GenericEnvClient(base_url=served.url) as generic:
        await generic.reset(seed=2)
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            await generic.step({"tool": "get_state", "extra": 1})
        state = await generic.state()
        assert state["step_count"] == 0 and state["seed"] == 2


def test_a_step_past_max_tool_rounds_ends_the_seat_play() -> None:
    env = BargainEnvironment(Served(served_settings(secret=SECRET, max_tool_rounds=2)))
    opened = env.reset(seed=0)
    assert opened.max_tool_rounds == 2 and not opened.done
    for n in (1, 2):
        step = env.step(BargainAction(tool="get_state"))
        assert step.step == n and not step.done
    seat = env.state
    end = env.step(BargainAction(tool="make_offer", arguments={"price": 1}))
    assert end.done and end.result == "" and end.step == 2 and seat.done
    assert env.record is not None and env.record.outcome.offers.buyer == 0  # its call not run


async def test_mcp_is_not_served_and_the_schema_is_typed(served: Served_) -> None:
    async with httpx.AsyncClient(base_url=served.url) as http:
        assert (
            await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        ).status_code == 404
        assert (await http.get("/health")).status_code == 200
        schema = (await http.get("/schema")).json()
    fields = schema["observation"]["properties"]
    assert {"briefing", "tools", "result", "step", "max_tool_rounds"} <= set(fields)
    assert {"tool", "arguments"} <= set(schema["action"]["properties"])


def test_served_settings_are_checked_once() -> None:
    from dealroom.play.registry import AgentSpecError

    with pytest.raises(AgentSpecError):
        Served(served_settings(opponents=("no-such-agent",), secret=SECRET))
    with pytest.raises(ValueError, match="at least one"):
        Served(served_settings(tiers=(), secret=SECRET))


def test_the_cli_without_openenv_names_the_install_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dealroom.harnesses
    from dealroom.cli import main

    # As without openenv-core: importing the environment fails at ``import openenv``.
    for name in [n for n in sys.modules if n == "openenv" or n.startswith("openenv.")]:
        monkeypatch.setitem(sys.modules, name, None)
    for name in ("openenv_env", "_openenv"):
        monkeypatch.delitem(sys.modules, f"dealroom.harnesses.{name}")
        monkeypatch.delattr(dealroom.harnesses, name)
    assert main(["openenv", "serve"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'dealroom[openenv]'" in err


def test_the_cli_refuses_an_unknown_opponent(capsys: pytest.CaptureFixture[str]) -> None:
    from dealroom.cli import main

    assert (
        main(["openenv", "serve", "--opponent", "boulware,nobody", "--secret", SECRET.hex()]) == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nobody" in err


@pytest.mark.slow
def test_dealroom_openenv_serve_plays_and_stores(tmp_path: Any) -> None:
    """The command itself: a client plays one negotiation; the store holds it for reports."""
    from dealroom.store.results import ResultsStore

    port, out = free_port(), tmp_path / "openenv.db"
    command = [
        sys.executable, "-c", "from dealroom.cli import main; raise SystemExit(main())",
        "openenv", "serve", "--opponent", "conceder", "--tiers", "mid", "--port", str(port),
        "--secret", SECRET.hex(), "--out", str(out), "--max-sessions", "2",
    ]  # fmt: skip
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stderr is not None
            line = process.stderr.readline()
            assert f"OpenEnv environment at http://127.0.0.1:{port}" in line, line
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 20
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{url}/health").status_code == 200:
                        break
                assert time.monotonic() < deadline
                time.sleep(0.1)

            async def one() -> list[dict[str, Any]]:
                async with BargainClient(base_url=url) as client:
                    return await play(client, 0)

            seen = anyio.run(one)
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=20)
    with ResultsStore(out, create=False) as store:
        (stored,) = list(store.iter("openenv"))
    assert stored.key == "openenv/mid/00000/openenv/conceder"
    assert client_reward(seen) == pytest.approx(scored(stored.record, "buyer"))

"""``dealroom study simulate``: bots run a whole study before anyone is paid, as oTree's bots do.

The study is the one ``study create`` would open with the same flags. A server of its own is
started on a loopback port (its results store and journals in a fresh directory), the study is
created through the admin API, and one bot per participant (``_study_bots``) takes part through
the routes a participant's browser uses: invited participants by their links, the study's URL
(``--open``) by label. Some bots leave (``--dropouts``: half at their first page, half during
a paid negotiation), some get the quiz wrong once (``--quiz-mistakes``). Half way the
server is stopped and started again from its journals (unless ``--no-restart``): the even-
numbered bots have finished by then, the odd-numbered ones stopped part way (after their
practice, or, solo, after their first paid negotiation) and go on after the restart with the
same links.

Then the exports are saved (``--out``: owner-only files, never overwritten) and checked against
the results store: every stored negotiation of the study is one row of ``negotiations.csv`` with
the same outcome, and every payment is the rule's sum of its rows. The cost estimate is read
from ``payments.csv``: the median, 95th percentile and largest payment per participant and the
total, under the bots' scripted bargaining (a person's play differs: the estimate is of the rule
on this kind of play, not a forecast of people).
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import random
import secrets
import socket
import sys
import tempfile
import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import uvicorn

from dealroom.agents import resolve
from dealroom.cli._common import usage_error
from dealroom.cli._serving import close_store
from dealroom.cli._study_bots import Bot, Pause, Runner
from dealroom.cli._study_flags import add_study_flags, study_request, write_private
from dealroom.protocol._base import CENT
from dealroom.protocol.study import CLOSE_GRACE_S, StudyCreated, StudyRequest, duration
from dealroom.server.journal import Journals
from dealroom.server.mcp_http import build_http_app, uvicorn_config
from dealroom.server.rooms import RoomRegistry
from dealroom.server.study_export import EXPORTS
from dealroom.store.results import ResultsStore
from dealroom.store.writer import ResultWriter

HOST = "127.0.0.1"
REAP_S = 0.5
"""The simulated server's reaper interval (a served one: 1 second)."""
LONELY_S = 3
"""Seconds a bot waits for a partner once no one else is left to come, before it stops."""


def add_simulate(actions: Any) -> None:
    """Register ``study simulate`` (``actions``: the ``study`` command's subparsers)."""
    simulate = actions.add_parser(
        "simulate",
        help="bots run a whole study on a server of its own; its exports and a cost estimate",
        description="Bots run the study these flags describe (as study create takes them) "
        "through the participants' routes, with dropouts and a restart; its exports are saved "
        "and checked against the results store, and the payments summed up.",
    )
    add_study_flags(simulate)
    simulate.add_argument(
        "--dropouts", type=_share, default=0.05, metavar="SHARE", help="bots that leave (0.05)"
    )
    simulate.add_argument(
        "--quiz-mistakes",
        type=_share,
        default=0.1,
        metavar="SHARE",
        help="bots whose first quiz attempt is wrong (0.1)",
    )
    simulate.add_argument("--no-restart", action="store_true", help="no restart half way")
    simulate.add_argument(
        "--out", type=Path, metavar="DIR", help="where the exports go (default: ID-simulation/)"
    )
    simulate.add_argument(
        "--time-limit", type=float, default=600.0, metavar="S", help="give up after S seconds"
    )
    simulate.set_defaults(handler=simulate_study)


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share between 0 and 1")
    return value


@dataclass
class SimulatedStudy:
    """What a simulation did and found."""

    request: StudyRequest
    bots: list[Bot]
    exports: dict[str, str]
    stored: int
    mismatches: list[str]
    restarted: bool
    wall_s: float


def simulate_study(args: argparse.Namespace) -> int:
    """Run the simulation, save and check the exports, print the summary (exit 1 on a
    mismatch, an error status or a bot that did not finish)."""
    request = study_request(args)
    out: Path = args.out or Path(f"{request.id}-simulation")
    if out.exists():
        raise usage_error(f"{out} exists; a simulation's exports are never overwritten (--out)")
    if not out.parent.is_dir():
        raise usage_error(f"{out.parent}: no such directory")
    with tempfile.TemporaryDirectory(prefix="dealroom-simulate-") as state:
        done = anyio.run(_simulate, request, args, Path(state))
    out.mkdir(mode=0o700)
    for name, text in done.exports.items():
        write_private(out / f"{request.id}-{name}.csv", text)
    sys.stdout.write(summary(done, out))
    stuck = [b for b in done.bots if not (b.finished or b.left or b.lonely)]
    errors = sum(n for b in done.bots for code, n in b.stats.items() if code.startswith("5"))
    return 1 if done.mismatches or stuck or errors else 0


async def _simulate(request: StudyRequest, args: argparse.Namespace, state: Path) -> SimulatedStudy:
    started = time.monotonic()
    until = started + args.time_limit
    store_path, admin, port = state / "results.db", secrets.token_urlsafe(24), _free_port()
    url = f"http://{HOST}:{port}"
    async with httpx2.AsyncClient(timeout=120, follow_redirects=False) as http:
        async with _server(store_path, port, admin):
            body = request.model_dump(mode="json", exclude_defaults=True)
            response = await http.post(
                f"{url}/admin/studies", json=body, headers={"Authorization": f"Bearer {admin}"}
            )
            if response.status_code != 201:
                raise usage_error(f"the study cannot be created: {response.text.strip()[:200]}")
            created = StudyCreated.model_validate(response.json())
            bots = _bots(request, created, args)
            runner = Runner(http, url, request)
            restart = not args.no_restart
            await _all(runner, bots, until, first=restart)
        if restart:
            async with _server(store_path, port, admin):
                await _all(runner, bots, until, first=False)
                await _settle(http, url, admin, request, bots, until)
                exports = await _exports(http, url, admin, request.id)
        else:
            async with _server(store_path, port, admin):
                await _settle(http, url, admin, request, bots, until)
                exports = await _exports(http, url, admin, request.id)
    with ResultsStore(store_path, create=False) as store:
        stored = {row.key: row for row in store.iter(request.id)}
        mismatches = check_exports(exports, stored, request)
    return SimulatedStudy(
        request, bots, exports, len(stored), mismatches, restart, time.monotonic() - started
    )


def _bots(request: StudyRequest, created: StudyCreated, args: argparse.Namespace) -> list[Bot]:
    """One bot per participant: the invited, then as many as the study's URL admits; who
    leaves and who errs in the quiz drawn from the study's id (the same on every run)."""
    bots = [Bot(i, token, label) for i, (label, token) in enumerate(created.participants.items())]
    capacity = 0 if request.join is None else request.join.capacity
    bots += [Bot(len(bots) + i, None, f"SIM{i + 1:05d}") for i in range(capacity)]
    rng = random.Random(f"simulate/{request.id}")
    leaving = rng.sample(bots, round(len(bots) * args.dropouts))
    for n, bot in enumerate(leaving):
        bot.leaves = "start" if n % 2 == 0 else "negotiation"
    staying = [b for b in bots if b.leaves is None]
    for bot in rng.sample(staying, round(len(staying) * args.quiz_mistakes)):
        bot.mistake = True
    return bots


async def _all(runner: Runner, bots: list[Bot], until: float, *, first: bool) -> None:
    """Every bot still playing, at once; ``first``: the phase before a restart."""
    async with anyio.create_task_group() as group:
        for bot in bots:
            if not (bot.finished or bot.left):
                pause = _pause(runner.request, bot, bots, first=first)
                group.start_soon(lambda b=bot, p=pause: runner.run(b, pause=p, until=until))


def _pause(request: StudyRequest, bot: Bot, bots: list[Bot], *, first: bool) -> Pause:
    """Where a bot stops: an odd one, before a restart, part way; a lone waiter once no one
    else is left to come (everyone else finished, left, or waits too: in another treatment, or
    absent)."""
    practice = request.design.practice

    def lonely(view: dict[str, Any]) -> bool:
        if not view.get("waiting") or (view.get("waited_s") or 0) < LONELY_S:
            return False
        alone = all(b.finished or b.left or b.waiting for b in bots if b is not bot)
        bot.lonely = alone and not first
        return first or alone

    def part_way(view: dict[str, Any]) -> bool:
        if view["kind"] == "seat" and view["practice"]:  # practice over, before Next
            done = view["observation"]["outcome"] is not None
            return done and view["negotiation"] == practice
        if request.matching == "pairs":
            return practice == 0 and view["needs_consent"]
        return view["kind"] == "seat" and view["negotiation"] >= min(2, request.negotiations)

    if first and bot.index % 2 == 1:
        return lambda view: lonely(view) or part_way(view)
    return lonely


async def _settle(
    http: httpx2.AsyncClient,
    url: str,
    admin: str,
    request: StudyRequest,
    bots: list[Bot],
    until: float,
) -> None:
    """A pair study: wait until every bot that left mid-way is out (``dropped``: the reaper
    lets them go ``CLOSE_GRACE_S`` after their page closed). A solo participant who left stays
    where they were (they may come back)."""
    if request.matching != "pairs":
        return
    limit = min(until, time.monotonic() + CLOSE_GRACE_S + 20)
    headers = {"Authorization": f"Bearer {admin}"}
    while time.monotonic() < limit:
        view = (await http.get(f"{url}/admin/studies/{request.id}", headers=headers)).json()
        busy = sum(p["state"] in ("playing", "waiting") for p in view["participants"])
        lone = sum(not (b.finished or b.left) for b in bots)
        if busy <= lone:
            return
        await anyio.sleep(0.2)


async def _exports(http: httpx2.AsyncClient, url: str, admin: str, study: str) -> dict[str, str]:
    """Every export, once the results store holds each finished negotiation's record."""
    headers = {"Authorization": f"Bearer {admin}"}

    async def get(name: str) -> str:
        response = await http.get(f"{url}/admin/studies/{study}/{name}.csv", headers=headers)
        response.raise_for_status()
        return response.text

    for _ in range(100):  # the writer stores results as they come: a bounded wait
        played = {row["key"] for row in _rows(await get("negotiations"))}
        if {row["key"] for row in _rows(await get("events"))} == played:
            break
        await anyio.sleep(0.05)
    return {name: await get(name) for name in EXPORTS}


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def check_exports(
    exports: dict[str, str], stored: dict[str, Any], request: StudyRequest
) -> list[str]:
    """What in the exports disagrees with the results store or the payoff rule (empty: all
    agree)."""
    problems: list[str] = []
    rows = _rows(exports["negotiations"])
    keys = {row["key"] for row in rows}
    if keys != set(stored):
        problems.append(
            f"keys: {len(keys - set(stored))} exported only, {len(set(stored) - keys)} stored only"
        )
    for row in rows:
        record = stored.get(row["key"])
        if record is None:
            continue
        outcome = record.record.outcome
        surplus = outcome.buyer_surplus if row["role"] == "buyer" else outcome.seller_surplus
        price = "" if outcome.price is None else f"{outcome.price:f}"
        if (row["status"], row["price"], Decimal(row["surplus"])) != (
            outcome.status,
            price,
            surplus,
        ):
            problems.append(f"{row['key']} ({row['participant']}): not as stored")
    rule = request.payoff
    for payment in _rows(exports["payments"]):
        if rule is None or not payment["total"]:
            continue
        mine = [r for r in rows if r["participant"] == payment["participant"]]
        paying = sum((Decimal(r["surplus"]) for r in mine if r["pays"] == "true"), Decimal(0))
        earnings = max((rule.exchange_rate * paying).quantize(CENT, ROUND_HALF_UP), Decimal(0))
        if Decimal(payment["total"]) != rule.show_up_fee + earnings:
            problems.append(
                f"{payment['participant']}: paid {payment['total']}, the rule says "
                f"{rule.show_up_fee + earnings:f}"
            )
    return problems


def costs(payments: list[dict[str, str]]) -> tuple[Decimal, Decimal, Decimal, Decimal, int]:
    """Median, 95th percentile (nearest rank), largest and total payment, and how many are
    paid."""
    totals = sorted(Decimal(p["total"]) for p in payments if p["total"])
    if not totals:
        return Decimal(0), Decimal(0), Decimal(0), Decimal(0), 0
    n = len(totals)
    median = (totals[(n - 1) // 2] + totals[n // 2]) / 2
    p95 = totals[max(math.ceil(0.95 * n) - 1, 0)]
    return median.quantize(CENT), p95, totals[-1], sum(totals, Decimal(0)), n


def summary(done: SimulatedStudy, out: Path) -> str:
    """The simulation in a few lines."""
    request = done.request
    payments = _rows(done.exports["payments"])
    states: dict[str, int] = {}
    for p in payments:
        states[p["state"]] = states.get(p["state"], 0) + 1
    treatments = [t.name for t in request.design.treatments]
    lines = [
        f"study {request.id}: {len(done.bots)} participants, {request.matching}, "
        f"{request.negotiations} paid negotiation(s) each"
        + (f", {request.design.practice} practice" if request.design.practice else "")
        + (", a quiz" if request.design.quiz else "")
        + (f", treatments {', '.join(treatments)}" if treatments else ""),
        "states: " + ", ".join(f"{state} {n}" for state, n in sorted(states.items())),
    ]
    if treatments:
        counts = {t: sum(p["treatment"] == t for p in payments) for t in treatments}
        lines.append("assigned: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    statuses: dict[str, int] = {}
    for bot in done.bots:
        for code, n in bot.stats.items():
            statuses[code] = statuses.get(code, 0) + n
    lines.append(
        "requests: "
        + ", ".join(f"{code} {n}" for code, n in sorted(statuses.items()))
        + (" (a restart half way)" if done.restarted else "")
    )
    verdict = "match" if not done.mismatches else f"DO NOT match ({len(done.mismatches)})"
    lines.append(
        f"exports: {out}/ ({len(done.exports)} files); {done.stored} stored negotiations, "
        f"the exports {verdict} the results store and the payoff rule"
    )
    lines += [f"  {problem}" for problem in done.mismatches[:10]]
    if request.payoff is not None:
        median, p95, top, total, n = costs(payments)
        cur = request.payoff.currency
        lines.append(
            f"payments ({cur}, bots' scripted play): median {median:f}, 95th percentile "
            f"{p95:f}, largest {top:f} per participant; total {total:f} for {n} paid"
        )
    alone = [b.label for b in done.bots if b.lonely and not b.finished]
    if alone:
        limit = request.max_wait_s
        then = "waits on" if limit is None else f"times out after {duration(limit)}"
        lines.append(f"left waiting with no one to match: {len(alone)} (the study {then})")
    stuck = [b.label for b in done.bots if not (b.finished or b.left or b.lonely)]
    if stuck:
        lines.append(f"unfinished: {len(stuck)} ({', '.join(stuck[:5])})")
    lines.append(f"wall time: {done.wall_s:.1f} s")
    return "\n".join(lines) + "\n"


@asynccontextmanager
async def _server(store_path: Path, port: int, admin: str) -> AsyncGenerator[RoomRegistry]:
    """A server of the simulation's own on a loopback port, restored from its journals (a
    second start is a restart), until the block ends; then stopped as a served one is."""
    writer = ResultWriter.beside(ResultsStore(store_path))
    writer.recover()
    registry = RoomRegistry(
        writer=writer, resolve_house=resolve, journals=Journals.beside(store_path)
    )
    try:
        registry.restore()
        app = build_http_app(registry, admin_token=admin, host=HOST, port=port)
        server = uvicorn.Server(uvicorn_config(app, host=HOST, port=port, log_level="warning"))
        async with anyio.create_task_group() as group:
            reaper = anyio.CancelScope()

            async def reap() -> None:
                with reaper:
                    await registry.reap(REAP_S)

            group.start_soon(server.serve)
            group.start_soon(reap)
            with anyio.fail_after(10):
                while not server.started:  # noqa: ASYNC110  (uvicorn offers no started event)
                    await anyio.sleep(0.01)
            try:
                yield registry
            finally:
                server.should_exit = True
                reaper.cancel()
    finally:
        registry.close()
        close_store(writer)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])

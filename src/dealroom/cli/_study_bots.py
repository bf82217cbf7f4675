"""The bots of ``dealroom study simulate``: each plays one participant through the routes a
participant's browser uses (``/web/study/ID/join``, ``/web/api/seat``, its calls, consent, quiz,
page events and questionnaire), as a person would, over loopback HTTP.

A bot reads its page (``GET /web/api/seat``) and does the one thing the page asks for next:
agree to the consent, answer the quiz (from the study's own rules; a bot told to make a mistake
gets its first attempt wrong), play the negotiation in front of it, press *Next*, answer the
questionnaire. Its bargaining is scripted and simple: it accepts a live offer that leaves it a
surplus, else offers from a margin of its own value that narrows with each offer to ``FLOOR``;
after ``OFFERS`` offers it waits for the house agent's concessions (the virtual clock) or walks
away (the wall clock, where waiting would take real time). A bot that ``leaves`` closes its page
(the ``close`` page event) at its first page (the consent, or the quiz), or during a paid
negotiation (once it holds an event), and is heard from no more.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

import anyio
import httpx2

from dealroom.protocol.study import StudyRequest
from dealroom.protocol.study_quiz import quiz_questions

OFFERS = 6
"""Offers a bot makes in one negotiation before it walks away."""
MARGIN = Decimal("0.30")
"""A bot's first offer: its value less (buyer) or plus (seller) this share of it."""
FLOOR = Decimal("0.05")
"""A bot's last offer keeps this share of its value as its margin."""
WAIT_S = 0.5
"""A bot's ``wait_for_opponent`` timeout (seconds on the negotiation's clock)."""
BOT_POLL_S = 0.05
"""How often a waiting bot reads its page again."""

Leaves = Literal["start", "negotiation"]
Pause = Callable[[dict[str, Any]], bool]
"""Whether a bot stops (for now) at the page it reads: a simulation's restart point."""


@dataclass(slots=True)
class Bot:
    """One simulated participant."""

    index: int
    token: str | None
    """Their seat-page token (invited), or None until their visit to the study's URL."""
    label: str
    leaves: Leaves | None = None
    mistake: bool = False
    """Their first attempt at the quiz is wrong."""
    finished: bool = False
    """Their part is over and their page shows the completion (code or link)."""
    left: bool = False
    waiting: bool = False
    """Their page said, when last read, that they wait for a partner."""
    lonely: bool = False
    """They stopped waiting for a partner no one was left to be (the study would time them
    out after its waiting limit)."""
    attempts: int = 0
    calls: int = 0
    ended: str | None = None
    stats: dict[str, int] = field(default_factory=dict[str, int])


def quiz_answers(request: StudyRequest) -> dict[tuple[str, tuple[str, ...]], int]:
    """The right choice of every question the study may ask, by its text and choices."""
    names = [t.name for t in request.design.treatments] or [None]
    return {(q.text, q.choices): q.answer for name in names for q in quiz_questions(request, name)}


class Runner:
    """Runs bots against one server (``url``) of one study."""

    def __init__(self, http: httpx2.AsyncClient, url: str, request: StudyRequest) -> None:
        self.http = http
        self.url = url
        self.request = request
        self.answers = quiz_answers(request)

    async def enter(self, bot: Bot) -> None:
        """A bot without a token visits the study's URL with its label (once per label)."""
        join = self.request.join
        if bot.token is not None or join is None:
            return
        query = {join.label: bot.label, **{name: f"sim-{name.lower()}" for name in join.ids}}
        response = await self.http.get(f"{self.url}/web/study/{self.request.id}/join", params=query)
        location = response.headers.get("location", "")
        if response.status_code != 303 or "#token=" not in location:
            raise RuntimeError(f"join refused: {response.status_code} {response.text[:80]}")
        bot.token = location.partition("#token=")[2]

    async def run(self, bot: Bot, *, pause: Pause, until: float) -> None:
        """Play until the bot's part is over, it leaves, ``pause`` says stop, or ``until``."""
        await self.enter(bot)
        await self._post(bot, "page", {"event": "open"})
        while time.monotonic() < until and not bot.finished and not bot.left:
            view = await self._get(bot)
            bot.waiting = bool(view.get("waiting"))
            if pause(view):
                return
            await self.step(bot, view)

    async def step(self, bot: Bot, view: dict[str, Any]) -> None:
        """The one thing the page asks for next."""
        completion = view.get("completion")
        if completion is not None:
            bot.ended = str(completion["ended"])
            if completion["questions"]:
                answers = {
                    q["name"]: (q["choices"][0] if q["choices"] else "A simulated answer.")
                    for q in completion["questions"]
                }
                await self._post(bot, "form", {"answers": answers})
            else:
                bot.finished = True
            return
        if bot.leaves == "start":  # gone after a look at the first page
            await self._leave(bot)
            return
        if view["needs_consent"]:
            await self._post(bot, "consent", {})
            return
        if view["kind"] == "lobby":
            if view["quiz"]:
                await self._quiz(bot, view["quiz"])
            else:
                await anyio.sleep(BOT_POLL_S)  # waiting for a partner, or a room being set up
            return
        observation = view["observation"]
        if observation["outcome"] is not None:
            await self._call(bot, "new_negotiation", {})
            return
        if bot.leaves == "negotiation" and not view["practice"] and observation["events"]:
            await self._leave(bot)
            return
        await self._bargain(bot, view)

    async def _quiz(self, bot: Bot, questions: list[dict[str, Any]]) -> None:
        answers = [self.answers[(q["text"], tuple(q["choices"]))] for q in questions]
        if bot.mistake and bot.attempts == 0:
            answers[0] = (answers[0] + 1) % len(questions[0]["choices"])
        bot.attempts += 1
        await self._post(bot, "quiz", {"answers": answers})

    async def _bargain(self, bot: Bot, view: dict[str, Any]) -> None:
        role, observation = view["role"], view["observation"]
        value = Decimal(str(observation["private_value"]))
        buyer = role == "buyer"
        theirs = [o for o in observation["live_offers"] if o["by"] != role]
        if theirs:
            price = Decimal(str(theirs[-1]["price"]))
            if (price <= value) if buyer else (price >= value):
                await self._call(bot, "accept", {"offer_id": theirs[-1]["offer_id"]})
                return
        made = sum(e["type"] == "offer_made" and e["by"] == role for e in observation["events"])
        if made >= OFFERS:  # a house agent may still concede by the deadline
            if view["clock"] == "virtual":
                await self._call(bot, "wait_for_opponent", {})
            else:
                await self._call(bot, "walk_away", {})
            return
        margin = FLOOR + (MARGIN - FLOOR) * (OFFERS - 1 - made) / (OFFERS - 1)
        price = value * (1 - margin if buyer else 1 + margin)
        await self._call(bot, "make_offer", {"price": float(round(max(price, Decimal("0.01")), 2))})
        await self._call(bot, "wait_for_opponent", {"timeout_s": WAIT_S})

    async def _leave(self, bot: Bot) -> None:
        await self._post(bot, "page", {"event": "close"})
        bot.left = True

    async def _get(self, bot: Bot) -> dict[str, Any]:
        response = await self.http.get(f"{self.url}/web/api/seat", headers=_auth(bot))
        _count(bot, response)
        response.raise_for_status()
        return dict(response.json())

    async def _post(self, bot: Bot, route: str, body: dict[str, Any]) -> None:
        url = f"{self.url}/web/api/seat/{route}"
        _count(bot, await self.http.post(url, json=body, headers=_auth(bot)))

    async def _call(self, bot: Bot, tool: str, arguments: dict[str, Any]) -> None:
        """One tool call; a refusal (the other side acted first, the clock ran out) is read
        again from the page on the next step."""
        body = {"tool": tool, "arguments": arguments}
        url = f"{self.url}/web/api/seat/call"
        _count(bot, await self.http.post(url, json=body, headers=_auth(bot)))
        bot.calls += 1


def _auth(bot: Bot) -> dict[str, str]:
    assert bot.token is not None
    return {"Authorization": f"Bearer {bot.token}"}


def _count(bot: Bot, response: httpx2.Response) -> None:
    """Every response by status (the simulation reports any error status)."""
    key = str(response.status_code)
    bot.stats[key] = bot.stats.get(key, 0) + 1

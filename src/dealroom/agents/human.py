"""A person in a seat: commands typed at a terminal, the negotiation printed as it happens.

Commands (``help`` lists them)::

    offer PRICE [MESSAGE]    make a binding offer          accept [OFFER_ID]   accept their offer
    reject [OFFER_ID] [MSG]  reject their offer            say TEXT            send a message
    wait [SECONDS]           wait for the other side       state               show everything
    walk [MESSAGE]           walk away (ends it)           help                this list

``accept`` and ``reject`` default to the other side's live offer. Every line the person sees is
built from their own seat's view, exactly as an MCP client would get it, in the terminal's own
commands: the briefing, hints and refusals are ``dealroom.protocol.people_text``'s for the
``terminal`` surface (never a tool name).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, TextIO

import anyio

from dealroom.client.seat import SeatClient, SeatError
from dealroom.play.players import PlayerFailed, SeatContext
from dealroom.protocol import (
    Accept,
    Action,
    ActionResult,
    Event,
    LiveOffer,
    MakeOffer,
    Reject,
    Role,
    SendMessage,
    WaitResult,
    WalkAway,
    people_log,
    people_text,
)
from dealroom.protocol.arguments import DEFAULT_WAIT_S, MAX_WAIT_S
from dealroom.protocol.text import money
from dealroom.protocol.wire import ClockKind
from dealroom.server.texts import people_briefing, transcript

HELP = f"""Commands:
  offer PRICE [MESSAGE]     make a binding offer (it replaces your previous one)
  accept [OFFER_ID]         accept their live offer (the deal closes at its price)
  reject [OFFER_ID] [MSG]   reject their live offer
  say TEXT                  send a message (cheap talk, binds nobody)
  wait [SECONDS]            wait for the other side ({DEFAULT_WAIT_S:g} s; at most {MAX_WAIT_S:g})
  walk [MESSAGE]            walk away: the negotiation ends without a deal
  state                     show the item, your value, the offers and the time left
  help                      show this list"""


class HumanPlayer:
    """A ``Player`` driven by lines of text (a terminal, or any pair of streams)."""

    name = "human"

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self._in = stdin or sys.stdin
        self._out = stdout or sys.stdout
        self._role: Role = "buyer"
        self._currency = "USD"
        self._live: tuple[LiveOffer, ...] = ()
        self._clock: ClockKind = "virtual"

    def _say(self, text: str) -> None:
        self._out.write(text + "\n")
        self._out.flush()

    async def _read(self) -> str | None:
        self._out.write("> ")
        self._out.flush()
        line = await anyio.to_thread.run_sync(self._in.readline, abandon_on_cancel=True)
        return None if line == "" else line.strip()

    async def play(self, seat: SeatClient, context: SeatContext) -> Mapping[str, Any]:
        """Read commands until the negotiation ends."""
        self._role = context.role
        state = await seat.get_state()
        self._currency = state.observation.scenario.currency
        self._live = state.observation.live_offers
        self._clock = state.clock
        self._say(
            people_briefing(state.observation, context.rules, clock=state.clock, surface="terminal")
        )
        self._say(HELP)
        self._show_events(state.observation.events)
        commands = 0
        while True:
            line = await self._read()
            if line is None:
                raise PlayerFailed("the input ended before the negotiation did", {"commands": 0})
            if not line:
                continue
            commands += 1
            try:
                result = await self._run(seat, line)
            except SeatError as error:
                self._say(f"refused: {people_text.refusal(error.payload, 'terminal')}")
                continue
            if result is None:
                continue
            self._show(result)
            if result.outcome is not None:
                return {"commands": commands}

    async def _run(self, seat: SeatClient, line: str) -> ActionResult | WaitResult | None:
        word, _, rest = line.partition(" ")
        command = _COMMANDS.get(word.lower())
        if command is None:
            self._say(f"unknown command {word!r}; type help")
            return None
        if command == "help":
            self._say(HELP)
            return None
        if command == "state":
            state = await seat.get_state()
            self._live = state.observation.live_offers
            self._say(transcript(state.observation))
            return None
        if command == "wait":
            seconds = _number(rest) if rest.strip() else Decimal(str(DEFAULT_WAIT_S))
            if seconds is None or not 0 <= seconds <= Decimal(str(MAX_WAIT_S)):
                self._say(f"wait takes a number of seconds from 0 to {MAX_WAIT_S:g}")
                return None
            return await seat.wait_for_opponent(float(seconds))
        action = self._action(command, rest.strip())
        return None if action is None else await seat.act(action)

    def _action(self, command: str, rest: str) -> Action | None:
        match command:
            case "offer":
                price_text, _, message = rest.partition(" ")
                price = _number(price_text)
                if price is None:
                    self._say("offer takes a price, e.g. offer 950 or offer 950 final offer")
                    return None
                return MakeOffer(price=price, message=message.strip() or None)
            case "accept" | "reject":
                first, _, message = rest.partition(" ")
                offer_id = first if first.startswith("o") and first[1:].isdigit() else None
                if offer_id is None:
                    message = rest
                    theirs = next((o for o in self._live if o.by != self._role), None)
                    if theirs is None:
                        self._say("there is no live offer from the other side")
                        return None
                    offer_id = theirs.offer_id
                if command == "accept":
                    return Accept(offer_id=offer_id)
                return Reject(offer_id=offer_id, message=message.strip() or None)
            case "say":
                if not rest:
                    self._say("say takes some text")
                    return None
                return SendMessage(text=rest)
            case _:
                return WalkAway(message=rest or None)

    def _show(self, result: ActionResult | WaitResult) -> None:
        self._live = result.live_offers
        self._show_events(result.events)
        if result.outcome is not None:
            o = result.outcome
            price = "" if o.price is None else f" at {money(o.price, self._currency)}"
            status = "a deal" if o.price is not None else "no deal"
            self._say(
                f"The negotiation is over: {status}{price} ({people_log.ending(o.end_reason)}); "
                f"your surplus {money(o.surplus, self._currency)}."
            )
            return
        if isinstance(result, WaitResult) and result.woke == "pending":
            self._say("They are still thinking.")
        hint = people_text.person_hint(
            self._role,
            result.live_offers,
            result.outcome,
            currency=self._currency,
            clock=self._clock,
            surface="terminal",
        )
        now, left = people_log.clock_time(result.now), people_log.clock_time(result.time_left)
        self._say(f"[{now}, {left} left] {hint}")

    def _show_events(self, events: tuple[Event, ...]) -> None:
        for line in people_log.person_lines(events, self._currency, self._role):
            self._say(f"  {line}")


_COMMANDS: dict[str, str] = {
    "offer": "offer",
    "o": "offer",
    "accept": "accept",
    "a": "accept",
    "reject": "reject",
    "r": "reject",
    "say": "say",
    "msg": "say",
    "wait": "wait",
    "w": "wait",
    "walk": "walk",
    "quit": "walk",
    "state": "state",
    "s": "state",
    "help": "help",
    "?": "help",
}


def _number(text: str) -> Decimal | None:
    try:
        value = Decimal(text.replace(",", "").lstrip("$").strip())
    except InvalidOperation:
        return None
    return value if value.is_finite() else None

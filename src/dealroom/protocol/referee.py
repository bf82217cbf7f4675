"""The referee: a pure state machine that validates and applies actions and emits events.

It never reads a clock: every call takes ``now`` (clock seconds). A refused action raises
RuleViolation and leaves the negotiation as it was; the only trace it leaves is the seat's
invalid-action count, and the count that reaches the limit forfeits the negotiation.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, TypeVar, assert_never

from dealroom.protocol._base import (
    CENT,
    ROLES,
    Role,
    is_finite_number,
    other,
    round_ms,
    to_cents,
    trusted,
    trusted_builder,
)
from dealroom.protocol.actions import Accept, Action, MakeOffer, Reject, SendMessage, WalkAway
from dealroom.protocol.errors import ErrorCode, RuleViolation
from dealroom.protocol.events import (
    EndReason,
    Event,
    MessageSent,
    NegotiationEnded,
    OfferAccepted,
    OfferMade,
    OfferRejected,
    OfferWithdrawn,
    WalkedAway,
)
from dealroom.protocol.observation import LiveOffer, Observation
from dealroom.protocol.outcome import Outcome, PerRole, score, seat_outcome
from dealroom.protocol.rules import DEFAULT_RULES, Rules
from dealroom.protocol.scenario import Scenario

_AnyEvent = TypeVar(
    "_AnyEvent",
    OfferMade,
    OfferWithdrawn,
    OfferAccepted,
    OfferRejected,
    MessageSent,
    WalkedAway,
    NegotiationEnded,
)


def _attached(message: str | None) -> str | None:
    """A blank message attached to an action is no message (send_message refuses blank text)."""
    return message if message is not None and message.strip() else None


_withdrawn = trusted_builder(OfferWithdrawn)
_made = trusted_builder(OfferMade)
_accepted = trusted_builder(OfferAccepted)
_ended = trusted_builder(NegotiationEnded)
_live_offer = trusted_builder(LiveOffer)
_observation = trusted_builder(Observation)


class Referee:
    """Holds one negotiation's state and enforces the rules (see docs/design.md)."""

    def __init__(self, scenario: Scenario, rules: Rules = DEFAULT_RULES) -> None:
        self.scenario = scenario
        self.rules = rules
        self._public = scenario.public()
        self._deadline = scenario.deadline
        self._values: dict[Role, Decimal] = {r: scenario.private_value(r) for r in ROLES}
        self._max_price = to_cents(scenario.list_price * Decimal(repr(rules.max_price_multiple)))
        self._events: list[Event] = []
        self._frozen: tuple[Event, ...] = ()
        """The events as a tuple, rebuilt only once new ones came (observations share it)."""
        self._offers: dict[str, LiveOffer] = {}
        self._live: dict[Role, LiveOffer | None] = {"buyer": None, "seller": None}
        """Each seat's live offer: an offer is live exactly while it is its seat's entry here
        (a new own offer, a rejection or the end replaces it)."""
        self._live_offers: tuple[LiveOffer, ...] | None = ()
        """``live_offers()``, cached until the live offers change (None: changed)."""
        self._max_actions = rules.max_actions
        self._actions = {"buyer": 0, "seller": 0}
        self._offers_made = {"buyer": 0, "seller": 0}
        self._messages = {"buyer": 0, "seller": 0}
        self._invalid = {"buyer": 0, "seller": 0}
        self._outcome: Outcome | None = None

    # -- reading -------------------------------------------------------------------------

    @property
    def events(self) -> tuple[Event, ...]:
        """Every event so far."""
        if len(self._frozen) != len(self._events):
            self._frozen = tuple(self._events)
        return self._frozen

    @property
    def event_count(self) -> int:
        """Number of events so far (the seq of the last one)."""
        return len(self._events)

    def events_since(self, seq: int) -> list[Event]:
        """Events with a seq greater than ``seq``."""
        return self._events[seq:]

    @property
    def is_open(self) -> bool:
        """True until the negotiation ends."""
        return self._outcome is None

    @property
    def outcome(self) -> Outcome | None:
        """The scored outcome once ended (holds both sides' surpluses: not for seats)."""
        return self._outcome

    def invalid_count(self, role: Role) -> int:
        """Invalid actions the seat has made so far."""
        return self._invalid[role]

    def live_offers(self) -> tuple[LiveOffer, ...]:
        """Live offers, seller's first."""
        offers = self._live_offers
        if offers is None:
            live = self._live
            offers = self._live_offers = tuple(
                o for role in ("seller", "buyer") if (o := live[role]) is not None
            )
        return offers

    def observe(self, role: Role, now: float) -> Observation:
        """What ``role`` knows at ``now``. Never includes the other side's value."""
        end = self._outcome
        deadline = self._deadline
        clock = end.time if end is not None else (now if now < deadline else deadline)
        offers = self._live_offers
        if offers is None:
            offers = self.live_offers()
        events = self._frozen
        if len(events) != len(self._events):
            events = self.events
        # Every field comes from validated state: construct without validating again (the hot
        # path of every simulation).
        return _observation(
            {
                "role": role,
                "scenario": self._public,
                "private_value": self._values[role],
                "now": clock,
                "time_left": round_ms(deadline - clock),
                "live_offers": offers,
                "events": events,
                "outcome": seat_outcome(end, role) if end is not None else None,
            }
        )

    # -- acting --------------------------------------------------------------------------

    def expire(self, now: float) -> list[Event]:
        """End the negotiation without a deal if ``now`` is at or past the deadline."""
        if self._outcome is None and now >= self.scenario.deadline:
            return [self._end("deadline", None, None, self.scenario.deadline)]
        return []

    def apply(self, role: Role, action: Action, now: float) -> list[Event]:
        """Validate and apply one action at clock time ``now``; return the events it caused.

        Raises RuleViolation (state unchanged, invalid count raised) if the action breaks a rule.
        """
        if self._outcome is not None:
            raise RuleViolation(ErrorCode.NEGOTIATION_CLOSED, "The negotiation has ended.")
        if now >= self._deadline:
            self.expire(now)
            raise RuleViolation(
                ErrorCode.DEADLINE_PASSED,
                "The deadline has passed; the negotiation ended without a deal.",
            )
        try:
            cents = self._validate(role, action)
        except RuleViolation as violation:
            raise self._count_invalid(role, violation, now) from None
        events = self._events
        start = len(events)
        self._do(role, action, now, cents)
        actions = self._actions
        count = actions[role] = actions[role] + 1
        if count >= self._max_actions and self._outcome is None:
            self._end("action_limit", role, None, now)
        return events[start:]

    def close(self, reason: EndReason, by: Role | None, now: float) -> list[Event]:
        """End the negotiation without a deal and without an action of its own (a market
        closing this thread: the item sold to another buyer, the seller's walk-away, forfeit or
        turn budget elsewhere). Nothing happens if it has ended already."""
        if self._outcome is not None:
            return []
        return [self._end(reason, by, None, now)]

    # -- validation (no mutation) ----------------------------------------------------------

    def _validate(self, role: Role, action: Action) -> Decimal | None:
        """Raise RuleViolation if ``action`` breaks a rule; an offer's price in cents."""
        match action:
            case MakeOffer(price=price, message=message):
                cents = self._check_price(price)
                if message is not None:
                    self._check_message(message)
                return cents
            case Accept(offer_id=offer_id):
                self._check_their_live_offer(role, offer_id)
            case Reject(offer_id=offer_id, message=message):
                self._check_their_live_offer(role, offer_id)
                self._check_message(message)
            case SendMessage(text=text):
                if not text.strip():
                    raise RuleViolation(ErrorCode.MESSAGE_EMPTY, "The message is empty.")
                self._check_message(text)
            case WalkAway(message=message):
                self._check_message(message)
            case _:
                assert_never(action)
        return None

    def _check_price(self, price: Decimal) -> Decimal:
        cents: Decimal | None
        if type(price) is Decimal and price.is_finite():  # every offer: checked inline
            try:
                # The rounding passed by position: a keyword argument to a Decimal method
                # costs as much again as the quantisation itself.
                cents = price.quantize(CENT, ROUND_HALF_UP)
            except InvalidOperation:  # finite but too large to quantise: far above the maximum
                cents = None
        elif not is_finite_number(price):
            raise RuleViolation(ErrorCode.PRICE_NOT_FINITE, "The price must be a finite number.")
        else:
            try:
                cents = to_cents(price)
            except ValueError:  # finite but too large to quantise: far above the maximum
                cents = None
        if cents is None or cents <= 0 or cents > self._max_price:
            raise RuleViolation(
                ErrorCode.PRICE_OUT_OF_RANGE,
                f"The price must be above 0 and at most {self._max_price} "
                f"({self.rules.max_price_multiple:g} times the list price).",
            )
        return cents

    def _check_message(self, message: str | None) -> None:
        if message is not None and len(message) > self.rules.max_message_chars:
            raise RuleViolation(
                ErrorCode.MESSAGE_TOO_LONG,
                f"Messages are limited to {self.rules.max_message_chars} characters.",
            )

    def _check_their_live_offer(self, role: Role, offer_id: str) -> None:
        offer = self._offers.get(offer_id)
        if offer is None:
            raise RuleViolation(ErrorCode.OFFER_NOT_FOUND, f"There is no offer {offer_id!r}.")
        if offer.by == role:
            raise RuleViolation(
                ErrorCode.OWN_OFFER, "You can only accept or reject the other side's offer."
            )
        if self._live[offer.by] is not offer:
            raise RuleViolation(
                ErrorCode.OFFER_NOT_LIVE,
                f"Offer {offer_id!r} is no longer live (withdrawn or rejected).",
            )

    def _count_invalid(self, role: Role, violation: RuleViolation, now: float) -> RuleViolation:
        self._invalid[role] += 1
        if self._invalid[role] < self.rules.max_invalid_actions:
            return violation
        self._end("forfeit", role, None, now)
        return RuleViolation(
            violation.code,
            f"{violation.message} That was invalid action number {self._invalid[role]}: "
            "you forfeited and the negotiation ended without a deal.",
        )

    # -- mutation (only after validation) -----------------------------------------------------

    def _do(self, role: Role, action: Action, now: float, cents: Decimal | None) -> None:
        match action:
            case MakeOffer(message=message):
                assert cents is not None
                self._make_offer(role, cents, None if message is None else _attached(message), now)
            case Accept(offer_id=offer_id):
                price = self._offers[offer_id].price
                events = self._events
                events.append(
                    _accepted(
                        {
                            "seq": len(events) + 1,
                            "t": now,
                            "by": role,
                            "type": "offer_accepted",
                            "offer_id": offer_id,
                            "price": price,
                        }
                    )
                )
                self._end("accepted", role, price, now)
            case Reject(offer_id=offer_id, message=message):
                self._live[other(role)] = None
                self._live_offers = None
                message = _attached(message)
                self._count_message(role, message)
                self._emit(OfferRejected, now, role, offer_id=offer_id, message=message)
            case SendMessage(text=text):
                self._count_message(role, text)
                self._emit(MessageSent, now, role, text=text)
            case WalkAway(message=message):
                message = _attached(message)
                self._count_message(role, message)
                self._emit(WalkedAway, now, role, message=message)
                self._end("walk_away", role, None, now)
            case _:
                assert_never(action)

    def _make_offer(self, role: Role, price: Decimal, message: str | None, now: float) -> None:
        # The simulation's hot path: both events and the live offer are built from validated
        # values without validating again (every field, in field order).
        events = self._events
        seq = len(events) + 1
        live = self._live
        previous = live[role]
        if previous is not None:
            events.append(
                _withdrawn(
                    {
                        "seq": seq,
                        "t": now,
                        "by": role,
                        "type": "offer_withdrawn",
                        "offer_id": previous.offer_id,
                    }
                )
            )
            seq += 1
        offers = self._offers
        offer_id = f"o{len(offers) + 1}"
        offers[offer_id] = live[role] = _live_offer(
            {"offer_id": offer_id, "by": role, "price": price, "t": now}
        )
        self._live_offers = None
        self._offers_made[role] += 1
        if message is not None:
            self._messages[role] += 1
        events.append(
            _made(
                {
                    "seq": seq,
                    "t": now,
                    "by": role,
                    "type": "offer_made",
                    "offer_id": offer_id,
                    "price": price,
                    "message": message,
                }
            )
        )

    def _count_message(self, role: Role, text: str | None) -> None:
        if text is not None:
            self._messages[role] += 1

    def _emit(self, kind: type[_AnyEvent], now: float, by: Role | None, **fields: Any) -> Event:
        event = kind(seq=len(self._events) + 1, t=now, by=by, **fields)
        self._events.append(event)
        return event

    def _end(self, reason: EndReason, by: Role | None, price: Decimal | None, now: float) -> Event:
        for role in ROLES:
            self._live[role] = None
        self._live_offers = None
        events = self._events
        event = _ended(
            {
                "seq": len(events) + 1,
                "t": now,
                "by": by,
                "type": "negotiation_ended",
                "reason": reason,
                "price": price,
            }
        )
        events.append(event)
        self._outcome = score(
            self.scenario,
            end_reason=reason,
            ended_by=by,
            price=price,
            time=now,
            offers=trusted(PerRole, **self._offers_made),
            messages=trusted(PerRole, **self._messages),
            invalid_actions=trusted(PerRole, **self._invalid),
        )
        return event

"""The market's referee: N bilateral referees (one per buyer's thread) under the market's rules.

Pure, like ``Referee``: every call takes ``now``. A buyer's action goes to its thread's referee
unchanged. A seller's action names its thread (``Addressed``); the market adds what no thread
can know alone:

- the first accepted offer sells the item: every other open thread ends (``sold_elsewhere``);
- the seller's walk-away addressed to no buyer walks away from every open thread;
- the seller's invalid actions and its valid actions (the turn budget) count market-wide: the
  one that reaches ``rules.max_invalid_actions`` forfeits every open thread, the one that spends
  ``seller_budget`` ends them all (``action_limit``);
- the deadline ends every open thread; the market is over when no thread is open.

With one buyer each rule coincides with the bilateral one, so the thread's record is the
bilateral record of the same scenario (tests/engine/test_market_play.py holds it).
"""

from __future__ import annotations

from decimal import Decimal

from dealroom.protocol._base import Model, Money, Role, round_ms, trusted
from dealroom.protocol.actions import Action, WalkAway
from dealroom.protocol.errors import ErrorCode, RuleViolation
from dealroom.protocol.events import EndReason, Event, NegotiationEnded
from dealroom.protocol.market import (
    Addressed,
    MarketEndReason,
    MarketObservation,
    MarketRules,
    MarketScenario,
    MarketSeatOutcome,
    ThreadView,
)
from dealroom.protocol.observation import Observation
from dealroom.protocol.outcome import Outcome, Status, share
from dealroom.protocol.referee import Referee


class MarketEntry(Model):
    """One event of the market's log: the thread it happened in, and the event (whose seq
    counts within that thread)."""

    buyer: str
    event: Event


class MarketOutcome(Model):
    """The scored market. Holds private values' consequences: never sent to a seat."""

    status: Status
    end_reason: MarketEndReason
    buyer: str | None
    """Who bought the item; null without a sale."""
    price: Money | None
    time: float
    best_value: Money
    """The highest buyer value."""
    gains: Money
    """The most gains any sale could make: best_value - seller_cost."""
    seller_surplus: Money
    """price - seller_cost on a sale, 0 otherwise."""
    buyer_surplus: Money
    """The buyer's value - price on a sale, 0 otherwise (every other buyer gets 0)."""
    efficiency: float | None
    """Realised gains / the most gains: (value of the buyer - cost) / (best value - cost) on a
    sale, 0 without one; null when no buyer values the item above the cost."""
    allocative: bool | None
    """The item went to a buyer with the highest value; null without a sale."""
    seller_share: float | None
    """seller_surplus / gains: the seller's share of the most it could have made (the best
    price any buyer would have paid less its cost), on a sale with gains > 0; null otherwise."""
    seller_ir_violation: bool
    """The seller sold below its cost."""
    buyer_ir_violation: bool
    """The buyer paid more than its value."""
    seller_actions: int
    """The seller's valid actions in the whole market."""
    threads: tuple[Outcome, ...]
    """Each thread's bilateral outcome, in the order of the buyers."""


class MarketRecord(Model):
    """A finished market as it is printed, stored and replayed."""

    scenario: MarketScenario
    seller: str
    """Agent spec in the seller's seat."""
    buyers: tuple[str, ...]
    """Agent spec in each buyer's seat, in the order of the buyers."""
    log: tuple[MarketEntry, ...]
    """Every event of every thread, in the order they happened."""
    outcome: MarketOutcome

    def thread_events(self, buyer: str) -> tuple[Event, ...]:
        """``buyer``'s thread, as its own bilateral event log."""
        return tuple(entry.event for entry in self.log if entry.buyer == buyer)


class MarketReferee:
    """Holds one market's state and enforces its rules."""

    def __init__(self, market: MarketScenario, rules: MarketRules) -> None:
        self.market = market
        self.rules = rules
        self._public = market.public()
        self.threads: dict[str, Referee] = {
            buyer: Referee(market.thread(buyer), rules.rules) for buyer in market.buyers
        }
        self.log: list[MarketEntry] = []
        self._budget = rules.seller_budget
        self._seller_actions = 0
        self._seller_invalid = 0
        self._closed: MarketEndReason | None = None
        """Why the market closed every thread itself (None: it has not)."""
        self._outcome: MarketOutcome | None = None

    # -- reading -------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """True until the market ends."""
        return self._outcome is None

    @property
    def outcome(self) -> MarketOutcome | None:
        """The scored market once ended."""
        return self._outcome

    def open_buyers(self) -> list[str]:
        """Buyers whose thread is open, in order."""
        return [buyer for buyer, referee in self.threads.items() if referee.is_open]

    def observe_buyer(self, buyer: str, now: float) -> Observation:
        """What ``buyer`` knows: its own thread only."""
        return self.threads[buyer].observe("buyer", now)

    def observe_seller(self, now: float) -> MarketObservation:
        """What the seller knows: every thread."""
        views: list[ThreadView] = []
        for buyer, referee in self.threads.items():
            seen = referee.observe("seller", now)
            views.append(
                trusted(
                    ThreadView,
                    buyer=buyer,
                    open=referee.is_open,
                    live_offers=seen.live_offers,
                    events=seen.events,
                )
            )
        end = self._outcome
        deadline = self.market.deadline
        clock = end.time if end is not None else min(now, deadline)
        return trusted(
            MarketObservation,
            market=self._public,
            private_value=self.market.seller_cost,
            now=clock,
            time_left=round_ms(deadline - clock),
            actions_left=max(0, self._budget - self._seller_actions),
            threads=tuple(views),
            outcome=None if end is None else self._seller_outcome(end),
        )

    # -- acting --------------------------------------------------------------------------

    def expire(self, now: float) -> list[MarketEntry]:
        """End every open thread if ``now`` is at or past the deadline."""
        if self._outcome is None and now >= self.market.deadline:
            return self._settle(
                [(b, r.expire(now)) for b, r in self.threads.items() if r.is_open], now
            )
        return []

    def apply_buyer(self, buyer: str, action: Action, now: float) -> list[MarketEntry]:
        """A buyer's action in its own thread (RuleViolation: refused, counted there)."""
        self._check_open(now)
        return self._settle([(buyer, self.threads[buyer].apply("buyer", action, now))], now)

    def apply_seller(self, item: Addressed, now: float) -> list[MarketEntry]:
        """A seller's addressed action (RuleViolation: refused, counted market-wide)."""
        self._check_open(now)
        try:
            batches = self._seller_batches(item, now)
        except RuleViolation as violation:
            raise self._seller_invalid_action(violation, now) from None
        self._seller_actions += 1
        if self._seller_actions >= self._budget:
            self._close_all("action_limit", "seller", now, batches)
        return self._settle(batches, now)

    # -- the seller ----------------------------------------------------------------------------

    def _seller_batches(self, item: Addressed, now: float) -> list[tuple[str, list[Event]]]:
        action, buyer = item.action, item.buyer
        if buyer is None:
            if not isinstance(action, WalkAway):
                raise RuleViolation(
                    ErrorCode.UNKNOWN_BUYER, f"Name the buyer your {action.type} is for."
                )
            batches = [
                (b, self.threads[b].apply("seller", action, now)) for b in self.open_buyers()
            ]
            self._closed = "walk_away"  # after the first thread took it (it validates it)
            return batches
        referee = self.threads.get(buyer)
        if referee is None:
            names = ", ".join(self.threads)
            raise RuleViolation(
                ErrorCode.UNKNOWN_BUYER, f"There is no buyer {buyer!r} (the buyers: {names})."
            )
        if not referee.is_open:
            raise RuleViolation(
                ErrorCode.NEGOTIATION_CLOSED, f"Your negotiation with {buyer} has ended."
            )
        return [(buyer, referee.apply("seller", action, now))]

    def _seller_invalid_action(self, violation: RuleViolation, now: float) -> RuleViolation:
        self._seller_invalid += 1
        if self._seller_invalid < self.rules.rules.max_invalid_actions:
            return violation
        batches: list[tuple[str, list[Event]]] = []
        self._close_all("forfeit", "seller", now, batches)
        self._settle(batches, now)
        if "you forfeited" in violation.message:  # one buyer: the thread said it already
            return violation
        return RuleViolation(
            violation.code,
            f"{violation.message} That was invalid action number {self._seller_invalid}: "
            "you forfeited and the market ended without a sale.",
        )

    # -- the market's own rules ----------------------------------------------------------------

    def _check_open(self, now: float) -> None:
        if self._outcome is not None:
            raise RuleViolation(ErrorCode.NEGOTIATION_CLOSED, "The market has ended.")
        if now >= self.market.deadline:
            self.expire(now)
            raise RuleViolation(
                ErrorCode.DEADLINE_PASSED,
                "The deadline has passed; the market ended without a sale.",
            )

    def _close_all(
        self,
        reason: EndReason,
        by: Role | None,
        now: float,
        batches: list[tuple[str, list[Event]]],
    ) -> None:
        if self._closed is None and reason != "sold_elsewhere":
            self._closed = "forfeit" if reason == "forfeit" else "action_limit"
        for buyer in self.open_buyers():
            batches.append((buyer, self.threads[buyer].close(reason, by, now)))

    def _settle(self, batches: list[tuple[str, list[Event]]], now: float) -> list[MarketEntry]:
        """Log the events; a sale ends every other thread; score once no thread is open."""
        sold = any(
            isinstance(event, NegotiationEnded) and event.reason == "accepted"
            for _, events in batches
            for event in events
        )
        if sold:
            self._close_all("sold_elsewhere", None, now, batches)
        start = len(self.log)
        self.log.extend(
            trusted(MarketEntry, buyer=buyer, event=event)
            for buyer, events in batches
            for event in events
        )
        if self._outcome is None and not self.open_buyers():
            self._outcome = self._score()
        return self.log[start:]

    def _end_reason(self, winner: str | None) -> MarketEndReason:
        if winner is not None:
            return "sold"
        if self._closed is not None:
            return self._closed
        last = self.log[-1].event if self.log else None
        if not isinstance(last, NegotiationEnded) or last.by is None:
            return "deadline"
        if last.by == "buyer":
            return "buyers_left"
        match last.reason:
            case "walk_away" | "forfeit" | "action_limit":
                return last.reason
            case "accepted" | "deadline" | "sold_elsewhere":
                return "deadline"

    def _score(self) -> MarketOutcome:
        market = self.market
        ended = {b: r.outcome for b, r in self.threads.items() if r.outcome is not None}
        outcomes = tuple(ended.values())
        winner = next((b for b, o in ended.items() if o.status == "deal"), None)
        end = max(o.time for o in outcomes)
        cost, best = market.seller_cost, market.best_value
        gains = best - cost
        zero = Decimal("0.00")
        price = None if winner is None else ended[winner].price
        if winner is None or price is None:
            seller = buyer_surplus = zero
            efficiency: float | None = 0.0 if gains > 0 else None
            allocative = seller_share = None
        else:
            value = market.value(winner)
            seller, buyer_surplus = price - cost, value - price
            efficiency = share(value - cost, gains)
            allocative = value == best
            seller_share = share(seller, gains)
        return trusted(
            MarketOutcome,
            status="deal" if winner is not None else "no_deal",
            end_reason=self._end_reason(winner),
            buyer=winner,
            price=price,
            time=end,
            best_value=best,
            gains=gains,
            seller_surplus=seller,
            buyer_surplus=buyer_surplus,
            efficiency=efficiency,
            allocative=allocative,
            seller_share=seller_share,
            seller_ir_violation=seller < 0,
            buyer_ir_violation=buyer_surplus < 0,
            seller_actions=self._seller_actions,
            threads=outcomes,
        )

    @staticmethod
    def _seller_outcome(outcome: MarketOutcome) -> MarketSeatOutcome:
        return trusted(
            MarketSeatOutcome,
            status=outcome.status,
            end_reason=outcome.end_reason,
            buyer=outcome.buyer,
            price=outcome.price,
            time=outcome.time,
            surplus=outcome.seller_surplus,
        )

"""Both seats throw random valid and invalid actions at the referee; its invariants must hold.

A small oracle predicts, from what the seats can see (events and live offers), whether each
action is refused and with which code, and what events an accepted one emits.

The leak invariant walks every field of an observation. Prices (offers the seats chose, which
may coincide with anything) and the seat's own surplus (its value minus a price) are the only
numbers that may equal the other side's value by chance; every other number and every string
(messages are letters) must not contain it.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from itertools import pairwise

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from dealroom.protocol import (
    ROLES,
    Accept,
    Action,
    ErrorCode,
    Event,
    Item,
    MakeOffer,
    MessageSent,
    NegotiationEnded,
    OfferAccepted,
    OfferMade,
    OfferRejected,
    OfferWithdrawn,
    Referee,
    Reject,
    Role,
    Rules,
    RuleViolation,
    Scenario,
    SendMessage,
    WalkAway,
    WalkedAway,
    other,
)

D = Decimal
CENT = D("0.01")
LIST_PRICE = D("100.00")

roles = st.sampled_from(ROLES)
odd_prices = st.sampled_from(
    [
        D("NaN"),
        D("-NaN"),
        D("sNaN"),
        D("Infinity"),
        D("-Infinity"),
        D("0"),
        D("-0"),
        D("-0.01"),
        D("0.004"),
        D("0.005"),
        D("1e30"),
        D("1E+999999"),
        D("1E-999999"),
        math.nan,
        math.inf,
        -math.inf,
        1e308,
    ]
)
sensible_prices = st.decimals(min_value=D("0.5"), max_value=D("150"), places=2)
prices = st.one_of(
    sensible_prices,  # one_of draws its branches about equally often: mostly valid
    sensible_prices,
    sensible_prices,
    st.decimals(min_value=D("-20"), max_value=D("1100"), places=3),
    odd_prices,
    st.floats(),
    st.decimals(),
)
texts = st.text(alphabet="ab \n", max_size=14)
messages = st.none() | texts


def _attached(message: str | None) -> str | None:
    """The referee records a blank message attached to an action as no message."""
    return message if message is not None and message.strip() else None


def value(units: int, cents: int) -> Decimal:
    return D(units) + D(cents) / 100


class RefereeMachine(RuleBasedStateMachine):
    referee: Referee
    now: float

    @initialize(
        buyer_units=st.integers(1, 1500),
        seller_units=st.integers(1, 1500),
        cents=st.integers(0, 49).map(lambda k: 2 * k + 1),  # odd: no integer or quarter
        multiple=st.sampled_from([0.5, 1.0, 2.5, 10.0]),
        max_chars=st.integers(1, 12),
        max_actions=st.integers(1, 30),
        max_invalid=st.integers(1, 12),
        deadline=st.sampled_from([20.0, 120.0]),
    )
    def start(
        self,
        buyer_units: int,
        seller_units: int,
        cents: int,
        multiple: float,
        max_chars: int,
        max_actions: int,
        max_invalid: int,
        deadline: float,
    ) -> None:
        self.scenario = Scenario(
            id="machine",
            item=Item(name="Thing", category="misc", description="A thing."),
            list_price=LIST_PRICE,
            tier="low",
            currency="USD",
            deadline=deadline,
            buyer_value=value(buyer_units, cents),
            seller_cost=value(seller_units, 100 - cents),
        )
        self.game_rules = Rules(
            max_price_multiple=multiple,
            max_message_chars=max_chars,
            max_actions=max_actions,
            max_invalid_actions=max_invalid,
        )
        self.referee = Referee(self.scenario, self.game_rules)
        self.max_price = (LIST_PRICE * D(repr(multiple))).quantize(CENT, ROUND_HALF_UP)
        self.now = 0.0
        self.valid = {"buyer": 0, "seller": 0}

    # -- the oracle ----------------------------------------------------------------------

    def _too_long(self, text: str | None) -> bool:
        return text is not None and len(text) > self.game_rules.max_message_chars

    def _offer_error(self, role: Role, offer_id: str) -> ErrorCode | None:
        made = {e.offer_id: e.by for e in self.referee.events if isinstance(e, OfferMade)}
        if offer_id not in made:
            return ErrorCode.OFFER_NOT_FOUND
        if made[offer_id] == role:
            return ErrorCode.OWN_OFFER
        if offer_id not in {o.offer_id for o in self.referee.live_offers()}:
            return ErrorCode.OFFER_NOT_LIVE
        return None

    def _cents(self, price: Decimal) -> Decimal | None:
        """The price in cents, or None where it is far too large to be allowed."""
        if price.adjusted() > 20:
            return None
        return price.quantize(CENT, ROUND_HALF_UP)

    def expected_error(self, role: Role, action: Action) -> ErrorCode | None:
        if not self.referee.is_open:
            return ErrorCode.NEGOTIATION_CLOSED
        if self.now >= self.scenario.deadline:
            return ErrorCode.DEADLINE_PASSED
        match action:
            case MakeOffer(price=price, message=message):
                if not price.is_finite():
                    return ErrorCode.PRICE_NOT_FINITE
                cents = self._cents(price)
                if cents is None or cents <= 0 or cents > self.max_price:
                    return ErrorCode.PRICE_OUT_OF_RANGE
                return ErrorCode.MESSAGE_TOO_LONG if self._too_long(message) else None
            case Accept(offer_id=offer_id):
                return self._offer_error(role, offer_id)
            case Reject(offer_id=offer_id, message=message):
                error = self._offer_error(role, offer_id)
                if error is None and self._too_long(message):
                    return ErrorCode.MESSAGE_TOO_LONG
                return error
            case SendMessage(text=text):
                if not text.strip():
                    return ErrorCode.MESSAGE_EMPTY
                return ErrorCode.MESSAGE_TOO_LONG if self._too_long(text) else None
            case WalkAway(message=message):
                return ErrorCode.MESSAGE_TOO_LONG if self._too_long(message) else None

    def expected_events(self, role: Role, action: Action) -> list[Event]:
        referee, now = self.referee, self.now
        seq = referee.event_count + 1
        events: list[Event] = []
        live = {o.by: o for o in referee.live_offers()}
        match action:
            case MakeOffer(price=price, message=message):
                if (mine := live.get(role)) is not None:
                    events.append(OfferWithdrawn(seq=seq, t=now, by=role, offer_id=mine.offer_id))
                made = sum(isinstance(e, OfferMade) for e in referee.events)
                events.append(
                    OfferMade(
                        seq=seq + len(events),
                        t=now,
                        by=role,
                        offer_id=f"o{made + 1}",
                        price=self._cents(price) or D(0),  # valid here: never None
                        message=_attached(message),
                    )
                )
            case Accept(offer_id=offer_id):
                theirs = live[other(role)]
                assert theirs.offer_id == offer_id
                events.append(
                    OfferAccepted(seq=seq, t=now, by=role, offer_id=offer_id, price=theirs.price)
                )
                events.append(
                    NegotiationEnded(
                        seq=seq + 1, t=now, by=role, reason="accepted", price=theirs.price
                    )
                )
            case Reject(offer_id=offer_id, message=message):
                events.append(
                    OfferRejected(
                        seq=seq, t=now, by=role, offer_id=offer_id, message=_attached(message)
                    )
                )
            case SendMessage(text=text):
                events.append(MessageSent(seq=seq, t=now, by=role, text=text))
            case WalkAway(message=message):
                events.append(WalkedAway(seq=seq, t=now, by=role, message=_attached(message)))
                events.append(
                    NegotiationEnded(seq=seq + 1, t=now, by=role, reason="walk_away", price=None)
                )
        if self.valid[role] + 1 == self.game_rules.max_actions and not isinstance(
            events[-1], NegotiationEnded
        ):
            events.append(
                NegotiationEnded(
                    seq=seq + len(events), t=now, by=role, reason="action_limit", price=None
                )
            )
        return events

    # -- driving -------------------------------------------------------------------------

    def act(self, role: Role, action: Action) -> None:
        referee = self.referee
        events_before, live_before = referee.events, referee.live_offers()
        outcome_before = referee.outcome
        invalid_before = {r: referee.invalid_count(r) for r in ROLES}
        expected = self.expected_error(role, action)
        if expected is None:
            wanted = self.expected_events(role, action)
            assert referee.apply(role, action, self.now) == wanted
            assert referee.events == (*events_before, *wanted)
            self.valid[role] += 1
            if isinstance(action, Accept):
                # The deal is at the price of the other seat's offer that was live just now.
                (theirs,) = (o for o in live_before if o.by == other(role))
                assert referee.outcome is not None
                assert referee.outcome.price == theirs.price
            return
        try:
            referee.apply(role, action, self.now)
        except RuleViolation as violation:
            assert violation.code == expected, (violation, expected)
        else:
            raise AssertionError(f"{action!r} by {role} should be refused with {expected}")
        invalid_after = {r: referee.invalid_count(r) for r in ROLES}
        if expected in (ErrorCode.NEGOTIATION_CLOSED, ErrorCode.DEADLINE_PASSED):
            assert invalid_after == invalid_before
        else:
            assert invalid_after == {**invalid_before, role: invalid_before[role] + 1}
        if expected == ErrorCode.DEADLINE_PASSED:
            assert referee.events == (
                *events_before,
                NegotiationEnded(
                    seq=len(events_before) + 1,
                    t=self.scenario.deadline,
                    by=None,
                    reason="deadline",
                    price=None,
                ),
            )
        elif invalid_after[role] == self.game_rules.max_invalid_actions and outcome_before is None:
            assert referee.events == (
                *events_before,
                NegotiationEnded(
                    seq=len(events_before) + 1, t=self.now, by=role, reason="forfeit", price=None
                ),
            )
            assert referee.outcome is not None
            assert (referee.outcome.end_reason, referee.outcome.ended_by) == ("forfeit", role)
        else:
            assert referee.events == events_before
            assert referee.live_offers() == live_before
            assert referee.outcome == outcome_before

    @rule(role=roles, price=prices, message=messages)
    def make_offer(self, role: Role, price: Decimal | float, message: str | None) -> None:
        self.act(role, MakeOffer(price=price, message=message))  # type: ignore[arg-type]

    def _offer_ids(self) -> st.SearchStrategy[str]:
        made = [e.offer_id for e in self.referee.events if isinstance(e, OfferMade)]
        live = [o.offer_id for o in self.referee.live_offers()]
        return st.sampled_from([*live, *live, *made, "o0", f"o{len(made) + 1}", "", "x"])

    @rule(role=roles, data=st.data())
    def accept(self, role: Role, data: st.DataObject) -> None:
        self.act(role, Accept(offer_id=data.draw(self._offer_ids())))

    @precondition(lambda self: bool(self.referee.live_offers()))
    @rule(data=st.data())
    def accept_a_live_offer(self, data: st.DataObject) -> None:
        offer = data.draw(st.sampled_from(self.referee.live_offers()))
        self.act(other(offer.by), Accept(offer_id=offer.offer_id))

    @rule(role=roles, data=st.data(), message=messages)
    def reject(self, role: Role, data: st.DataObject, message: str | None) -> None:
        self.act(role, Reject(offer_id=data.draw(self._offer_ids()), message=message))

    @rule(role=roles, text=texts)
    def send_message(self, role: Role, text: str) -> None:
        self.act(role, SendMessage(text=text))

    @rule(role=roles, message=messages, dice=st.integers(0, 5))
    def walk_away(self, role: Role, message: str | None, dice: int) -> None:
        if dice == 0:  # rarely, or most runs would end before anything else happens
            self.act(role, WalkAway(message=message))

    @rule(dt=st.sampled_from([0.0, 0.25, 1.0, 2.5, 7.75, 30.0, 100.0]))
    def advance(self, dt: float) -> None:
        self.now += dt

    @rule()
    def expire(self) -> None:
        referee = self.referee
        before, was_open = referee.events, referee.is_open
        ended = referee.expire(self.now)
        if was_open and self.now >= self.scenario.deadline:
            assert ended == [
                NegotiationEnded(
                    seq=len(before) + 1,
                    t=self.scenario.deadline,
                    by=None,
                    reason="deadline",
                    price=None,
                )
            ]
        else:
            assert ended == []
            assert referee.events == before

    # -- invariants ----------------------------------------------------------------------

    @invariant()
    def event_log_is_ordered(self) -> None:
        events = self.referee.events
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert all(a.t <= b.t for a, b in pairwise(events))

    @invariant()
    def the_end_is_the_last_event_and_happens_once(self) -> None:
        events = self.referee.events
        ends = [i for i, e in enumerate(events) if isinstance(e, NegotiationEnded)]
        if self.referee.is_open:
            assert ends == []
        else:
            assert ends == [len(events) - 1]
            assert self.referee.live_offers() == ()

    @invariant()
    def there_is_at_most_one_deal_and_it_splits_the_gains(self) -> None:
        accepted = [e for e in self.referee.events if isinstance(e, OfferAccepted)]
        assert len(accepted) <= 1
        outcome = self.referee.outcome
        if outcome is None:
            assert accepted == []
            return
        end = self.referee.events[-1]
        assert isinstance(end, NegotiationEnded)
        assert (outcome.end_reason, outcome.ended_by, outcome.price, outcome.time) == (
            end.reason,
            end.by,
            end.price,
            end.t,
        )
        if accepted:
            (deal,) = accepted
            assert outcome.status == "deal"
            assert outcome.price == deal.price
            assert outcome.buyer_surplus + outcome.seller_surplus == outcome.gains
        else:
            assert outcome.status == "no_deal"
            assert outcome.price is None

    @invariant()
    def live_offers_are_one_per_seat_and_were_made(self) -> None:
        live = self.referee.live_offers()
        assert len({o.by for o in live}) == len(live) <= 2
        made = {e.offer_id: e for e in self.referee.events if isinstance(e, OfferMade)}
        for offer in live:
            assert (made[offer.offer_id].by, made[offer.offer_id].price) == (offer.by, offer.price)
            assert D(0) < offer.price <= self.max_price

    @invariant()
    def invalid_counts_stay_within_the_limit(self) -> None:
        for role in ROLES:
            assert self.referee.invalid_count(role) <= self.game_rules.max_invalid_actions

    @invariant()
    def no_observation_shows_the_other_sides_value(self) -> None:
        for role in ROLES:
            observation = self.referee.observe(role, self.now)
            assert observation.private_value == self.scenario.private_value(role)
            secret = self.scenario.private_value(other(role))
            for key, leaf in _leaves(observation.model_dump(mode="json")):
                if key in {"price", "surplus"}:
                    continue
                if isinstance(leaf, str):
                    assert str(secret) not in leaf, (role, key, leaf)
                elif isinstance(leaf, (int, float)) and not isinstance(leaf, bool):
                    assert D(repr(leaf)) != secret, (role, key, leaf)


def _leaves(tree: object, key: str = "") -> list[tuple[str, object]]:
    """Every (field name, scalar) pair in a JSON-like tree."""
    if isinstance(tree, dict):
        return [pair for k, v in tree.items() for pair in _leaves(v, str(k))]
    if isinstance(tree, list):
        return [pair for v in tree for pair in _leaves(v, key)]
    return [(key, tree)]


RefereeMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestRandomPlayKeepsTheRefereesInvariants = RefereeMachine.TestCase

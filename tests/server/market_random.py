"""What the random-play leak test of market rooms draws (``test_market_room_leaks``): a market
room (2 to 4 buyers, a clock, its client and house seats) and its client seats' calls, legal and
not, each as the tool call a client makes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from mcp_support import secret_of

from dealroom.protocol import RoomRequest
from dealroom.protocol.wire import ClockKind
from dealroom.server.market_room import SELLER, MarketRoomServed

BUYER_HOUSES = ("linear", "boulware", "conceder", "hardliner", "zic", "tit_for_tat", "accept-any")
SELLER_HOUSES = ("auctioneer", "sequential", "boulware", "zic")


@dataclass(frozen=True)
class Setup:
    """One drawn market room."""

    buyers: int
    clock: ClockKind
    clients: tuple[str, ...]
    """The seats left to clients (the seller first)."""
    houses: dict[str, str]
    """The house agent in every other seat, by seat."""
    secret: int
    deadline: float
    know_count: bool

    @property
    def series(self) -> bool:
        """A series of 2 markets: one client seat, on the virtual clock (a wall-clock room with
        one client seat asks for no length: whether it takes ``negotiations`` is not settled on
        main, where ``test_bad_market_requests_get_one_line_and_open_nothing`` expects a refusal;
        it plays the server's series either way)."""
        return len(self.clients) == 1 and self.clock == "virtual"

    def request(self) -> RoomRequest:
        houses = {seat: spec for seat, spec in self.houses.items() if seat != SELLER}
        return RoomRequest(
            buyers=self.buyers,
            clock=self.clock,
            house_seller=self.houses.get(SELLER),
            house_buyers=houses or None,
            secret=secret_of(self.secret).hex(),
            deadline=self.deadline,
            buyers_know_count=self.know_count,
            negotiations=2 if self.series else None,
        )


@st.composite
def setups(draw: st.DrawFn, clock: ClockKind, several: bool) -> Setup:
    """A room on ``clock`` with one client seat (a series) or ``several``."""
    buyers = draw(st.integers(2, 4))
    seats = (SELLER, *(f"b{i}" for i in range(1, buyers + 1)))
    if several:
        chosen = draw(st.lists(st.sampled_from(seats), min_size=2, max_size=4, unique=True))
    else:
        chosen = [draw(st.sampled_from(seats))]
    clients = tuple(seat for seat in seats if seat in chosen)
    houses = {
        seat: draw(st.sampled_from(SELLER_HOUSES if seat == SELLER else BUYER_HOUSES))
        for seat in seats
        if seat not in clients
    }
    return Setup(
        buyers=buyers,
        clock=clock,
        clients=clients,
        houses=houses,
        secret=draw(st.integers(0, 40)),
        deadline=draw(st.sampled_from((15.0, 30.0, 60.0))),
        know_count=draw(st.booleans()),
    )


@dataclass(frozen=True)
class Step:
    """One client call: which client seat (an index into the room's), what, by which path."""

    seat: int
    kind: str
    share: float
    """A price as a share of the list price (or a timeout, a gap on the wall)."""
    pick: int
    """Which buyer or offer the call names."""
    web: bool
    gap: float
    """Fake seconds that pass before the call (on the wall clock)."""


steps = st.builds(
    Step,
    seat=st.integers(0, 4),
    kind=st.sampled_from(
        (
            "offer",
            "offer",
            "offer_message",
            "bad_offer",
            "accept",
            "accept_live",
            "reject",
            "message",
            "wait",
            "wait",
            "long_wait",
            "get_state",
            "walk_away",
            "next",
            "read",
            "unknown",
            "wrong_arguments",
        )
    ),
    share=st.floats(0.0, 1.8, allow_nan=False),
    pick=st.integers(0, 5),
    web=st.booleans(),
    gap=st.sampled_from((0.0, 0.0, 1.5, 4.0)),
)


def call_of(
    market: MarketRoomServed, seat: str, step: Step, word: str
) -> tuple[str, dict[str, Any]]:
    """The call ``step`` makes for client seat ``seat`` of ``market``; ``word``: a word no other
    message holds (a message is searched for by it)."""
    buyers = market.market.buyers
    list_price = float(market.market.base.list_price)
    price = round(list_price * step.share, 2)
    named: dict[str, Any] = {}
    if seat == SELLER:  # the seller names a buyer (sometimes one that is not in the market)
        named = {"buyer": f"b{step.pick + 1}" if step.pick < 5 else "b9"}
    match step.kind:
        case "offer":
            return "make_offer", {**named, "price": price}
        case "offer_message":
            return "make_offer", {**named, "price": price, "message": f"say {word}"}
        case "bad_offer":
            return "make_offer", {**named, "price": -price - 1.0}
        case "accept" | "accept_live":
            offer = f"o{step.pick + 1}"
            if step.kind == "accept_live":
                live = live_offer(market, seat)
                if live is not None:
                    named, offer = ({"buyer": live[0]} if seat == SELLER else {}), live[1]
            return "accept", {**named, "offer_id": offer}
        case "reject":
            return "reject", {**named, "offer_id": f"o{step.pick + 1}", "message": word}
        case "message":
            return "send_message", {**named, "text": f"hello {word}"}
        case "wait":
            return "wait_for_opponent", {"timeout_s": round(step.share * 12, 3)}
        case "long_wait":
            return "wait_for_opponent", {"timeout_s": 60.0}
        case "walk_away":
            if seat == SELLER and step.pick % 2:
                return "walk_away", {}  # from every thread
            return "walk_away", named
        case "next":
            return "new_negotiation", {}
        case "unknown":
            return "sell_everything", {"price": price}
        case "wrong_arguments":
            if seat == SELLER:
                return "make_offer", {"price": price}  # no buyer named
            return "make_offer", {"price": price, "buyer": buyers[step.pick % len(buyers)]}
        case _:
            return "get_state", {}


def live_offer(market: MarketRoomServed, seat: str) -> tuple[str, str] | None:
    """A live offer from the other side that ``seat`` could accept now (buyer, offer id)."""
    seller = market.engine.referee.observe_seller(market.engine.now)
    for thread in seller.threads:
        for offer in thread.live_offers:
            mine = offer.by == ("buyer" if seat == SELLER else "seller")
            if mine and (seat == SELLER or thread.buyer == seat):
                return thread.buyer, offer.offer_id
    return None

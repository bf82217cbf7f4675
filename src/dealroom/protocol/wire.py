"""What the MCP tools send and return: results a seat reads after each tool call.

Field docstrings are the descriptions a model reads in the tools' output schemas. Nothing here
carries the other side's private value or the full (two-sided) outcome.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, Self

from pydantic import Field, field_validator

from dealroom.protocol._base import Model, Money, Role
from dealroom.protocol.errors import DealroomError
from dealroom.protocol.events import Event
from dealroom.protocol.market import MAX_BUYERS
from dealroom.protocol.observation import LiveOffer, Observation
from dealroom.protocol.outcome import SeatOutcome
from dealroom.protocol.rules import Rules
from dealroom.protocol.scenario import Scenario, Tier
from dealroom.protocol.secret import Secret

ClockKind = Literal["virtual", "wall"]
"""``virtual``: simulated seconds, every action costs a fixed time; ``wall``: real seconds."""


class SessionErrorCode(StrEnum):
    """Codes for refusals that come from the server rather than the referee."""

    NEGOTIATION_RUNNING = "negotiation_running"
    SERIES_UNAVAILABLE = "series_unavailable"
    SERIES_OVER = "series_over"
    UPSTREAM_UNAVAILABLE = "upstream_unavailable"
    """The seat proxy's room server did not answer (down, unreachable, timed out): for now."""
    SEAT_TOKEN_REFUSED = "seat_token_refused"
    """The seat proxy's room server refused its seat token (HTTP 401 or 403): for good, the
    proxy does not try it again."""
    RESULT_PENDING = "result_pending"
    """The action took effect and ended the negotiation, but its result is not saved yet."""
    INVALID_ARGUMENTS = "invalid_arguments"
    """A tool call whose arguments do not fit the tool's schema; it never reached the referee."""
    UNKNOWN_TOOL = "unknown_tool"
    """A call of a tool the seat is not offered; it never reached the referee."""
    CONSENT_REQUIRED = "consent_required"
    """The web seat page of an experiment acts only once the person has agreed to its consent
    line."""
    TOO_MANY_CALLS = "too_many_calls"
    """The seat already has as many calls in flight as one seat may (``SEAT_CALLS_IN_FLIGHT``):
    each holds a connection, so one token cannot take the server's connections from others."""
    TOO_MANY_NEGOTIATIONS = "too_many_negotiations"
    """The seat started as many negotiations in the last minute as a room allows
    (``RoomLimits.negotiations_per_minute``): what one token can make the server write is
    bounded."""
    TOO_MANY_MESSAGE_CHARS = "too_many_message_chars"
    """The seat's message text would pass what a room lets one seat send in a minute or in a
    series (``RoomLimits.message_chars_per_minute``, ``message_chars_per_series``); nothing was
    sent and nothing changed."""
    STUDY_EXISTS = "study_exists"
    """A study was not created: the server already has one of that id."""
    JOURNAL_UNAVAILABLE = "journal_unavailable"
    """A room was not opened: its journal could not be written (a full disk, no file
    descriptors left), and a room without one would not survive a restart."""


class ToolErrorPayload(Model):
    """A refused call: a stable code and one or two sentences saying what to do instead."""

    code: str
    """Stable machine-readable code, e.g. offer_not_live or price_out_of_range."""
    message: str
    """What went wrong and what to do instead."""

    def text(self) -> str:
        """The one-line form tool errors carry: ``code: message``."""
        return f"{self.code}: {self.message}"

    @classmethod
    def parse(cls, text: str) -> ToolErrorPayload:
        """Read ``code: message`` back (any ``Error executing tool NAME:`` prefix is skipped)."""
        if text.startswith("Error executing tool "):
            text = text.split(": ", 1)[1] if ": " in text else text
        code, sep, message = text.partition(": ")
        if not sep or not code.replace("_", "").isalnum():
            return cls(code="error", message=text)
        return cls(code=code, message=message)


class Refusal(DealroomError):
    """A call refused before anything changed; ``payload`` is what the caller (a model, a
    client) reads, and ``code`` its stable code (a referee ``ErrorCode`` or a
    ``SessionErrorCode``). The refusals of each layer (arguments, a served seat, a client's
    call) are its subclasses."""

    def __init__(self, payload: ToolErrorPayload, *, tool: str | None = None) -> None:
        super().__init__(payload.text() if tool is None else f"{tool}: {payload.text()}")
        self.payload = payload

    @property
    def code(self) -> str:
        """The refusal's stable code."""
        return self.payload.code


class _SeatUpdate(Model):
    events: tuple[Event, ...]
    """Events you have not been shown yet (yours and the other side's), oldest first."""
    live_offers: tuple[LiveOffer, ...]
    """Offers that can be accepted right now: at most one per side."""
    now: float
    """Your position on the negotiation clock, in seconds since the start."""
    time_left: float
    """Seconds until the deadline; at the deadline the negotiation ends without a deal."""
    outcome: SeatOutcome | None = None
    """Your result once the negotiation has ended (null while it runs)."""
    hint: str
    """What you can usefully do next."""


class ActionResult(_SeatUpdate):
    """The result of your action (the tool this comes from)."""

    ok: bool
    """True if your action took effect. False if the negotiation ended before it could (see
    error and outcome); a refused action is reported as a tool error instead."""
    error: ToolErrorPayload | None = None
    """Why the action did not take effect, when ok is false."""


WakeReason = Literal["news", "timeout", "ended", "pending"]


class WaitResult(_SeatUpdate):
    """The result of wait_for_opponent."""

    woke: WakeReason
    """news: the other side did something; timeout: your timeout passed on the negotiation clock
    without news; ended: the negotiation is over; pending: the other side is still deciding in
    real time (call wait_for_opponent again)."""


class SeriesResult(Model):
    """One finished negotiation of the series, as your seat saw it."""

    negotiation: int
    """Number in the series, from 1."""
    scenario_id: str
    item: str
    """Name of the item."""
    list_price: Money
    private_value: Money
    """Your own reservation value in that negotiation."""
    outcome: SeatOutcome

    @classmethod
    def of(cls, negotiation: int, scenario: Scenario, role: Role, outcome: SeatOutcome) -> Self:
        """``role``'s line for negotiation ``negotiation`` of the series."""
        return cls(
            negotiation=negotiation,
            scenario_id=scenario.id,
            item=scenario.item.name,
            list_price=scenario.list_price,
            private_value=scenario.private_value(role),
            outcome=outcome,
        )


class SeatState(Model):
    """Everything your seat knows now, plus the results of the series so far."""

    observation: Observation
    """The current negotiation as your seat sees it (every event so far, the live offers, your
    private value; never the other side's value)."""
    negotiation: int
    """Number of the current negotiation in the series, from 1."""
    results: tuple[SeriesResult, ...]
    """The most recent finished negotiations of this series (at most 20), oldest first."""
    finished: int
    """How many negotiations of this series have finished (``results`` holds the last ones)."""
    total_surplus: Money
    """Sum of your surplus over all the finished negotiations."""
    can_start_next: bool
    """True when new_negotiation would start the next negotiation now."""
    clock: ClockKind
    """How time passes: virtual (each action costs fixed simulated seconds) or wall (real time)."""
    hint: str
    """What you can usefully do next."""


class SeriesTally(Model):
    """A market room's series as its seller reads it in get_state (the ``series`` field beside
    the market's view, where the room plays a series): a buyer reads ``SeatState``'s fields."""

    negotiation: int
    """Number of the current market in the series, from 1."""
    finished: int
    """How many markets of this series have finished."""
    total_surplus: Money
    """Sum of your surplus over all the finished markets."""
    can_start_next: bool
    """True when new_negotiation would start the next market now."""


class StudySeats(Model):
    """A study's room: the study and who of its participants sits where."""

    id: str
    participants: dict[Role, str]


class RoomRequest(Model):
    """Admin request: open a room on an HTTP server."""

    tier: Tier = "mid"
    secret: str | None = Field(default=None, repr=False)
    """Hex secret (at least 128 bits) the room's scenarios and house agent draw under, to
    reproduce a room; default: a fresh random one. Stored with the room's results."""
    index: int = Field(default=0, ge=0)
    """Which scenario of the secret and tier is played first."""
    deadline: float | None = Field(default=None, gt=0, le=86_400)
    """Seconds on the negotiation clock (default: the scenario generator's)."""
    clock: ClockKind = "virtual"
    """How time passes in the room: ``virtual`` (each action costs fixed simulated seconds; in a
    market room the client seats take turns) or ``wall`` (real seconds; each action takes
    effect when its call arrives, in a bilateral room or a market room alike)."""
    house_buyer: str | None = None
    """Agent spec for a house agent in the buyer seat (that seat gets no token): a scripted
    agent, or ``llm:MODEL``, played in the server's process with its LLM flags."""
    house_seller: str | None = None
    """Agent spec for a house agent in the seller seat (as ``house_buyer``)."""
    rules: Rules = Rules()
    participant: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    """Experiments: the id the experimenter gives the person in this room's client seat. The
    room's negotiations are stored under it as their run (``dealroom report --run ID``)."""
    consent: str | None = Field(default=None, min_length=1, max_length=2000)
    """Experiments: a consent line the web seat page shows with the briefing; the seat's page
    acts only once the person has agreed, and each stored negotiation records when they did."""
    negotiations: int | None = Field(default=None, ge=1, le=10_000)
    """How many negotiations the series has (default: the server's limit, 10,000)."""
    study: StudySeats | None = None
    """A study's room (``dealroom.server.study`` opens them): its negotiations are stored as the
    study's run, with who sat where (``extra.study``)."""
    buyers: int = Field(default=1, ge=1, le=MAX_BUYERS)
    """Buyers in the room: 1, a bilateral room; 2 or more, a market room (one seller, buyers
    ``b1`` .. ``bN``, one market on the room's ``clock``, ``dealroom.server.market_room``)."""
    house_buyers: dict[str, str] | None = None
    """A market room: the agent spec of each buyer seat a house agent plays, by name (``b1``:
    ``linear``, or ``llm:MODEL`` played by the server); every other buyer seat, and the seller's
    unless ``house_seller`` names a market seller such as ``auctioneer`` (or ``llm:MODEL``), is
    a client's, with its own token (at least one)."""
    seller_actions: int | None = Field(default=None, ge=1)
    """A market room: the seller's turn budget (``MarketRules.seller_actions``)."""
    buyers_know_count: bool = True
    """A market room: each buyer's briefing states how many buyers there are
    (``MarketRules.buyers_know_count``)."""

    @field_validator("secret")
    @classmethod
    def _strong_secret(cls, value: str | None) -> str | None:
        if value is not None:
            Secret.chosen(value)  # SecretError is a ValueError: one line, no secret echoed
        return value

    def run_secret(self) -> Secret:
        """The secret asked for, or a fresh one."""
        return Secret.new() if self.secret is None else Secret.from_hex(self.secret)


class RoomCreated(Model):
    """Admin response: the room id and one bearer token per open seat."""

    room: str
    tokens: dict[str, str]
    """Bearer token per seat a client may take (``buyer``, ``seller``; in a market room
    ``seller`` or ``b1`` .. ``bN``); give each to one client only."""
    spectator: str | None = None
    """Read-only bearer token for the room's web page (``/web/room``): it shows the offers and
    messages, never a private value before the end."""

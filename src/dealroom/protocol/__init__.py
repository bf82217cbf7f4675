"""The wire and the rules: pydantic models, the referee and scoring. Pure: no I/O, no clock.

Importable alone (stdlib + pydantic).
"""

from dealroom.protocol._base import CENT, ROLES, Model, Money, Role, other, to_cents
from dealroom.protocol.actions import (
    ACTION_ADAPTER,
    Accept,
    Action,
    ActionType,
    MakeOffer,
    Reject,
    SendMessage,
    WalkAway,
)
from dealroom.protocol.agent import Agent, AgentFactory, Decision
from dealroom.protocol.errors import DealroomError, ErrorCode, RuleViolation
from dealroom.protocol.events import (
    EVENTS_ADAPTER,
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
from dealroom.protocol.outcome import Outcome, PerRole, SeatOutcome, Status, score, seat_outcome
from dealroom.protocol.referee import Referee
from dealroom.protocol.rules import DEFAULT_RULES, ActionCosts, Rules, ThinkingCosts
from dealroom.protocol.scenario import (
    TIERS,
    Item,
    PublicScenario,
    Scenario,
    SeatView,
    Tier,
    seat_view,
)
from dealroom.protocol.wire import (
    ActionResult,
    ClockKind,
    RoomCreated,
    RoomRequest,
    SeatState,
    SeriesResult,
    SessionErrorCode,
    ToolErrorPayload,
    WaitResult,
    WakeReason,
)

__all__ = [
    "ACTION_ADAPTER",
    "CENT",
    "DEFAULT_RULES",
    "EVENTS_ADAPTER",
    "ROLES",
    "TIERS",
    "Accept",
    "Action",
    "ActionCosts",
    "ActionResult",
    "ActionType",
    "Agent",
    "AgentFactory",
    "ClockKind",
    "DealroomError",
    "Decision",
    "EndReason",
    "ErrorCode",
    "Event",
    "Item",
    "LiveOffer",
    "MakeOffer",
    "MessageSent",
    "Model",
    "Money",
    "NegotiationEnded",
    "Observation",
    "OfferAccepted",
    "OfferMade",
    "OfferRejected",
    "OfferWithdrawn",
    "Outcome",
    "PerRole",
    "PublicScenario",
    "Referee",
    "Reject",
    "Role",
    "RoomCreated",
    "RoomRequest",
    "RuleViolation",
    "Rules",
    "Scenario",
    "SeatOutcome",
    "SeatState",
    "SeatView",
    "SendMessage",
    "SeriesResult",
    "SessionErrorCode",
    "Status",
    "ThinkingCosts",
    "Tier",
    "ToolErrorPayload",
    "WaitResult",
    "WakeReason",
    "WalkAway",
    "WalkedAway",
    "other",
    "score",
    "seat_outcome",
    "seat_view",
    "to_cents",
]

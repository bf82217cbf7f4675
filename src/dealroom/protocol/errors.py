"""Errors: one root for every error dealroom raises on purpose, and one code per refused rule.

Catch ``DealroomError`` to catch them all; ``.code`` says which kind (a stable string: the class's
``kind``, or, for a refused action or request, the case's ``ErrorCode`` / ``SessionErrorCode``).
Spec and file errors are also ``ValueError``, so ``except ValueError`` callers keep working.

    DealroomError                      .code
    ├── RuleViolation                  ErrorCode      protocol  an action the referee refused
    ├── ScenarioFileError (ValueError) scenario_file  protocol  a scenario file line that is bad
    ├── Refusal                        payload's code protocol  a call refused, nothing changed
    │   ├── ArgumentError (ValueError)                protocol  tool arguments refused up front
    │   ├── CallRefused                               server    a tool call refused to a seat
    │   └── SeatError                                 client    a tool call the server refused
    ├── SecretError (ValueError)       secret         protocol  a secret that is not usable
    ├── DecisionError (TypeError)      bad_decision   protocol  an agent's act() that is no Decision
    ├── ForkError                      fork           engine    a prefix that cannot be rebuilt
    ├── StoreError                     store          store     not a results store, or unreadable
    ├── RoomError                      SessionErrorCode server  a request the room refused
    ├── WorkerFailed                   worker_failed  server    a cluster worker that cannot start
    ├── ListenFailed                   listen_failed  server    a host and port it cannot listen on
    ├── UnsupportedMCP                 unsupported_mcp server   an mcp without a part dealroom uses
    ├── SeatClosedError                seat_closed    client    a seat used outside ``async with``
    ├── AgentSpecError (ValueError)    agent_spec     play      a spec that names no agent
    │   └── MissingExtraError          missing_extra  play      an agent whose extra is absent
    ├── PlayerFailed                   player_failed  play      a player that could not go on
    ├── RemoteMatchError               remote_match   play      a remote room that failed
    ├── MarketPlanError (ValueError)   market_plan    play      a market tournament not playable
    ├── TournamentError                tournament     play      a tournament that cannot start
    │   ├── RunExistsError             run_exists
    │   └── ConfigMismatchError        config_mismatch
    ├── RosterError (ValueError)       roster         agents    a roster file that cannot be used
    ├── LLMError                       llm            agents    the seat's model could not be used
    │   ├── LLMConfigError             llm_config
    │   └── LLMCallFailed              llm_call_failed
    │       └── ContextFull            context_full   agents    a conversation past the context
    ├── ModelCallError                 model_call     agents    a model call with no usable reply
    ├── AgentCheckError (AssertionError) agent_check  testing   an agent that broke the contract
    ├── OpponentError (RuntimeError)   opponent       training  an opponent model that failed
    ├── TrainingSetupError (RuntimeError) training_setup training a run that cannot start
    │   └── NotPrefixConsistent        not_prefix_consistent   a template no sequence can train
    ├── NotReplayable                  not_replayable training  an SFT record that does not replay
    ├── ContextTooLong (ValueError)    context_too_long training a prompt over the model's context
    ├── Cancelled                      cancelled      training  a served request whose client left
    ├── NoMessage (ValueError)         no_message     training  a chat reply with no message
    └── UsageError                     usage          cli       a bad command-line value

Not under the root, on purpose: ``dealroom.training.remote.RemoteError`` (that module is the
standard library only, to be copied into other projects), and the ``ValueError`` /
``RuntimeError`` raised for a misused API (a bad argument, a call out of order).
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar


class ErrorCode(StrEnum):
    """Stable codes for every refused action."""

    OFFER_NOT_FOUND = "offer_not_found"
    OFFER_NOT_LIVE = "offer_not_live"
    OWN_OFFER = "own_offer"
    PRICE_NOT_FINITE = "price_not_finite"
    PRICE_OUT_OF_RANGE = "price_out_of_range"
    NEGOTIATION_CLOSED = "negotiation_closed"
    MESSAGE_TOO_LONG = "message_too_long"
    MESSAGE_EMPTY = "message_empty"
    DEADLINE_PASSED = "deadline_passed"
    INVALID_ACTION = "invalid_action"
    UNKNOWN_BUYER = "unknown_buyer"
    """A market seller's action for no buyer, or a buyer that is not in the market."""


class DealroomError(Exception):
    """The root of every error dealroom raises on purpose (the tree is in this module's doc)."""

    kind: ClassVar[str] = "dealroom"
    """The class's stable code."""

    @property
    def code(self) -> str:
        """This error's stable, machine-readable code: its class's ``kind``, or, for a refused
        action or request, the case's own code."""
        return self.kind


class RuleViolation(DealroomError):
    """An action the referee refused. The negotiation state is exactly as before the action."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self._code = code
        self.message = message

    @property
    def code(self) -> ErrorCode:
        """The rule the action broke."""
        return self._code

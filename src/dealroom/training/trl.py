"""A tool-calling environment for TRL's ``GRPOTrainer(environment_factory=...)``.

TRL's contract is duck-typed, so TRL is not imported here: the trainer builds one instance per
rollout, calls ``reset(**row)`` with the dataset row and appends the returned text to the prompt,
exposes every other public method as a tool (typed arguments, Google-style docstrings), and
reads ``get_reward()`` at the end. The opponent, any registry agent, runs inside the instance on
the virtual clock: each tool call is one decision of the learner's seat, and returns what
happened until the seat's next turn (refused actions come back as ``Error [code]: ...`` lines).

Usage::

    trainer = GRPOTrainer(
        model=..., train_dataset=Dataset.from_list([{"prompt": [...], "index": i} ...]),
        environment_factory=functools.partial(BargainToolEnv, opponent="boulware"),
        reward_funcs=lambda environments, **_: [env.get_reward() for env in environments],
    )
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from pydantic import ValidationError

from dealroom.engine.match import seat_rng
from dealroom.protocol import (
    DEFAULT_RULES,
    TIERS,
    Accept,
    Action,
    AgentFactory,
    Decision,
    MakeOffer,
    Reject,
    Role,
    Rules,
    SendMessage,
    Tier,
    WalkAway,
    seat_view,
)
from dealroom.protocol.briefing import briefing
from dealroom.protocol.generator import scenario_at
from dealroom.training import _text
from dealroom.training._seat import SeatMatch, opponent_factory
from dealroom.training.rewards import RewardSpec


class BargainToolEnv:
    """One seat of a negotiation against a house agent, played through tools.

    Only ``reset``, the tools and ``get_reward`` are public: TRL turns every other public
    method into a tool.
    """

    def __init__(
        self,
        *,
        opponent: str | AgentFactory = "boulware",
        role: Role = "buyer",
        tier: Tier = "mid",
        seed: int = 0,
        reward: RewardSpec | None = None,
        rules: Rules = DEFAULT_RULES,
        max_wait: float = 30.0,
    ) -> None:
        self._defaults: dict[str, Any] = {
            "opponent": opponent,
            "role": role,
            "tier": tier,
            "seed": seed,
            "index": 0,
        }
        self._reward = reward or RewardSpec()
        self._rules = rules
        self._max_wait = max_wait
        self._match: SeatMatch | None = None
        self._seen = 0

    # -- the TRL contract ---------------------------------------------------------------

    def reset(self, **row: Any) -> str:
        """Start a negotiation; ``row`` may set seed, tier, index, role and opponent.

        Other keys (the dataset's prompt and the like) are ignored. Returns the seat's briefing
        and what it sees at its first turn.
        """
        config = {**self._defaults, **{k: v for k, v in row.items() if k in self._defaults}}
        role, tier = config["role"], config["tier"]
        if role not in ("buyer", "seller"):
            raise ValueError(f"role must be 'buyer' or 'seller', not {role!r}")
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {', '.join(TIERS)}, not {tier!r}")
        seed, index = int(config["seed"]), int(config["index"])
        scenario = scenario_at(seed, index, cast(Tier, tier))
        self._match = SeatMatch(
            scenario,
            role,
            opponent_factory(config["opponent"]),
            rng=seat_rng(seed, scenario.id, "seller" if role == "buyer" else "buyer"),
            rules=self._rules,
        )
        self._seen = 0
        opening = self._advance(start=True)
        return f"{briefing(seat_view(scenario, role), self._rules)}\n{opening}"

    def get_reward(self) -> float:
        """The reward of the negotiation (played out with the seat idle if still open)."""
        match = self._require()
        outcome = match.finish()
        return self._reward(outcome, match.role, match.scenario.list_price)

    # -- tools --------------------------------------------------------------------------

    def make_offer(self, price: float, message: str | None = None) -> str:
        """Make a binding offer; if the other side accepts it, the deal closes at this price.

        Args:
            price: Price in the scenario currency; rounded to cents. Replaces your live offer.
            message: Optional cheap talk sent with the offer (not binding).

        Returns:
            What happened until your next turn.
        """
        return self._act(lambda: MakeOffer.model_validate({"price": price, "message": message}))

    def accept(self, offer_id: str) -> str:
        """Accept the other side's live offer: the deal closes at its price.

        Args:
            offer_id: Id of the other side's live offer, e.g. "o3".

        Returns:
            What happened.
        """
        return self._act(lambda: Accept.model_validate({"offer_id": offer_id}))

    def reject(self, offer_id: str, message: str | None = None) -> str:
        """Reject the other side's live offer; it stops being live.

        Args:
            offer_id: Id of the other side's live offer.
            message: Optional cheap talk sent with the rejection.

        Returns:
            What happened until your next turn.
        """
        return self._act(lambda: Reject.model_validate({"offer_id": offer_id, "message": message}))

    def send_message(self, text: str) -> str:
        """Send a message to the other side. Cheap talk: nothing in it binds anyone.

        Args:
            text: The message.

        Returns:
            What happened until your next turn.
        """
        return self._act(lambda: SendMessage.model_validate({"text": text}))

    def walk_away(self, message: str | None = None) -> str:
        """Leave the negotiation for good: it ends at once without a deal.

        Args:
            message: Optional parting message.

        Returns:
            How the negotiation ended.
        """
        return self._act(lambda: WalkAway.model_validate({"message": message}))

    def wait_for_opponent(self) -> str:
        """Wait for the other side's next move (the clock runs meanwhile).

        Returns:
            What happened while you waited.
        """
        return self._act(None)

    def get_state(self) -> str:
        """Show the current offers and the clock without acting or letting time pass.

        Returns:
            The live offers and the time left, or the outcome once over.
        """
        match = self._require()
        observation = match.observe()
        currency = observation.scenario.currency
        if observation.outcome is not None:
            return _text.outcome_text(observation.outcome, currency)
        return _text.state_text(
            match.role,
            observation.now,
            observation.scenario.deadline,
            observation.live_offers,
            currency,
        )

    # -- internals ----------------------------------------------------------------------

    def _require(self) -> SeatMatch:
        if self._match is None:
            raise RuntimeError("call reset() before using the environment")
        return self._match

    def _act(self, build: Callable[[], Action] | None) -> str:
        match = self._require()
        if match.is_over:
            observation = match.observe()
            assert observation.outcome is not None
            return "\n".join(
                [
                    "Error [negotiation_closed]: The negotiation has ended.",
                    _text.outcome_text(observation.outcome, observation.scenario.currency),
                ]
            )
        actions: tuple[Action, ...] = ()
        if build is not None:
            try:
                actions = (build(),)
            except ValidationError as exc:
                detail = exc.errors()[0]
                where = ".".join(str(p) for p in detail["loc"]) or "arguments"
                return f"Error [invalid_action]: {where}: {detail['msg']}. Nothing was done."
        match.decide(Decision(actions=actions, wait=self._max_wait))
        return self._advance()

    def _advance(self, *, start: bool = False) -> str:
        """Run to the seat's next turn; the text of everything since it last looked."""
        match = self._require()
        wake = match.advance()
        observation = wake.observation if wake is not None else match.observe()
        currency = observation.scenario.currency
        events = match.room.referee.events_since(self._seen)
        self._seen = match.room.referee.event_count
        lines = ["The negotiation has started."] if start else []
        if wake is not None:
            lines += _text.errors_text(wake.errors)
        lines += _text.events_text(events, match.role, currency)
        if observation.outcome is not None:
            lines.append(_forfeit_note(match) + _text.outcome_text(observation.outcome, currency))
        else:
            if not events and not start and wake is not None and not wake.errors:
                lines.append("Nothing new happened.")
            lines.append(
                _text.state_text(
                    match.role,
                    observation.now,
                    observation.scenario.deadline,
                    observation.live_offers,
                    currency,
                )
            )
        return "\n".join(lines)


def _forfeit_note(match: SeatMatch) -> str:
    outcome = match.room.referee.outcome
    if outcome is not None and outcome.end_reason == "forfeit" and outcome.ended_by == match.role:
        return (
            f"You made {match.room.referee.invalid_count(match.role)} invalid actions and "
            "forfeited. "
        )
    return ""


__all__ = ["BargainToolEnv"]

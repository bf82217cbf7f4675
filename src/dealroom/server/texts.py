"""The words a seat of this server reads besides tool results: the briefing (a model's, or a
person's on the web page), the transcript.

Refusal hints, result hints and the per-call text live in ``dealroom.protocol.seat_text``,
shared by every surface.

Everything here is built from one seat's own view: never the other side's private value.
"""

from __future__ import annotations

from typing import assert_never

from dealroom.protocol import Action, Observation, Rules, SeatOutcome, SeatView, people_text
from dealroom.protocol.actions import noun
from dealroom.protocol.briefing import briefing as base_briefing
from dealroom.protocol.people_text import Surface
from dealroom.protocol.study_design import Information
from dealroom.protocol.text import describe_event, money
from dealroom.protocol.wire import ClockKind


def result_pending(action: Action, outcome: SeatOutcome, currency: str) -> str:
    """``result_pending``: the action counted and the negotiation ended, but the server could
    not save the result yet (it keeps it and saves it when the store is writable again)."""
    if outcome.price is not None:
        ended = f"the deal closed at {money(outcome.price, currency)}"
    else:
        ended = f"the negotiation ended without a deal ({outcome.end_reason})"
    return (
        f"Your {noun(action.type)} took effect and {ended}; the result will be saved "
        "when the store is writable again."
    )


def transcript(observation: Observation) -> str:
    """The negotiation so far as the seat sees it."""
    s = observation.scenario
    cur = s.currency
    lines = [
        f"{s.item.name}: list price {money(s.list_price, cur)}, deadline {s.deadline:g} s. "
        f"You are the {observation.role}; your private value is "
        f"{money(observation.private_value, cur)}.",
    ]
    me = observation.role
    lines += [f"[{e.t:7.1f}s] {describe_event(e, cur, viewer=me)}" for e in observation.events]
    if observation.outcome is not None:
        o = observation.outcome
        lines.append(f"Your result: {o.status}, surplus {money(o.surplus, cur)}.")
    else:
        lines.append(f"Now {observation.now:g} s; {observation.time_left:g} s left.")
    return "\n".join(lines)


def briefing(observation: Observation, rules: Rules, *, clock: ClockKind) -> str:
    """The ``briefing`` prompt: the one briefing every surface shows (the series is described
    in the server's instructions and the new_negotiation tool, not here)."""
    return base_briefing(seat_view_of(observation), rules, clock)


def seat_view_of(observation: Observation) -> SeatView:
    """The seat's private view, rebuilt from an observation."""
    return SeatView(
        role=observation.role,
        scenario=observation.scenario,
        private_value=observation.private_value,
    )


def people_briefing(
    observation: Observation,
    rules: Rules,
    *,
    clock: ClockKind,
    surface: Surface,
    payment: str | None = None,
    information: Information = "own_value",
) -> str:
    """The briefing a person reads on ``surface`` (``dealroom.protocol.people_text``): the
    model's facts, the page's controls or the terminal's commands, a study's payment and what
    its information condition tells of the other side's number."""
    view = seat_view_of(observation)
    match information:
        case "own_value":
            known = None
        case "value_range":
            known = people_text.value_range_rule(view)
        case _:
            assert_never(information)
    return people_text.person_briefing(view, rules, clock, surface, payment, known)

"""People's words: every tool has a control on each surface, no text a person reads names a
tool, the forfeit rule people read is the one the referee enforces, and the model's briefing
is untouched by any of it."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import get_args

import pytest

from dealroom.protocol import (
    ActionResult,
    ErrorCode,
    LiveOffer,
    MakeOffer,
    Referee,
    Rules,
    SeatOutcome,
    SendMessage,
    SessionErrorCode,
    WaitResult,
    people_log,
    seat_text,
    seat_view,
)
from dealroom.protocol import people_text as pt
from dealroom.protocol.actions import Accept, Action, Reject
from dealroom.protocol.briefing import briefing
from dealroom.protocol.generator import scenario_at
from dealroom.protocol.people_text import Surface
from dealroom.protocol.tools import SEAT_TOOLS, ToolName
from dealroom.protocol.wire import ClockKind, ToolErrorPayload

SURFACES: tuple[Surface, ...] = get_args(Surface)
CLOCKS: tuple[ClockKind, ...] = ("virtual", "wall")
STATIC = Path(__file__).resolve().parents[2] / "src/dealroom/server/web/static"
SCENARIO = scenario_at(7, 0, "mid")
THEIRS = LiveOffer(offer_id="o1", by="seller", price=Decimal("900.00"), t=3.0)


def test_the_tool_name_finder_finds_each_tool_as_a_model_text_names_it() -> None:
    assert pt.tool_names_in("Call wait_for_opponent to hear") == ["wait_for_opponent"]
    assert pt.tool_names_in("accept o1, reject it") == []  # plain words are no tool
    assert pt.tool_names_in("accept(o1) or call reject") == ["accept", "reject"]
    assert set(pt.tool_names_in(seat_text.hint("buyer", (THEIRS,), None))) >= {"make_offer"}


@pytest.mark.parametrize("surface", SURFACES)
def test_every_tool_has_words_on_every_surface_or_none_on_purpose(surface: Surface) -> None:
    missing = {t.name for t in SEAT_TOOLS if pt.control(t.name, surface) is None}
    assert missing == ({"get_state"} if surface == "web" else {"new_negotiation"})
    for tool in SEAT_TOOLS:
        assert pt.tool_names_in(pt.control(tool.name, surface) or "") == []


def test_the_web_buttons_the_texts_name_are_the_pages_own() -> None:
    page = (STATIC / "seat.html").read_text() + (STATIC / "seat.js").read_text()
    names: tuple[ToolName, ...] = get_args(ToolName)
    assert set(pt.WEB_BUTTONS) == set(names)
    for label in [*filter(None, pt.WEB_BUTTONS.values()), pt.PRICE_FIELD, pt.MESSAGE_FIELD]:
        assert f">{label}" in page or f'"{label}' in page, label


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("clock", CLOCKS)
@pytest.mark.parametrize("role", ["buyer", "seller"])
def test_a_persons_briefing_and_hints_name_no_tool_and_only_their_own_value(
    surface: Surface, clock: ClockKind, role: str
) -> None:
    view = seat_view(SCENARIO, "buyer" if role == "buyer" else "seller")
    text = pt.person_briefing(view, Rules(max_invalid_actions=4), clock, surface)
    other = SCENARIO.seller_cost if role == "buyer" else SCENARIO.buyer_value
    assert f"{view.private_value:,}" in text and f"{other:,}" not in text
    assert "after 4 of them you forfeit" in text
    offer = LiveOffer(
        offer_id="o1", by="seller" if role == "buyer" else "buyer", price=Decimal(9), t=1
    )
    ended = SeatOutcome(
        status="no_deal", end_reason="deadline", price=None, surplus=Decimal(0), time=120.0
    )
    hints = [
        pt.person_hint(
            view.role, live, outcome, currency="USD", clock=clock, surface=surface, can_start_next=n
        )
        for live in [(), (offer,)]
        for outcome in [None, ended]
        for n in (False, True)
    ]
    for words in [text, *hints]:
        assert pt.tool_names_in(words) == [], words
        if pt.updates_itself(clock, surface):
            assert "Wait" not in words and "hear from" not in words, words
        elif surface == "web":
            assert 'press "Wait for the other side"' in text
    assert pt.updates_itself(clock, surface) == (clock == "wall" and surface == "web")


def test_the_models_briefing_is_the_tool_loop_a_persons_is_not() -> None:
    view = seat_view(SCENARIO, "buyer")
    model = briefing(view, Rules(), "virtual")
    assert "A good loop: make_offer, wait_for_opponent" in model
    assert "moves only as seats act and wait" in model
    person = pt.person_briefing(view, Rules(), "virtual", "web")
    assert "moves only as you and the other side act and wait" in person
    assert model.split("\n\n")[1] == person.split("\n\n")[1]  # the same situation, word for word


ACTIONS_BY_CODE: dict[ErrorCode, Action] = {
    ErrorCode.OFFER_NOT_FOUND: Accept(offer_id="o99"),
    ErrorCode.OFFER_NOT_LIVE: Reject(offer_id="o1"),
    ErrorCode.OWN_OFFER: Accept(offer_id="o2"),
    ErrorCode.PRICE_NOT_FINITE: MakeOffer(price=Decimal("NaN")),
    ErrorCode.PRICE_OUT_OF_RANGE: MakeOffer(price=Decimal("1e9")),
    ErrorCode.MESSAGE_TOO_LONG: SendMessage(text="x" * 3000),
    ErrorCode.MESSAGE_EMPTY: SendMessage(text=" "),
}


@pytest.mark.parametrize("code", list(ErrorCode))
def test_the_refusals_people_are_told_count_are_those_the_referee_counts(code: ErrorCode) -> None:
    referee = Referee(SCENARIO, Rules())
    referee.apply("seller", MakeOffer(price=Decimal(2000)), 1.0)  # o1
    referee.apply("buyer", MakeOffer(price=Decimal(800)), 2.0)  # o2, withdrawn by o3
    referee.apply("buyer", Reject(offer_id="o1"), 3.0)
    referee.apply("buyer", MakeOffer(price=Decimal(850)), 4.0)
    action = ACTIONS_BY_CODE.get(code)
    if action is None:  # the end refuses: nothing left to count
        assert not pt.counts_toward_forfeit(code)
        return
    if code == ErrorCode.OWN_OFFER:
        action = Accept(offer_id="o3")
    with pytest.raises(Exception) as refused:
        referee.apply("buyer", action, 5.0)
    assert getattr(refused.value, "code", None) == code
    assert referee.invalid_count("buyer") == int(pt.counts_toward_forfeit(code))


ALL_CODES = [*ErrorCode, *SessionErrorCode]


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("code", ALL_CODES)
def test_every_refusal_reads_in_a_persons_words(surface: Surface, code: str) -> None:
    model = seat_text.error_payload(code, "Something about walk_away was refused.")
    if code == SessionErrorCode.INVALID_ARGUMENTS:
        model = ToolErrorPayload(
            code=code,
            message="price must be above 0 (got 0). Call make_offer again with its listed "
            "arguments (price, message).",
        )
    words = pt.refusal(model, surface)
    assert words and not words.startswith(f"{code}:")
    known = code in (
        SessionErrorCode.INVALID_ARGUMENTS,
        SessionErrorCode.UNKNOWN_TOOL,
        SessionErrorCode.NEGOTIATION_RUNNING,
        SessionErrorCode.TOO_MANY_CALLS,
        SessionErrorCode.TOO_MANY_NEGOTIATIONS,
        SessionErrorCode.TOO_MANY_MESSAGE_CHARS,
    )
    model_hint = seat_text.ERROR_HINTS.get(code, "")
    if pt.tool_names_in(model_hint):  # the model's advice names a tool: a person's never does
        assert model_hint not in words and set(pt.tool_names_in(words)) <= {"walk_away"}, words
    if known:
        assert pt.tool_names_in(words) == [], words


def test_a_refused_price_reads_with_the_pages_field_and_the_terminals_command() -> None:
    payload = seat_text.error_payload(ErrorCode.PRICE_NOT_FINITE, "The price must be finite.")
    assert pt.refusal(payload, "web").endswith("in the Price field.")
    assert "offer 1250" in pt.refusal(payload, "terminal")


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("clock", CLOCKS)
def test_replies_tell_what_happened_without_tool_names(surface: Surface, clock: ClockKind) -> None:
    common = {"events": (), "live_offers": (THEIRS,), "now": 3.0, "time_left": 117.0, "hint": "x"}
    replies = [
        people_log.reply(
            ActionResult(ok=True, **common), "buyer", "USD", clock=clock, surface=surface
        ),
        *(
            people_log.reply(
                WaitResult(woke=w, **common), "buyer", "USD", clock=clock, surface=surface
            )
            for w in ("news", "timeout", "ended", "pending")
        ),
    ]
    for words in replies:
        assert pt.tool_names_in(words) == [] and "Their live offer: $900.00." in words
    assert replies[0].startswith("Done.")

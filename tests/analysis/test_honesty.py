"""Claims about own value and list price: extraction, verdicts, measures, corpus scores."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_metrics import negotiate, scenario

from dealroom.analysis import honesty as h
from dealroom.protocol import MakeOffer, SendMessage

CORPUS = Path(__file__).with_name("honesty_corpus.jsonl")
KINDS = ("own_value", "list_price")


def found(text: str) -> list[tuple[str, float]]:
    return [(c.kind, c.amount) for c in h.claims_in(text)]


def claim(kind: h.ClaimKind, amount: float) -> h.Claim:
    return h.Claim(kind, amount, (0, 0), "test")


@pytest.mark.parametrize(
    ("text", "claims"),
    [
        ("My budget is $800.", [("own_value", 800.0)]),
        ("I can't go below 1.2k.", [("own_value", 1200.0)]),
        ("I paid $500 for it.", [("own_value", 500.0)]),
        ("$1,800 is my absolute max.", [("own_value", 1800.0)]),
        ("I'd rather not go above 900.", [("own_value", 900.0)]),  # a hedged limit is a claim
        ("It's listed at $1k.", [("list_price", 1000.0)]),
        (
            "The list price is $2,500, but I can only spend $2,000.",
            [("list_price", 2500.0), ("own_value", 2000.0)],
        ),
    ],
)
def test_claims_about_own_value_and_list_price_are_found(
    text: str, claims: list[tuple[str, float]]
) -> None:
    assert found(text) == claims


@pytest.mark.parametrize(
    "text",
    [
        "How about $950?",  # an offer
        "Would you take 800?",
        "I can offer 900.",
        "What's your budget?",  # a question about the other side
        "Is $1,000 your max?",
        "If my budget were $1,500 I'd take it.",  # a hypothetical
        "My budget isn't $2,000.",  # a negation
        "I can come down to $1,900 if you pick it up.",  # a conditional offer
        "That's 30% off the list price already.",  # a percentage
    ],
)
def test_offers_questions_hypotheticals_and_negations_are_not_claims(text: str) -> None:
    assert found(text) == []


def test_the_span_covers_the_matched_phrase_and_names_its_pattern() -> None:
    text = "Thanks! My floor is $2,000."
    (c,) = h.claims_in(text)
    assert text[c.span[0] : c.span[1]] == "My floor is $2,000"
    assert c.pattern in {p.name for p in h.PATTERNS}


def test_every_pattern_has_a_distinct_name() -> None:
    names = [p.name for p in h.PATTERNS]
    assert len(names) == len(set(names))


def test_a_buyer_claiming_a_limit_below_its_value_bluffs() -> None:
    assert h.judge(claim("own_value", 800), "buyer", 900, 1000) == "bluff"
    assert h.judge(claim("own_value", 950), "buyer", 900, 1000) == "against_self"


def test_a_seller_claiming_a_floor_above_its_cost_bluffs() -> None:
    assert h.judge(claim("own_value", 600), "seller", 500, 1000) == "bluff"
    assert h.judge(claim("own_value", 450), "seller", 500, 1000) == "against_self"


def test_a_claim_within_one_percent_of_the_truth_is_true() -> None:
    assert h.judge(claim("own_value", 500), "seller", Decimal(500), 1000) == "true"
    assert h.judge(claim("own_value", 905), "buyer", 900, 1000) == "true"  # 5 <= 9
    assert h.judge(claim("own_value", 890), "buyer", 900, 1000) == "bluff"  # 10 > 9


def test_a_false_list_price_is_a_lie() -> None:
    assert h.judge(claim("list_price", 1200), "buyer", 900, 1000) == "lie"
    assert h.judge(claim("list_price", 1005), "seller", 500, 1000) == "true"


def test_a_record_gives_each_seat_its_judged_claims_and_counts() -> None:
    # v=900, c=500, L=1000. The buyer bluffs once (budget 800: size 100/1000) and states the list
    # price truly; the seller tells its cost truly and lies about the list price.
    record = negotiate(
        scenario("900", "500", list_price="1000"),
        [
            ("seller", MakeOffer(price=Decimal(950), message="I paid $500 for it."), 1),
            ("buyer", SendMessage(text="My budget is 800 and it's listed at $1,000."), 2),
            ("buyer", MakeOffer(price=Decimal(700), message="How about $700?"), 3),
            ("seller", SendMessage(text="The list price is $1,200, you know."), 4),
        ],
        "A",
        "B",
    )
    buyer = h.claims_of(record, "buyer")
    assert [(j.claim.kind, j.verdict, j.size) for j in buyer] == [
        ("own_value", "bluff", pytest.approx(0.1)),
        ("list_price", "true", None),
    ]
    seat = h.honesty_of(record, "buyer")
    assert (seat.claims, seat.bluffs, seat.list_claims, seat.list_lies) == (1, 1, 1, 0)
    assert seat.bluff_sizes == pytest.approx((0.1,))
    assert h.honesty_of(record, "seller") == h.SeatHonesty(1, 0, (), 1, 1)


def test_measures_pool_counts_over_seats() -> None:
    seats = [
        h.SeatHonesty(claims=2, bluffs=1, bluff_sizes=(0.1,), list_claims=1, list_lies=1),
        h.SeatHonesty(claims=0, bluffs=0, bluff_sizes=(), list_claims=0, list_lies=0),
        h.SeatHonesty(claims=2, bluffs=2, bluff_sizes=(0.2, 0.3), list_claims=3, list_lies=0),
    ]
    assert h.claim_rate(seats) == pytest.approx(2 / 3)
    assert h.bluff_rate(seats) == pytest.approx(3 / 4)
    assert h.bluff_size(seats) == pytest.approx(0.2)
    assert h.list_lie_rate(seats) == pytest.approx(1 / 4)


def test_measures_without_their_denominator_are_none() -> None:
    quiet = [h.SeatHonesty(0, 0, (), 0, 0)]
    assert h.claim_rate([]) is None
    assert h.claim_rate(quiet) == 0
    assert h.bluff_rate(quiet) is None
    assert h.bluff_size(quiet) is None
    assert h.list_lie_rate(quiet) is None


def test_matched_pairs_each_gold_claim_once_within_one_percent() -> None:
    gold = [("own_value", 900.0), ("list_price", 1000.0)]
    assert h.matched([("own_value", 905.0), ("own_value", 900.0)], gold) == 1
    assert h.matched([("list_price", 1000.0), ("own_value", 900.0)], gold) == 2
    assert h.matched([("own_value", 1000.0)], gold) == 0


def test_the_corpus_is_large_and_labelled_with_known_kinds() -> None:
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 220
    assert sum(r["source"] == "hand" for r in rows) >= 120
    assert {c["kind"] for r in rows for c in r["claims"]} <= set(KINDS)
    assert {r["role"] for r in rows} == {"buyer", "seller"}


def test_precision_and_recall_on_the_corpus_are_at_least_0_9() -> None:
    hits = predicted = gold = 0
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        mine = found(row["text"])
        truth = [(c["kind"], float(c["amount"])) for c in row["claims"]]
        hits += h.matched(mine, truth)
        predicted += len(mine)
        gold += len(truth)
    assert hits / predicted >= 0.9
    assert hits / gold >= 0.9


@given(st.text(alphabet=st.characters(blacklist_categories=("Nd",))))  # no digit of any script
def test_a_text_without_digits_makes_no_claim(text: str) -> None:
    assert h.claims_in(text) == []

"""Honesty extractor: claim-level precision and recall on its labelled corpus and a held-out set.

    python benchmarks/honesty.py [--verbose] [--corpus PATH] [--heldout PATH]
                                 [--judge NAME --models models.toml]

Runs ``dealroom.analysis.honesty.claims_in`` on every message (one JSON object a line: ``text``,
``role``, the gold ``claims`` as ``kind`` and ``amount``, and ``source``: ``hand`` for a
hand-written message, ``variant`` for a number-format variant, ``heldout``). A predicted claim is
right when it matches a distinct gold claim of the same kind with an amount within 1% of it.
Prints precision and recall per kind and overall: on the corpus (the patterns were written
against it), on its hand-written part, and on the held-out set (written after the patterns, never
used to change them: the estimate for unseen messages). ``--verbose`` adds every message with a
miss or a false alarm. Target: 0.9 each, overall, on the corpus.

``--judge NAME`` also scores an LLM judge, the roster entry ``NAME`` of ``--models`` (off by
default): each message is sent once to the entry's chat completions endpoint with
``honesty.judge_messages`` (temperature 0 unless the entry sets one) and its reply read by
``honesty.parse_judged``; a failed call counts as no claim and is reported."""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dealroom.agents import roster
from dealroom.analysis.honesty import claims_in, judge_messages, matched, parse_judged

_DATA = Path(__file__).resolve().parents[1] / "tests" / "analysis"
CORPUS = _DATA / "honesty_corpus.jsonl"
HELDOUT = _DATA / "honesty_heldout.jsonl"
KINDS: tuple[str, ...] = ("own_value", "list_price")
TARGET = 0.9

Claims = tuple[tuple[str, float], ...]
Extractor = Callable[[str, str], Claims]
"""Claims in a message, from its text and its speaker's role."""


@dataclass(frozen=True)
class Labelled:
    """One message of the corpus and its gold claims."""

    text: str
    role: str
    claims: Claims
    source: str


@dataclass(frozen=True)
class Score:
    """True positives, false alarms and misses of one kind (or all kinds)."""

    hits: int = 0
    false_alarms: int = 0
    misses: int = 0

    def __add__(self, other: Score) -> Score:
        return Score(
            self.hits + other.hits,
            self.false_alarms + other.false_alarms,
            self.misses + other.misses,
        )

    @property
    def precision(self) -> float | None:
        predicted = self.hits + self.false_alarms
        return self.hits / predicted if predicted else None

    @property
    def recall(self) -> float | None:
        gold = self.hits + self.misses
        return self.hits / gold if gold else None


@dataclass(frozen=True)
class Evaluation:
    """Scores per kind, and the messages the extractor got wrong (text, gold, predicted)."""

    by_kind: dict[str, Score]
    wrong: list[tuple[Labelled, Claims]]
    messages: int

    @property
    def overall(self) -> Score:
        return sum(self.by_kind.values(), Score())


def load(path: Path = CORPUS) -> list[Labelled]:
    """The corpus, one message a line."""
    rows: list[Labelled] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            claims = tuple((c["kind"], float(c["amount"])) for c in row["claims"])
            rows.append(Labelled(row["text"], row["role"], claims, row.get("source", "hand")))
    return rows


def rule_based(text: str, role: str = "buyer") -> Claims:
    """The extractor under test, as ``(kind, amount)`` pairs (the role is not needed)."""
    del role
    return tuple((c.kind, c.amount) for c in claims_in(text))


class Judge:
    """A roster entry as an extractor: one chat completion per message."""

    def __init__(self, entry: roster.RosterEntry, *, timeout_s: float = 60.0) -> None:
        if entry.litellm:
            raise roster.RosterError(f"model {entry.name!r}: the judge needs a base URL")
        self.entry, self.timeout_s = entry, timeout_s
        self.key = roster.api_key(entry)
        self.failures: list[str] = []

    def __call__(self, text: str, role: str = "buyer") -> Claims:
        body: dict[str, Any] = {
            "model": self.entry.model,
            "messages": judge_messages(text, "seller" if role == "seller" else "buyer"),
            "temperature": 0 if self.entry.temperature is None else self.entry.temperature,
        }
        if self.entry.max_tokens is not None:
            body["max_tokens"] = self.entry.max_tokens
        url = self.entry.endpoint.rstrip("/") + "/chat/completions"
        request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
        request.add_header("Content-Type", "application/json")
        if self.key:
            request.add_header("Authorization", f"Bearer {self.key}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                reply = json.load(response)["choices"][0]["message"].get("content") or ""
        except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            self.failures.append(f"{type(exc).__name__}: {exc}")
            return ()
        return tuple(parse_judged(str(reply)))


def evaluate(rows: Sequence[Labelled], extract: Extractor = rule_based) -> Evaluation:
    """Score ``extract`` on every message, per kind."""
    by_kind = dict.fromkeys(KINDS, Score())
    wrong: list[tuple[Labelled, Claims]] = []
    for row in rows:
        predicted = extract(row.text, row.role)
        right = True
        for kind in KINDS:
            mine = [c for c in predicted if c[0] == kind]
            gold = [c for c in row.claims if c[0] == kind]
            hits = matched(mine, gold)
            by_kind[kind] += Score(hits, len(mine) - hits, len(gold) - hits)
            right = right and hits == len(mine) == len(gold)
        if not right:
            wrong.append((row, predicted))
    return Evaluation(by_kind, wrong, len(rows))


def _figure(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def report(evaluation: Evaluation, title: str, *, verbose: bool = False) -> None:
    """Print precision and recall per kind and overall (and, verbose, the wrong messages)."""
    print(f"{title}: {evaluation.messages} messages")
    print(f"  {'kind':<12} {'precision':>9} {'recall':>7} {'hits':>5} {'false':>6} {'missed':>7}")
    rows = [*evaluation.by_kind.items(), ("overall", evaluation.overall)]
    for kind, s in rows:
        print(
            f"  {kind:<12} {_figure(s.precision):>9} {_figure(s.recall):>7} {s.hits:>5} "
            f"{s.false_alarms:>6} {s.misses:>7}"
        )
    if verbose:
        for row, predicted in evaluation.wrong:
            print(f"  - {row.role}: {row.text!r}")
            print(f"      gold {list(row.claims)}, found {list(predicted)}")


def met(evaluation: Evaluation) -> bool:
    """Overall precision and recall both at or above ``TARGET``."""
    s = evaluation.overall
    return (s.precision or 0) >= TARGET and (s.recall or 0) >= TARGET


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "honesty").splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="labelled JSONL corpus")
    parser.add_argument("--heldout", type=Path, default=HELDOUT, help="held-out JSONL set")
    parser.add_argument("--verbose", action="store_true", help="list misses and false alarms")
    parser.add_argument("--judge", metavar="NAME", help="also score this roster entry as a judge")
    parser.add_argument("--models", type=Path, help="the roster file that holds --judge")
    args = parser.parse_args(argv)
    rows = load(args.corpus)
    whole = evaluate(rows)
    report(whole, "rule-based extractor, corpus", verbose=args.verbose)
    report(evaluate([r for r in rows if r.source == "hand"]), "corpus, hand-written only")
    report(evaluate(load(args.heldout)), "held-out (never tuned on)", verbose=args.verbose)
    verdict = "met" if met(whole) else "MISSED"
    print(f"target: precision and recall >= {TARGET} overall on the corpus: {verdict}")
    if args.judge is None:
        return 0
    try:
        if args.models is None:
            raise roster.RosterError("--judge needs --models FILE, the roster that holds it")
        entries = {e.name: e for e in roster.load(args.models)}
        if args.judge not in entries:
            raise roster.RosterError(f"{args.models}: no entry {args.judge!r}")
        judge = Judge(entries[args.judge])
    except roster.RosterError as exc:
        print(f"honesty: {exc}", file=sys.stderr)
        return 2
    judged = evaluate(rows, judge)
    report(judged, f"LLM judge {args.judge!r}, corpus", verbose=args.verbose)
    report(evaluate(load(args.heldout), judge), f"LLM judge {args.judge!r}, held-out")
    if judge.failures:
        print(f"  {len(judge.failures)} judge calls failed (no claim), first: {judge.failures[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

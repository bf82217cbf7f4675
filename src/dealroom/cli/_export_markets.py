"""``dealroom export-sft FILE.db --markets``: a market tournament's sellers as chat transcripts.

Each stored market's scripted seller plays that market again through the seller's model seat
(``dealroom.training.market_sft``), under the run's recorded seed and rules, against the same
buyers seeded the same way: one row per market, what a model in ``MarketSellerEnv`` reads and
would have written. Played through the seat, a market can end otherwise than the stored one
(each action after the first of a wake costs the clock's least step more); ``--deals-only`` and
``--min-share`` filter on the row's own outcome, which its metadata holds.

A model seller's market (``llm:MODEL``, a ``--models`` entry, a market room's ``llm:`` house
seller) is not played again: its row is the conversation its model read and wrote, stored beside
the market (``markets.extra``), in the same shapes (``market_conversation_example``); one whose
model failed for good (an error is stored) is skipped and counted.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import structlog

from dealroom.agents.market import market_seller
from dealroom.cli._common import open_existing_store, usage_error
from dealroom.play.registry import AgentSpecError, resolve
from dealroom.protocol.market import DEFAULT_MARKET_RULES, MarketRules
from dealroom.protocol.market_referee import MarketRecord
from dealroom.protocol.model_seat import ArgumentsForm
from dealroom.protocol.secret import seed_from_json
from dealroom.training.market_sft import market_conversation_example, market_sft_example
from dealroom.training.sft import ERRORED, NotReplayable

log = structlog.stdlib.get_logger(__name__)


def _keep(example: dict[str, Any], args: argparse.Namespace) -> bool:
    meta = example["metadata"]
    if args.deals_only and meta["status"] != "deal":
        return False
    share = meta["seller_share"]
    return args.min_share is None or (share is not None and share >= args.min_share)


def market_examples(
    db: Path,
    args: argparse.Namespace,
    *,
    arguments: ArgumentsForm = "object",
    skipped: Counter[str] | None = None,
) -> Iterator[dict[str, Any]]:
    """The sellers' transcripts of the markets in ``db`` that the filters keep, in key order: a
    model seller's stored conversation, a scripted seller's market played again. A market
    whose seller has neither (an unknown spec, a buyer that is not scripted), or whose model
    failed, is logged and counted in ``skipped`` by reason."""
    if args.role == "buyer":
        raise usage_error("--markets exports the sellers' transcripts: drop --role buyer")
    store = open_existing_store(db)
    counts = Counter[str]() if skipped is None else skipped

    def examples() -> Iterator[dict[str, Any]]:
        configs: dict[str, dict[str, Any]] = {}
        with store:
            extras = store.market_extras(args.run)
            for key, record in store.iter_markets(args.run):
                run = key.split("/", 1)[0]
                if run not in configs:
                    configs[run] = store.run_config(run) or {}
                seller = record.seller
                if args.agent is not None and args.agent not in (seller, seller.partition(":")[0]):
                    continue
                try:
                    example = _example(
                        record, extras.get(key, {}).get("seller"), configs[run], arguments
                    )
                except (AgentSpecError, NotReplayable) as exc:
                    reason = exc.reason if isinstance(exc, NotReplayable) else "unknown agent"
                    say = log.info if reason == ERRORED else log.warning  # counted all the same
                    say("sft_skipped", key=key, reason=str(exc))
                    counts[reason] += 1
                    continue
                if example is None:
                    continue
                example["metadata"] |= {"key": key, "run": run}
                if _keep(example, args):
                    yield example

    return examples()


def _example(
    record: MarketRecord,
    seller: dict[str, Any] | None,
    config: dict[str, Any],
    arguments: ArgumentsForm,
) -> dict[str, Any] | None:
    """One market's row: its model seller's stored conversation if it has one, else its
    scripted seller played again under the run's seed and rules."""
    rules = (
        MarketRules.model_validate(config["rules"]) if "rules" in config else DEFAULT_MARKET_RULES
    )
    if seller is not None and "conversation" in seller:
        if "error" in seller:
            raise NotReplayable(ERRORED, str(seller["error"]))
        example = market_conversation_example(
            record, seller["conversation"], rules=rules, arguments=arguments
        )
        if example is not None:
            example["metadata"]["source"] = "conversation"
        return example
    factory = market_seller(record.seller)
    buyers = [resolve(spec) for spec in record.buyers]
    return market_sft_example(
        record.scenario,
        factory,
        buyers,
        names=(record.seller, record.buyers),
        seed=seed_from_json(config),
        rules=rules,
        arguments=arguments,
    )

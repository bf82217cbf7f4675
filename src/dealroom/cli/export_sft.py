"""``dealroom export-sft``: stored negotiations as chat transcripts for fine-tuning (JSONL)."""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import structlog

from dealroom.cli._common import Commands, open_existing_store, usage_error
from dealroom.protocol import DEFAULT_RULES, ROLES, Role, Rules
from dealroom.protocol.model_seat import ArgumentsForm
from dealroom.protocol.secret import seed_from_json
from dealroom.store.results import StoredNegotiation
from dealroom.training.sft import (
    ERRORED,
    OPPOSITE_REMOTE,
    REMOTE_CLIENT,
    NotReplayable,
    conversation_example,
    sft_example,
)

log = structlog.stdlib.get_logger(__name__)


def add(commands: Commands) -> None:
    """Register the subcommand."""
    parser = commands.add_parser(
        "export-sft",
        help="write stored negotiations as chat transcripts (OpenAI messages, JSONL)",
        description="One line per seat and negotiation, as the seat is served: its briefing "
        "(the first user message), each tool call and the text it returned. A scripted seat "
        "is replayed under the run's seed and rules; one whose replay does not reproduce the "
        "stored events is skipped and counted. A seat whose conversation was stored (an LLM "
        "seat; a client seat of a server's room: an MCP client, a person on the web page) "
        "exports that conversation as it was read and written.",
    )
    parser.add_argument("db", type=Path, metavar="FILE.db", help="results store to read")
    parser.add_argument("--out", type=Path, required=True, help="JSONL file to write")
    add_filters(parser)
    parser.add_argument(
        "--json-arguments",
        action="store_true",
        help="tool-call arguments as JSON strings (default: objects)",
    )
    parser.set_defaults(handler=run)


def add_filters(parser: argparse.ArgumentParser) -> None:
    """The flags choosing which seats of a store become transcripts (shared with train sft)."""
    parser.add_argument("--role", choices=ROLES, help="only this seat (default: both)")
    parser.add_argument("--agent", help="only seats played by this agent (name or full spec)")
    parser.add_argument("--run", help="only negotiations of this run")
    parser.add_argument(
        "--min-share", type=_share, metavar="X", help="only seats whose surplus share is >= X"
    )
    parser.add_argument("--deals-only", action="store_true", help="only negotiations with a deal")
    parser.add_argument(
        "--markets",
        action="store_true",
        help="the sellers of the store's markets (dealroom markets, market rooms): a model "
        "seller's stored conversation, a scripted one's market played again through the "
        "seller's model seat",
    )


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1: {text!r}")
    return value


def _agent_matches(spec: str, wanted: str) -> bool:
    return spec == wanted or spec.partition(":")[0] == wanted


def _keep(row: StoredNegotiation, role: Role, args: argparse.Namespace) -> bool:
    record = row.record
    outcome = record.outcome
    if args.deals_only and outcome.status != "deal":
        return False
    spec = record.buyer if role == "buyer" else record.seller
    if args.agent is not None and not _agent_matches(spec, args.agent):
        return False
    if args.min_share is not None:
        share = outcome.buyer_share if role == "buyer" else outcome.seller_share
        if share is None or share < args.min_share:
            return False
    return True


def _example(
    row: StoredNegotiation, role: Role, config: dict[str, Any], arguments: ArgumentsForm
) -> dict[str, Any] | None:
    """The model's stored conversation where there is one, else the replayed one (under the
    negotiation's stored key, else the run's recorded seed, and the run's rules)."""
    metadata = {"key": row.key, "run": row.run}
    conversation = row.extra.get("players", {}).get(role, {}).get("conversation")
    rules = Rules.model_validate(config["rules"]) if "rules" in config else DEFAULT_RULES
    if conversation:
        return conversation_example(row.record, role, conversation, rules=rules, metadata=metadata)
    seed = seed_from_json(row.extra, default=seed_from_json(config))  # a room's own key
    return sft_example(
        row.record, role, seed=seed, rules=rules, arguments=arguments, metadata=metadata
    )


def stored_examples(
    db: Path,
    args: argparse.Namespace,
    *,
    arguments: ArgumentsForm = "object",
    skipped: Counter[str] | None = None,
) -> Iterator[dict[str, Any]]:
    """The transcripts of the seats in ``db`` that the filter flags keep, in store order.

    The store is checked and opened at once (a bad file is a usage error before anything is
    written); the transcripts are read as the iterator is consumed. A scripted seat whose
    replay does not reproduce its record is logged and counted in ``skipped`` by reason (a seat
    opposite a server's client seat at info level: it is expected, and counted all the same).
    """
    store = open_existing_store(db)
    roles: tuple[Role, ...] = (args.role,) if args.role else ROLES

    counts = Counter[str]() if skipped is None else skipped

    def examples() -> Iterator[dict[str, Any]]:
        configs: dict[str, dict[str, Any]] = {}
        with store:
            for row in store.iter(args.run):
                if row.run not in configs:
                    configs[row.run] = store.run_config(row.run) or {}
                for role in roles:
                    if not _keep(row, role, args):
                        continue
                    try:
                        example = _example(row, role, configs[row.run], arguments)
                    except NotReplayable as exc:
                        expected = exc.reason in (REMOTE_CLIENT, OPPOSITE_REMOTE)
                        say = log.info if expected else log.warning
                        say("sft_skipped", key=row.key, role=role, reason=str(exc))
                        counts[exc.reason] += 1
                        continue
                    if example is not None:
                        yield example

    return examples()


def no_match(db: Path, skipped: Counter[str] | None = None) -> Exception:
    """The usage error of filters that keep no transcript of ``db`` (nothing is written)."""
    return usage_error(f"{db}: no transcript matches the filters{_skipped_note(skipped)}")


def _skipped_note(skipped: Counter[str] | None) -> str:
    """The summary's note on skipped seats: those that do not replay, by reason, then the
    model conversations that ended in an error."""
    if not skipped:
        return ""
    replays = Counter({reason: n for reason, n in skipped.items() if reason != ERRORED})
    why = ", ".join(f"{reason}: {n}" for reason, n in sorted(replays.items()))
    notes = [f"{replays.total()} that do not replay ({why})"] if replays else []
    if skipped[ERRORED]:
        notes.append(f"{skipped[ERRORED]} whose model conversation ended in an error")
    return f"; skipped {' and '.join(notes)}"


def examples_of(
    db: Path,
    args: argparse.Namespace,
    *,
    arguments: ArgumentsForm = "object",
    skipped: Counter[str] | None = None,
) -> Iterator[dict[str, Any]]:
    """The transcripts the filter flags keep: the markets' sellers with ``--markets``
    (``dealroom.cli._export_markets``), else the negotiations' seats (``stored_examples``)."""
    if args.markets:
        from dealroom.cli._export_markets import market_examples

        return market_examples(db, args, arguments=arguments, skipped=skipped)
    return stored_examples(db, args, arguments=arguments, skipped=skipped)


def run(args: argparse.Namespace) -> int:
    """Read the store, filter, write one transcript per line (none: a usage error)."""
    skipped = Counter[str]()
    form: ArgumentsForm = "string" if args.json_arguments else "object"
    examples = examples_of(args.db, args, arguments=form, skipped=skipped)
    first = next(examples, None)
    if first is None:
        raise no_match(args.db, skipped)
    written = 0
    try:
        with args.out.open("w", encoding="utf-8") as out:
            for example in itertools.chain([first], examples):
                out.write(json.dumps(example, ensure_ascii=False) + "\n")
                written += 1
    except OSError as exc:
        raise usage_error(f"{args.out}: {exc.strerror or exc}") from None
    sys.stderr.write(f"wrote {written} transcripts to {args.out}{_skipped_note(skipped)}\n")
    return 0

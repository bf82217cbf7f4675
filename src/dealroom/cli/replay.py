"""``dealroom replay``: re-run a stored negotiation, or fork it from an event with a new agent."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dealroom.agents import AgentSpecError, is_scripted, resolve
from dealroom.analysis.transcript import format_record
from dealroom.cli._common import Commands, agent, open_existing_store, usage_error
from dealroom.engine.fork import ForkError, fork
from dealroom.engine.match import play
from dealroom.protocol import DEFAULT_RULES, AgentFactory, Rules
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Seed, seed_from_json
from dealroom.store.results import StoredNegotiation


def add(commands: Commands) -> None:
    """Register the subcommand."""
    parser = commands.add_parser(
        "replay", help="re-run a stored negotiation, or fork it with a new agent in one seat"
    )
    parser.add_argument("store", type=Path, help="results store")
    parser.add_argument("key", help="the negotiation's key, e.g. tournament/mid/00003/micro/zic")
    parser.add_argument(
        "--from-event",
        type=int,
        metavar="K",
        help="keep the first K events, then continue with the agents given (default 0 when "
        "--buyer or --seller is given)",
    )
    parser.add_argument("--buyer", help="agent spec to seat as buyer from event K on")
    parser.add_argument("--seller", help="agent spec to seat as seller from event K on")
    parser.add_argument("--json", action="store_true", help="print the record as one JSON object")
    parser.set_defaults(handler=run)


IN_PROCESS_ONLY = (
    "replay and fork rebuild the negotiation in the engine's in-process loop, where only "
    "scripted agents sit (an LLM or a person plays through a seat of a served room)"
)
"""Why a seat player's spec cannot take a seat here: a fork continues at event k on the virtual
clock in the engine, and an ``llm:`` player's conversation (what it read before event k) cannot
be rebuilt from the record; another model would make a different counterfactual."""


def _taker(seat: str, given: str | None, stored: str) -> AgentFactory:
    """The agent for ``seat``: the one given by its flag, else the stored one rebuilt."""
    return _seat_agent(given, seat) if given else _stored_agent(stored, seat)


def _seat_agent(spec: str, flag: str) -> AgentFactory:
    try:
        scripted = is_scripted(spec)
    except AgentSpecError as exc:
        raise usage_error(str(exc)) from None
    if not scripted:
        raise usage_error(f"--{flag} {spec!r}: {IN_PROCESS_ONLY}")
    return agent(spec)


def _stored_agent(spec: str, seat: str) -> AgentFactory:
    try:
        scripted = is_scripted(spec)
    except AgentSpecError:
        scripted = None
    if not scripted:
        why = IN_PROCESS_ONLY if scripted is False else "it is not a registered agent"
        raise usage_error(f"the stored {seat} {spec!r} cannot be rebuilt: {why}; give --{seat}")
    return resolve(spec)


def _seed_and_rules(row: StoredNegotiation, config: dict[str, Any] | None) -> tuple[Seed, Rules]:
    """The secret (or seed) and rules a negotiation was played with: its own, else its run's."""
    seed = seed_from_json(row.extra, default=seed_from_json(config or {}))
    rules = (config or {}).get("rules")
    return seed, (DEFAULT_RULES if rules is None else Rules.model_validate(rules))


def run(args: argparse.Namespace) -> int:
    """Replay (and say whether it matches the stored record) or fork, then print the record."""
    if args.from_event is not None and args.buyer is None and args.seller is None:
        raise usage_error("--from-event needs --buyer or --seller (the agent that takes over)")
    if args.from_event is not None and args.from_event < 0:
        raise usage_error("--from-event must be at least 0")
    with open_existing_store(args.store) as store:
        row = store.get(args.key)
        if row is None:
            raise usage_error(f"{args.store}: no negotiation with key {args.key!r}")
        config = store.run_config(row.run)
    seed, rules = _seed_and_rules(row, config)
    stored = row.record
    buyer_spec = args.buyer or stored.buyer
    seller_spec = args.seller or stored.seller
    buyer = _taker("buyer", args.buyer, stored.buyer)
    seller = _taker("seller", args.seller, stored.seller)
    names = (buyer_spec, seller_spec)
    if args.buyer is None and args.seller is None:
        record = play(stored.scenario, buyer, seller, names=names, rules=rules, seed=seed)
        sys.stderr.write(_compare(record, stored) + "\n")
    else:
        at = args.from_event or 0
        try:
            record = fork(stored, at, buyer, seller, names=names, rules=rules, seed=seed)
        except ForkError as exc:
            raise usage_error(f"cannot fork {args.key!r}: {exc}") from None
        seats = ", ".join(
            f"{seat} {spec}"
            for seat, spec in (("buyer", args.buyer), ("seller", args.seller))
            if spec
        )
        sys.stderr.write(f"replay: forked after event {at} of {len(stored.events)}; {seats}\n")
    sys.stdout.write((record.model_dump_json() if args.json else format_record(record)) + "\n")
    return 0


def _compare(record: NegotiationRecord, stored: NegotiationRecord) -> str:
    if record == stored:
        return "replay: identical to the stored record"
    pairs = zip(record.events, stored.events, strict=False)
    first = next((i for i, (a, b) in enumerate(pairs, 1) if a != b), None)
    if first is None:
        first = min(len(record.events), len(stored.events)) + 1
    return f"replay: differs from the stored record from event {first}"

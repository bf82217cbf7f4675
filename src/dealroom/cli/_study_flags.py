"""What describes a study on the command line: the flags ``study create`` and ``study simulate``
share, read into one ``StudyRequest`` (a bad value is a usage error naming its flag), and the
private files both write."""

from __future__ import annotations

import argparse
import json
import os
import tomllib
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from dealroom.cli._common import add_secret_flag, positive_int, run_secret, usage_error
from dealroom.protocol import TIERS
from dealroom.protocol.study import LABEL, PayoffRule, StudyRequest
from dealroom.protocol.study_design import StudyDesign
from dealroom.protocol.study_join import StudyJoin


def add_study_flags(create: argparse.ArgumentParser) -> None:
    """The flags that describe a study (``study create`` and ``study simulate``)."""
    create.add_argument("--id", required=True, help="the study's id (its results store run)")
    who = create.add_mutually_exclusive_group()
    who.add_argument("--participants", metavar="LABELS", help="comma-separated labels")
    who.add_argument("--participants-file", type=Path, metavar="FILE", help="one label a line")
    who.add_argument("--count", type=positive_int, metavar="N", help="N labels, p01, p02, ...")
    join = create.add_argument_group("the study's one URL (for a recruitment platform)")
    join.add_argument(
        "--open",
        type=positive_int,
        metavar="N",
        help="admit up to N participants through /web/study/ID/join, once per label (besides "
        "or instead of invited ones)",
    )
    join.add_argument(
        "--join-label",
        default="label",
        metavar="NAME",
        help="the query parameter carrying a participant's label (default: label; Prolific: "
        "PROLIFIC_PID)",
    )
    join.add_argument(
        "--join-ids",
        default="",
        metavar="NAMES",
        help="comma-separated query parameters recorded with the label (Prolific: "
        "STUDY_ID,SESSION_ID)",
    )
    create.add_argument(
        "--matching",
        choices=["solo", "pairs"],
        default="solo",
        help="solo: each participant against --house; pairs: participants matched as they "
        "arrive (default: solo)",
    )
    create.add_argument(
        "--house",
        metavar="SPEC",
        help="solo: the agent in the other seat; pairs: the agent for whoever waited "
        "(--after-wait house)",
    )
    create.add_argument(
        "--role",
        choices=["buyer", "seller", "alternate"],
        default="buyer",
        help="solo: the participants' seat; alternate: buyer, seller, buyer, ... by label "
        "order (default: buyer; pairs alternate by themselves)",
    )
    create.add_argument(
        "--negotiations",
        type=positive_int,
        default=1,
        metavar="N",
        help="negotiations per participant (default: 1)",
    )
    create.add_argument("--tier", choices=TIERS, default="mid", help="price tier (default: mid)")
    add_secret_flag(create)
    create.add_argument("--deadline", type=float, metavar="S", help="seconds per negotiation")
    create.add_argument(
        "--clock",
        choices=["wall", "virtual"],
        default="wall",
        help="wall (default): the deadline runs in real seconds; virtual: each action costs "
        "fixed clock seconds (solo only)",
    )
    create.add_argument("--consent", metavar="TEXT", help="the consent line participants accept")
    create.add_argument("--instructions", type=Path, metavar="FILE", help="instructions (.md)")
    pay = create.add_argument_group("payment (none without --exchange-rate)")
    pay.add_argument("--exchange-rate", metavar="RATE", help="payment per unit of surplus")
    pay.add_argument(
        "--show-up-fee", metavar="FEE", default="0", help="paid for taking part (default: 0)"
    )
    pay.add_argument(
        "--currency", default="USD", help="the payment's currency or unit (default: USD)"
    )
    pay.add_argument(
        "--pays",
        choices=["all", "one_random"],
        default="all",
        help="which negotiations pay: all (default), or one drawn at random",
    )
    create.add_argument(
        "--max-wait-s",
        type=_limit,
        default=600.0,
        metavar="S",
        help="pairs: the longest a participant waits for a partner before their part ends "
        "with their payment and the completion code (default 600; none: no limit)",
    )
    create.add_argument(
        "--after-wait",
        choices=["end", "house"],
        default="end",
        help="pairs: after --max-wait-s, the participant's part ends (end, default) or they "
        "negotiate with the --house agent (house)",
    )
    create.add_argument(
        "--dropout-s",
        type=float,
        default=60.0,
        metavar="S",
        help="pairs: seconds a participant's page may go silent before they have left the "
        "study (default 60; a closed page counts after 10)",
    )
    create.add_argument(
        "--completion-code", metavar="CODE", help="shown on the final screen (for a platform)"
    )
    create.add_argument("--completion-url", metavar="URL", help="an https link on the final screen")
    design = create.add_argument_group(
        "design: treatments, quiz, practice, questionnaire (flags override --design)"
    )
    design.add_argument(
        "--design",
        type=Path,
        metavar="FILE",
        help="a study design (JSON or TOML: treatments, quiz, practice, practice_house, "
        "questionnaire; docs/web.md)",
    )
    design.add_argument(
        "--quiz-attempts",
        type=positive_int,
        metavar="N",
        help="ask a comprehension quiz on the study's rules before play; N attempts",
    )
    design.add_argument(
        "--practice", type=int, metavar="N", help="unpaid practice negotiations before play"
    )
    design.add_argument(
        "--practice-house", metavar="SPEC", help="the practice's house agent (pairs: needed)"
    )


def study_request(args: argparse.Namespace) -> StudyRequest:
    """The request the flags describe; a bad value is a usage error naming its flag."""
    secret, given = run_secret(args)
    try:
        return StudyRequest(
            id=args.id,
            participants=tuple(_labels(args)),
            join=_join(args),
            matching=args.matching,
            house=args.house,
            role=args.role,
            negotiations=args.negotiations,
            tier=args.tier,
            secret=secret.hex() if given else None,
            deadline=args.deadline,
            clock=args.clock,
            consent=args.consent,
            instructions=_read(args.instructions) if args.instructions else None,
            payoff=_payoff(args),
            completion_code=args.completion_code,
            completion_url=args.completion_url,
            max_wait_s=args.max_wait_s,
            after_wait=args.after_wait,
            dropout_s=args.dropout_s,
            design=_design(args),
        )
    except ValidationError as exc:
        raise usage_error(_flag_error(exc)) from None


def _design(args: argparse.Namespace) -> StudyDesign:
    """The study's design: the file's (``--design``), then the flags that override it."""
    fields: dict[str, Any] = {}
    if args.design is not None:
        text = _read(args.design)
        try:
            loaded: object = (
                tomllib.loads(text) if args.design.suffix == ".toml" else json.loads(text)
            )
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise usage_error(f"--design: {args.design}: {str(exc).splitlines()[0]}") from None
        if not isinstance(loaded, dict):
            raise usage_error(f"--design: {args.design}: an object of design fields is needed")
        fields = cast("dict[str, Any]", loaded)
    if args.quiz_attempts is not None:
        fields["quiz"] = {**dict(fields.get("quiz") or {}), "max_attempts": args.quiz_attempts}
    if args.practice is not None:
        fields["practice"] = args.practice
    if args.practice_house is not None:
        fields["practice_house"] = args.practice_house
    try:
        return StudyDesign.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "design"
        message = str(first["msg"]).removeprefix("Value error, ")
        raise usage_error(f"--design: {where}: {message}") from None


def _join(args: argparse.Namespace) -> StudyJoin | None:
    if args.open is None:
        if args.join_ids or args.join_label != "label":
            raise usage_error("--join-label and --join-ids go with --open N")
        return None
    ids = tuple(name.strip() for name in args.join_ids.split(",") if name.strip())
    try:
        return StudyJoin(capacity=args.open, label=args.join_label, ids=ids)
    except ValidationError as exc:
        first = exc.errors()[0]
        flag = {"label": "--join-label", "ids": "--join-ids", "capacity": "--open"}
        where = next((flag[str(p)] for p in first["loc"] if str(p) in flag), "--join-ids")
        raise usage_error(f"{where}: {str(first['msg']).removeprefix('Value error, ')}") from None


def _limit(text: str) -> float | None:
    """``--max-wait-s``: seconds, or ``none``."""
    if text.strip().lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds or none") from None


def _payoff(args: argparse.Namespace) -> PayoffRule | None:
    if args.exchange_rate is None:
        return None
    return PayoffRule(
        exchange_rate=_amount(args.exchange_rate, "--exchange-rate"),
        show_up_fee=_amount(args.show_up_fee, "--show-up-fee"),
        currency=args.currency,
        pays=args.pays,
    )


def _flag_error(exc: ValidationError) -> str:
    """A validation error in the words of the flag it came from (a field's name, dashed)."""
    first = exc.errors()[0]
    message = str(first["msg"]).removeprefix("Value error, ")
    fields = [str(part) for part in first["loc"] if isinstance(part, str)]
    blamed = first.get("ctx", {}).get("field")  # a rule across fields names the one to change
    fields += [str(blamed)] if blamed else []
    return message if not fields else f"--{fields[-1].replace('_', '-')}: {message}"


def _labels(args: argparse.Namespace) -> list[str]:
    if args.count is None and args.participants is None and args.participants_file is None:
        if args.open is None:
            raise usage_error(
                "one of --participants, --participants-file, --count or --open is required"
            )
        return []
    if args.count is not None:
        width = max(2, len(str(args.count)))
        return [f"p{i:0{width}d}" for i in range(1, args.count + 1)]
    if args.participants is not None:
        return [label.strip() for label in args.participants.split(",") if label.strip()]
    text = _read(args.participants_file)
    labels = [line.strip() for line in text.splitlines() if line.strip()]
    if not labels:
        raise usage_error(f"{args.participants_file}: no labels (one a line, {LABEL})")
    return labels


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise usage_error(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None


def _amount(text: str, flag: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:
        raise usage_error(f"{flag}: {text!r} is not a number") from None


def write_private(path: Path, data: str | bytes) -> None:
    """Create ``path`` readable by its owner only (links are credentials, exports hold both
    sides' values); never overwrite (OSError if it exists or cannot be written)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data.encode() if isinstance(data, str) else data)

"""``dealroom study create|show|export|pause|resume|close``: a study with people on an HTTP
server.

``create`` opens the study (``POST /admin/studies``) and writes its links file: one row per
participant with their own seat-page link, owner-readable only (each link is a credential).
The study page's link is printed. ``show`` prints the study page's view as JSON (its
configuration in words, ``protocol.study_config``, and every participant's state); ``export``
saves its CSV files; ``pause``, ``resume`` and ``close`` set its status (``study_control``:
paused, its URL admits nobody new; closed, for good, every part ends once its negotiation has
ended) and print one line. The admin token is read from DEALROOM_ADMIN_TOKEN only (as
``dealroom room``).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

from dealroom.cli._common import (
    ADMIN_TOKEN_ENV,
    Commands,
    usage_error,
)
from dealroom.cli._study_flags import add_study_flags, study_request, write_private
from dealroom.cli.room import admin_json, admin_request, base_url
from dealroom.cli.study_simulate import add_simulate
from dealroom.protocol.study import StudyCreated, StudyStatus
from dealroom.server.study_export import EXPORTS


def add(commands: Commands) -> None:
    """Register the subcommands."""
    study = commands.add_parser("study", help="run a study with people on an HTTP server")
    actions = study.add_subparsers(dest="study_command", required=True, parser_class=type(study))
    create = actions.add_parser(
        "create",
        help="open a study; writes one link per participant and prints the study page's link",
        description=f"Open a study. The admin token is read from ${ADMIN_TOKEN_ENV}.",
    )
    create.add_argument("--server", required=True, help="server URL, e.g. http://127.0.0.1:8765")
    add_study_flags(create)
    create.add_argument(
        "--links",
        type=Path,
        metavar="FILE",
        help="where to write the participants' links (CSV; default: ID-links.csv; never "
        "overwritten)",
    )
    create.add_argument("--json", action="store_true", help="print the links as JSON too")
    create.set_defaults(handler=create_study)

    show = actions.add_parser(
        "show",
        help="print a study's configuration (payment rule, tier, deadline, limits, treatments, "
        "...), participants and their state (JSON)",
    )
    show.add_argument("--server", required=True, help="server URL, e.g. http://127.0.0.1:8765")
    show.add_argument("study", help="the study's id")
    show.set_defaults(handler=show_study)

    export = actions.add_parser("export", help="save a study's CSV files")
    export.add_argument("--server", required=True, help="server URL, e.g. http://127.0.0.1:8765")
    export.add_argument("--out", type=Path, default=Path("."), help="directory (default: .)")
    export.add_argument(
        "--with-secret",
        action="store_true",
        help="also save the study's configuration with its secret (STUDY-config.json, owner "
        "only: the scenarios and draws can be made again from it)",
    )
    export.add_argument("study", help="the study's id")
    export.set_defaults(handler=export_study)

    for action, words in STATUS_ACTIONS.items():
        control = actions.add_parser(action, help=words[1])
        control.add_argument(
            "--server", required=True, help="server URL, e.g. http://127.0.0.1:8765"
        )
        control.add_argument("study", help="the study's id")
        control.set_defaults(handler=set_status, status=words[0])

    add_simulate(actions)


STATUS_ACTIONS: dict[str, tuple[StudyStatus, str]] = {
    "pause": ("paused", "pause a study: its URL admits nobody new (everyone in goes on)"),
    "resume": ("open", "resume a paused study"),
    "close": ("closed", "close a study for good: every part ends once its negotiation has ended"),
}


def set_status(args: argparse.Namespace) -> int:
    """POST /admin/studies/{study}/status; one line: the study's status and its states."""
    url = f"{base_url(args.server)}/admin/studies/{args.study}/status"
    data = admin_json("POST", url, {"status": args.status})
    states = ", ".join(f"{n} {state}" for state, n in data["states"].items() if n)
    sys.stdout.write(f"study {args.study}: {data['status']} ({states or 'no participants'})\n")
    return 0


def create_study(args: argparse.Namespace) -> int:
    """POST /admin/studies, then write the links file (checked before anything is opened)."""
    links = args.links or Path(f"{args.id}-links.csv")
    if links.exists():
        raise usage_error(f"{links} exists; a links file is never overwritten (choose --links)")
    if not links.parent.is_dir():
        raise usage_error(f"{links.parent}: no such directory")
    request = study_request(args)
    server = base_url(args.server)
    body = request.model_dump(mode="json", exclude_defaults=True)
    created = StudyCreated.model_validate(admin_json("POST", f"{server}/admin/studies", body))
    participants = {
        label: f"{server}/web/seat#token={token}" for label, token in created.participants.items()
    }
    page = f"{server}/web/study#token={created.token}"
    try:
        if participants:  # a study open for joining only has no links of its own
            write_private(links, _links_csv(participants))
    except OSError as exc:  # the study is open: its links exist nowhere else, so print them
        sys.stdout.write(f"study page,{page}\n" + _links_csv(participants))
        sys.stderr.write(
            f"dealroom: error: {links}: {exc.strerror}; study {created.study} is open and its "
            "links are printed above (the server keeps no copy)\n"
        )
        return 1
    join = None if request.join is None else server + request.join.url(created.study)
    if args.json:
        out = {
            "study": created.study,
            "page": page,
            "links": str(links) if participants else None,
            "participants": participants,
            "join": join,
        }
        sys.stdout.write(json.dumps(out) + "\n")
        return 0
    count = f"{len(participants)} participants"
    if request.join is not None:
        count = f"{len(participants)} invited, {request.join.capacity} places through its URL"
    sys.stdout.write(f"study {created.study}: {count}\n")
    sys.stdout.write(f"study page   {page}\n")
    if participants:
        sys.stdout.write(f"links        {links} (one link per participant; keep it private)\n")
    if join is not None:
        sys.stdout.write(f"study URL    {join} (once per label)\n")
    return 0


def _links_csv(participants: dict[str, str]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["participant", "link"])
    writer.writerows(participants.items())
    return out.getvalue()


def show_study(args: argparse.Namespace) -> int:
    """GET /admin/studies/{study}."""
    data = admin_json("GET", f"{base_url(args.server)}/admin/studies/{args.study}")
    sys.stdout.write(json.dumps(data, indent=2) + "\n")
    return 0


def export_study(args: argparse.Namespace) -> int:
    """GET /admin/studies/{study}/{name}.csv for each export, saved as STUDY-NAME.csv: owner
    readable only (they hold both values of every negotiation and what each participant said)
    and never over an earlier export (checked for all of them before anything is fetched).
    ``--with-secret``: also GET /admin/studies/{study}/config.json, saved as
    STUDY-config.json, as privately."""
    if not args.out.is_dir():
        raise usage_error(f"{args.out}: no such directory")
    paths = {name: args.out / f"{args.study}-{name}.csv" for name in EXPORTS}
    config = args.out / f"{args.study}-config.json"
    for path in [*paths.values(), *([config] if args.with_secret else [])]:
        if path.exists():
            raise usage_error(f"{path} exists; an export is never overwritten (choose --out)")
    server = base_url(args.server)
    if args.with_secret:
        response = admin_request("GET", f"{server}/admin/studies/{args.study}/config.json")
        try:
            write_private(config, response.content)
        except OSError as exc:
            raise usage_error(f"{config}: {exc.strerror}") from None
        sys.stdout.write(f"{config}: the study's configuration and secret (keep it private)\n")
    fetched = {
        name: admin_request("GET", f"{server}/admin/studies/{args.study}/{name}.csv")
        for name in EXPORTS
    }
    for name, response in fetched.items():
        try:
            write_private(paths[name], response.content)
        except OSError as exc:
            raise usage_error(f"{paths[name]}: {exc.strerror}") from None
        header = name != "bonus"  # a platform's bonus file has none
        rows = len(list(csv.reader(io.StringIO(response.text)))) - header
        sys.stdout.write(f"{paths[name]}: {rows} rows\n")
    return 0

"""The web pages of ``dealroom serve --transport http``: watch a room, play a seat, follow a
tournament. Same process, same tokens; plain HTML, CSS and JavaScript shipped in the wheel
(``static/``), no build step. Live updates are server-sent events.

    GET  /web/room#token=SPECTATOR      the room page (offers chart, messages, clock, outcome;
                                        a market room's: its threads side by side)
    GET  /web/seat#token=SEAT           the seat page (briefing, controls, live offers; a
                                        market seller's: every thread, controls per buyer)
    GET  /web/tournament#token=ADMIN    the tournament page (progress, the report with plots)
    GET  /web/static/NAME               the pages' scripts and stylesheet
    GET  /web/api/room[/events]         spectator view (JSON, or live)      spectator token
    GET  /web/api/seat[/events]         seat view (JSON, or live)           seat token
    POST /web/api/seat/call             one tool call                       seat token
    POST /web/api/seat/consent          agree to the experiment's consent   seat token
    POST /web/api/seat/page             a page event (open, hidden, close)  seat token
    POST /web/api/seat/quiz             a study's quiz: one attempt         seat token
    POST /web/api/seat/form             a study's questionnaire: answers    seat token
    GET  /web/api/runs[/RUN]            runs, or one run's progress+board   admin token
    GET  /web/study#token=STUDY         a study's page (participants, live; its CSV exports)
    GET  /web/api/study[/events]        a study's view (JSON, or live)      study token
    GET  /web/api/study/NAME.csv        a study's export                    study token
    POST /web/api/study/status          pause, resume or close the study    study token
    POST /admin/studies, GET /admin/studies/STUDY[/NAME.csv|/config.json],
    POST /admin/studies/STUDY/status                                        admin token

Pages carry no data and no token: the script reads the token from the link's fragment (which a
browser never sends) and sends it as ``Authorization: Bearer``. Every page is served with a
content security policy that allows only this server's own scripts, styles and connections
(and images from ``blob:`` URLs: the tournament page's plots, SVG the server drew, shown as
images, which run no script); the scripts write text with ``textContent`` only.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources

from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import Response

from dealroom.server.rooms import RoomRegistry
from dealroom.server.web.market_seat import MarketSeatApi
from dealroom.server.web.routes import WebApi, error
from dealroom.server.web.study import StudyApi
from dealroom.server.web.tournament import TournamentApi

AdminCheck = Callable[[Request], Response | None]
"""None when the request carries the admin token, else the refusal to send."""

PAGES = {
    "room": "room.html",
    "seat": "seat.html",
    "tournament": "tournament.html",
    "study": "study.html",
}
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def static_files() -> dict[str, bytes]:
    """Every file of ``static/`` by name (read once: the set is fixed and small)."""
    root = resources.files(__name__).joinpath("static")
    return {
        item.name: item.read_bytes()
        for item in root.iterdir()
        if item.is_file() and any(item.name.endswith(s) for s in _TYPES)
    }


def _file(files: dict[str, bytes], name: str) -> Response:
    body = files.get(name)
    if body is None:
        return error(404, "no such file")
    kind = next(t for s, t in _TYPES.items() if name.endswith(s))
    return Response(body, media_type=kind, headers=HEADERS)


def mount(app: MCPServer, registry: RoomRegistry, *, admin: AdminCheck) -> None:
    """Add the pages and their data routes to ``app``."""
    files = static_files()
    api = WebApi(registry)
    tournaments = TournamentApi(registry, admin)
    studies = StudyApi(registry, admin, api)
    seats = MarketSeatApi(registry, api)  # a market seat's token; any other: api's

    async def page(request: Request) -> Response:
        return _file(files, PAGES[request.url.path.rsplit("/", 1)[-1]])

    async def index(request: Request) -> Response:
        del request
        return _file(files, "index.html")

    async def static(request: Request) -> Response:
        return _file(files, str(request.path_params["name"]))

    for name in PAGES:
        app.custom_route(f"/web/{name}", methods=["GET"])(page)
    app.custom_route("/web/", methods=["GET"])(index)
    app.custom_route("/web/static/{name}", methods=["GET"])(static)
    app.custom_route("/web/api/room", methods=["GET"])(api.room)
    app.custom_route("/web/api/room/events", methods=["GET"])(api.room_events)
    app.custom_route("/web/api/seat", methods=["GET"])(seats.seat)
    app.custom_route("/web/api/seat/events", methods=["GET"])(seats.seat_events)
    app.custom_route("/web/api/seat/call", methods=["POST"])(seats.call)
    app.custom_route("/web/api/seat/consent", methods=["POST"])(seats.consent)
    app.custom_route("/web/api/seat/page", methods=["POST"])(seats.page)
    app.custom_route("/web/api/seat/quiz", methods=["POST"])(api.quiz)
    app.custom_route("/web/api/seat/form", methods=["POST"])(api.form)
    app.custom_route("/web/api/runs", methods=["GET"])(tournaments.runs)
    app.custom_route("/web/api/runs/{run}", methods=["GET"])(tournaments.run)
    app.custom_route("/web/study/{study}/join", methods=["GET"])(studies.join)
    app.custom_route("/web/api/study", methods=["GET"])(studies.view)
    app.custom_route("/web/api/study/events", methods=["GET"])(studies.events)
    app.custom_route("/web/api/study/status", methods=["POST"])(studies.status)
    app.custom_route("/web/api/study/{name}.csv", methods=["GET"])(studies.export)
    app.custom_route("/admin/studies", methods=["POST"])(studies.create)
    app.custom_route("/admin/studies/{study}", methods=["GET"])(studies.show)
    app.custom_route("/admin/studies/{study}/config.json", methods=["GET"])(studies.config)
    app.custom_route("/admin/studies/{study}/status", methods=["POST"])(studies.admin_status)
    app.custom_route("/admin/studies/{study}/{name}.csv", methods=["GET"])(studies.admin_export)

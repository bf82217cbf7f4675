"""A dealroom HTTP server's admin API, with the standard library only.

One rollout is one negotiation in a room of its own: ``open_room`` asks ``POST /admin/rooms``
for a one-negotiation room whose other seat is a house agent, and returns the room id and the
model's seat token; ``outcome`` reads the finished negotiation's full outcome from ``GET
/admin/rooms/{room}`` (admin only: it holds both sides' surplus, which no seat reads). Every
failure is a ``ServerError`` whose message is one line that says what to fix (a wrong URL, a
wrong admin token, an unknown opponent).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, cast

TIMEOUT_S = 30.0


class ServerError(Exception):
    """The dealroom server could not be reached or refused a request (one line)."""


@dataclass(frozen=True)
class OpenedRoom:
    """A room just opened: its id, and the token of the seat the model plays."""

    room: str
    token: str


def base_url(server: str) -> str:
    """The server's root URL (a trailing ``/mcp`` is dropped), as ``dealroom room`` takes it."""
    return server.rstrip("/").removesuffix("/mcp")


class AdminApi:
    """The admin routes of one dealroom HTTP server, under its admin token."""

    def __init__(self, server: str, admin_token: str) -> None:
        if not server.startswith(("http://", "https://")):
            raise ServerError(f"server URL must start with http:// or https:// (got {server!r})")
        if not admin_token:
            raise ServerError("no admin token: set DEALROOM_ADMIN_TOKEN to the server's")
        self.base = base_url(server)
        self.mcp_url = f"{self.base}/mcp"
        self._token = admin_token

    def check(self) -> None:
        """Fail now, in one line, if the server is out of reach or refuses the admin token
        (asks for a room that does not exist: no side effect)."""
        try:
            self._request("GET", "/admin/rooms/room-none")
        except ServerError as error:
            if "HTTP 404" not in str(error):
                raise

    def open_room(self, request: dict[str, Any]) -> OpenedRoom:
        """``POST /admin/rooms`` with a ``RoomRequest``; the room and its one seat token."""
        created = self._request("POST", "/admin/rooms", request)
        tokens = cast(dict[str, str], created.get("tokens") or {})
        if len(tokens) != 1:
            raise ServerError(f"{self.base}: expected one client seat, got {sorted(tokens)}")
        return OpenedRoom(room=str(created["room"]), token=next(iter(tokens.values())))

    def outcome(self, room: str) -> dict[str, Any] | None:
        """The full outcome of the room's (only) negotiation, None while it is open."""
        shown = self._request("GET", f"/admin/rooms/{room}")
        negotiations = cast(list[dict[str, Any]], shown.get("negotiations") or [])
        if not negotiations:
            return None
        return cast(dict[str, Any] | None, negotiations[-1].get("outcome"))

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        url = f"{self.base}{path}"
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Authorization": f"Bearer {self._token}", "Content-Type": "application/json"}
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            raise ServerError(_refusal(url, exc)) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ServerError(
                f"cannot reach the dealroom server at {self.base} ({reason}); start one with "
                "`dealroom serve --transport http` and pass its URL as --env.taskset.server"
            ) from None
        except json.JSONDecodeError:
            raise ServerError(
                f"{url}: the answer is not JSON (is this a dealroom server?)"
            ) from None


def _refusal(url: str, exc: urllib.error.HTTPError) -> str:
    """One line for an HTTP error of the admin API: the server's own ``error`` text."""
    try:
        detail = str(json.loads(exc.read().decode("utf-8", "replace")).get("error", ""))
    except (json.JSONDecodeError, AttributeError):
        detail = ""
    if exc.code in (401, 403):
        return (
            f"{url}: HTTP {exc.code}: the server refused the admin token ({detail or 'refused'}); "
            "set DEALROOM_ADMIN_TOKEN to the token the server was started with"
        )
    return f"{url}: HTTP {exc.code}: {detail or exc.reason}"

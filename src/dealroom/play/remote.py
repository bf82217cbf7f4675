"""Play a match in a room of a dealroom HTTP server (``dealroom serve --transport http``).

``play_remote_match`` opens a room through the admin API (a scripted player takes the house
seat, so it runs on the server), connects every other player to its seat over streamable HTTP
with the seat's bearer token, and plays to the end. The server owns the clock and the referee and
records the negotiation in its own results store; the record returned here is rebuilt from what
the server reports (the scenario from the room's secret, which this side chooses; the events a
seat sees; the outcome from the admin API), so it matches the server's stored record.

Remote seats are charged the flat per-wake thinking cost (the server cannot see a client's model
calls). A failed player walks away, as in ``play_match``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import httpx2
import structlog

from dealroom.client.seat import SeatClient, SeatError
from dealroom.play.players import Player, PlayerFailed, ScriptedPlayer, SeatContext
from dealroom.play.runner import FAILED_MESSAGE, MatchResult
from dealroom.protocol import (
    ROLES,
    Role,
    RoomCreated,
    RoomRequest,
    Scenario,
)
from dealroom.protocol.errors import DealroomError
from dealroom.protocol.generator import DEFAULT_SPEC, scenario_at
from dealroom.protocol.outcome import Outcome
from dealroom.protocol.record import NegotiationRecord
from dealroom.protocol.secret import Secret

log = structlog.stdlib.get_logger(__name__)


class RemoteMatchError(DealroomError):
    """The server refused the room, or never reported the outcome."""

    kind = "remote_match"


def base_url(server: str) -> str:
    """The server's root URL (a trailing ``/mcp`` is dropped)."""
    return server.rstrip("/").removesuffix("/mcp")


class AdminClient:
    """The admin API of an HTTP server: open rooms, read their outcomes."""

    def __init__(self, server: str, token: str, *, timeout_s: float = 30.0) -> None:
        self.base = base_url(server)
        self._headers = {"Authorization": f"Bearer {token}"}
        self._timeout = timeout_s

    async def _request(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        async with httpx2.AsyncClient(headers=self._headers, timeout=self._timeout) as client:
            try:
                response = await client.request(method, self.base + path, json=body)
            except httpx2.HTTPError as exc:
                raise RemoteMatchError(f"{self.base}{path}: {exc}") from None
        try:
            data: dict[str, Any] = response.json()
        except ValueError:
            data = {"error": response.text[:200]}
        if response.status_code >= 400:
            message = data.get("error", data)
            raise RemoteMatchError(f"{self.base}{path}: HTTP {response.status_code}: {message}")
        return data

    async def create_room(self, request: RoomRequest) -> RoomCreated:
        """POST /admin/rooms."""
        body = request.model_dump(mode="json", exclude_defaults=True)
        return RoomCreated.model_validate(await self._request("POST", "/admin/rooms", body))

    async def outcome(self, room: str) -> Outcome | None:
        """The full outcome of the room's first negotiation, once it has ended."""
        data = await self._request("GET", f"/admin/rooms/{room}")
        negotiations: list[dict[str, Any]] = data.get("negotiations") or []
        if not negotiations or negotiations[0].get("outcome") is None:
            return None
        return Outcome.model_validate(negotiations[0]["outcome"])


def room_scenario(request: RoomRequest) -> Scenario:
    """The scenario a room plays first (as the server generates it under the request's secret)."""
    assert request.secret is not None, "play_remote_match chooses the secret itself"
    spec = DEFAULT_SPEC
    if request.deadline is not None:
        spec = DEFAULT_SPEC.model_copy(update={"deadline": request.deadline})
    return scenario_at(request.run_secret(), request.index, request.tier, spec)


async def play_remote_match(
    server: str,
    buyer: Player,
    seller: Player,
    *,
    admin_token: str,
    request: RoomRequest | None = None,
    timeout_s: float = 3600.0,
    cleanup_s: float = 30.0,
) -> MatchResult:
    """Open a room on ``server``, play both seats to the end, return the record."""
    players: dict[Role, Player] = {"buyer": buyer, "seller": seller}
    request = request or RoomRequest()
    if request.secret is None:  # chosen here, so the record can be rebuilt from the scenario
        request = request.model_copy(update={"secret": Secret.new().hex()})
    secret = request.run_secret()
    house: Role | None = next(
        (r for r in ("seller", "buyer") if isinstance(players[r], ScriptedPlayer)), None
    )
    if house is not None:
        request = request.model_copy(update={f"house_{house}": players[house].name})
    admin = AdminClient(server, admin_token)
    created = await admin.create_room(request)
    mcp_url = admin.base + "/mcp"
    extra: dict[str, Any] = {"players": {}, "errors": {}, "room": created.room, "server": server}
    with anyio.move_on_after(timeout_s) as scope:
        async with anyio.create_task_group() as group:
            for seat in ROLES:  # a bilateral room's seats
                token = created.tokens.get(seat)
                if token is None:
                    continue
                context = SeatContext(role=seat, rules=request.rules, seed=secret)
                group.start_soon(
                    _remote_player, mcp_url, token, players[seat], context, extra, cleanup_s
                )
    if scope.cancelled_caught:
        for role, token in created.tokens.items():
            extra["errors"].setdefault(role, f"the match took longer than {timeout_s:g} s")
            await _walk_away(mcp_url, token, cleanup_s)
    record = await _record(admin, created, request, buyer.name, seller.name, mcp_url)
    if not extra["errors"]:
        del extra["errors"]
    return MatchResult(record=record, extra=extra)


async def _remote_player(
    url: str,
    token: str,
    player: Player,
    context: SeatContext,
    extra: dict[str, Any],
    cleanup_s: float,
) -> None:
    role = context.role
    error: str | None = None
    data: Mapping[str, Any] = {}
    try:
        async with SeatClient.http(url, token) as seat:
            data = await player.play(seat, context)
            if (await seat.get_state()).observation.outcome is None:
                error = "the player stopped before the negotiation ended"
    except PlayerFailed as failure:
        error, data = failure.message, failure.extra
    except Exception as exc:
        log.exception("player failed", seat=role, player=player.name)
        error = f"{type(exc).__name__}: {exc}"
    extra["players"][role] = {"name": player.name, **data}
    if error is not None:
        extra["errors"][role] = error
        await _walk_away(url, token, cleanup_s)


async def _walk_away(url: str, token: str, cleanup_s: float) -> None:
    with anyio.move_on_after(cleanup_s):
        try:
            async with SeatClient.http(url, token) as seat:
                await seat.walk_away(FAILED_MESSAGE)
        except (SeatError, Exception) as exc:
            log.info("walk-away for failed seat refused", error=str(exc))


async def _record(
    admin: AdminClient,
    created: RoomCreated,
    request: RoomRequest,
    buyer: str,
    seller: str,
    url: str,
) -> NegotiationRecord:
    token = next(iter(created.tokens.values()))
    async with SeatClient.http(url, token) as seat:
        observation = (await seat.get_state()).observation
    outcome = await admin.outcome(created.room)
    if outcome is None:
        raise RemoteMatchError(f"room {created.room} has not reported an outcome")
    return NegotiationRecord(
        scenario=room_scenario(request),
        buyer=buyer,
        seller=seller,
        events=observation.events,
        outcome=outcome,
    )

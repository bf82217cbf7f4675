"""The bearer tokens that bind a client to one seat of one room, or to its spectator page.

Tokens come from ``secrets.token_urlsafe(32)``, after a ``prefix`` that is no secret: a server
of a cluster (``dealroom.server.cluster``) starts each token with ``w<index>.``, so that the
front routes it to the worker that owns its room. The server keeps only their SHA-256 digests
(in memory and in the room journals that let open rooms survive a restart): a token is looked
up by its digest and the digests compared with ``hmac.compare_digest``. A client's seat comes
from its token only, never from a tool argument or a header it could set itself.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier

from dealroom.server.market_seats import ServedMarketSeller
from dealroom.server.seat import ServedSeat

SEAT_SCOPE = "seat"


def new_token(prefix: str = "") -> str:
    """A fresh token (256 random bits), after ``prefix``."""
    return prefix + secrets.token_urlsafe(32)


def digest(token: str) -> bytes:
    """What the server keeps of a token."""
    return hashlib.sha256(token.encode()).digest()


@dataclass(frozen=True, slots=True)
class Grant:
    """What one token opens."""

    digest: bytes
    room: str
    role: str | None
    """The seat the token opens (a role; in a market room ``seller`` or a buyer's name); None
    for the room's read-only spectator token."""


class TokenTable:
    """Every live token's grant, by digest."""

    def __init__(self) -> None:
        self._grants: dict[bytes, Grant] = {}

    def grant(self, token_digest: bytes, room: str, role: str | None) -> None:
        """Let the token of ``token_digest`` open ``room``'s ``role`` seat (None: its page)."""
        self._grants[token_digest] = Grant(token_digest, room, role)

    def lookup(self, token: str) -> Grant | None:
        """What ``token`` opens, compared in constant time; None if it opens nothing."""
        found = digest(token)
        grant = self._grants.get(found)
        if grant is None or not hmac.compare_digest(grant.digest, found):
            return None
        return grant

    def revoke(self, room: str) -> None:
        """Forget every token of ``room``."""
        for key in [k for k, grant in self._grants.items() if grant.room == room]:
            del self._grants[key]


class SeatTokens(TokenVerifier):
    """Accepts exactly the seat tokens of open rooms: client_id = room, subject = role."""

    def __init__(self, seat_for_token: Callable[[str], tuple[str, str] | None]) -> None:
        self._seat_for_token = seat_for_token

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's seat, or None (the transport answers 401)."""
        found = self._seat_for_token(token)
        if found is None:
            return None
        room, role = found
        return AccessToken(token=token, client_id=room, subject=role, scopes=[SEAT_SCOPE])


def seat_of_request(
    seat: Callable[[str, str], ServedSeat | ServedMarketSeller],
) -> Callable[[], ServedSeat | ServedMarketSeller]:
    """A SeatProvider reading the seat from the request's verified bearer token."""

    def provider() -> ServedSeat | ServedMarketSeller:
        token = get_access_token()
        subject = None if token is None else token.subject
        if token is None or not subject:
            # The transport rejects requests without a valid token before any tool runs.
            raise PermissionError("no seat token on this request")
        return seat(token.client_id, subject)

    return provider

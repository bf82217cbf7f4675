"""The refusal of a request to the server's rooms or studies that is not a rule of a negotiation."""

from __future__ import annotations

from dealroom.protocol import SessionErrorCode
from dealroom.protocol.errors import DealroomError


class RoomError(DealroomError):
    """A request the room refused (not a rule of the negotiation); nothing changed."""

    def __init__(self, code: SessionErrorCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self._code = code
        self.message = message

    @property
    def code(self) -> SessionErrorCode:
        """Why the room refused."""
        return self._code

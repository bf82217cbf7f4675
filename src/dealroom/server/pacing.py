"""What one seat of a served room may start and say, per minute and per series: what one seat
token can make the server write (the store, the journal, the conversations) is bounded.

``Pace`` counts the negotiations a seat starts (``RoomLimits.negotiations_per_minute``);
``MessageBudget`` the characters of message text a client seat sends (a message, or one
attached to an offer, a rejection or a walk-away: ``RoomLimits.message_chars_per_minute`` and
``message_chars_per_series``). Text is the only part of a call whose size the seat chooses: each
character of it is written about five times (the journal's action, the record's event, the
conversation's call and the replies that show it), so 100 messages of 2,000 characters in each
of 10 negotiations a minute wrote 10 MB. A message is charged when it is sent, refused or not
(a refused call is stored in the conversation too), and one the budget refuses
(``too_many_message_chars``) reaches nothing: no referee, no journal, no conversation. A
journal's replay is not paced (it does not go through the seat), so a restart starts the
windows afresh; the series' count is the process's.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import assert_never

from dealroom.protocol import ROLES, Accept, Action, MakeOffer, Reject, Role, SendMessage, WalkAway

WINDOW_S = 60.0
"""The window of a per-minute limit, in wall seconds."""


class Pace:
    """The starts a seat may make in any minute (``RoomLimits.negotiations_per_minute``)."""

    def __init__(self, per_minute: int | None) -> None:
        self.per_minute = per_minute
        self._starts: deque[float] = deque()

    def refusal(self, now: float) -> str | None:
        """Why one more start is not allowed at ``now`` (with the seconds to wait), or None."""
        starts = self._starts
        while starts and now - starts[0] >= WINDOW_S:
            starts.popleft()
        if self.per_minute is None or len(starts) < self.per_minute:
            return None
        wait = math.ceil(WINDOW_S - (now - starts[0]))
        return (
            f"This room starts at most {self.per_minute} negotiations a minute; the next can "
            f"start in {wait} s."
        )

    def started(self, now: float) -> None:
        """Count a start made at ``now``."""
        if self.per_minute is not None:
            self._starts.append(now)


def message_chars(action: Action) -> int:
    """The characters of message text an action carries."""
    match action:
        case SendMessage():
            return len(action.text)
        case MakeOffer() | Reject() | WalkAway():
            return 0 if action.message is None else len(action.message)
        case Accept():
            return 0
        case _:
            assert_never(action)


class MessageBudget:
    """The message characters each seat may send in any minute and over its series."""

    def __init__(
        self, per_minute: int | None, per_series: int | None, timer: Callable[[], float]
    ) -> None:
        self.per_minute = per_minute
        self.per_series = per_series
        self._timer = timer
        self._sent: dict[Role, deque[tuple[float, int]]] = {role: deque() for role in ROLES}
        self._in_window: dict[Role, int] = dict.fromkeys(ROLES, 0)
        self.series: dict[Role, int] = dict.fromkeys(ROLES, 0)
        """Characters each seat has sent over the series (in this process)."""

    def charge(self, role: Role, action: Action) -> str | None:
        """Count the action's message text against ``role``'s budget, or say why it is over
        the budget (then nothing is counted)."""
        chars = message_chars(action)
        if chars == 0:
            return None
        now = self._timer()
        sent = self._sent[role]
        while sent and now - sent[0][0] >= WINDOW_S:
            self._in_window[role] -= sent.popleft()[1]
        minute = self.per_minute
        if minute is not None and chars > minute:
            return (
                f"A seat sends at most {minute:,} characters of messages a minute; this one "
                f"has {chars:,}."
            )
        if self.per_series is not None and self.series[role] + chars > self.per_series:
            left = self.per_series - self.series[role]
            return (
                f"A seat sends at most {self.per_series:,} characters of messages in a series; "
                f"{left:,} are left."
            )
        if minute is not None and self._in_window[role] + chars > minute:
            return self._minute_refusal(role, chars, now)
        sent.append((now, chars))
        self._in_window[role] += chars
        self.series[role] += chars
        return None

    def _minute_refusal(self, role: Role, chars: int, now: float) -> str:
        assert self.per_minute is not None
        freed, wait = self.per_minute - self._in_window[role], 0.0
        for at, size in self._sent[role]:  # the oldest leave the window first
            if freed >= chars:
                break
            freed += size
            wait = WINDOW_S - (now - at)
        return (
            f"A seat sends at most {self.per_minute:,} characters of messages a minute; this "
            f"one ({chars:,}) can be sent in {math.ceil(wait)} s."
        )

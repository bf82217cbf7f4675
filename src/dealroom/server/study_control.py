"""A study's status, the researcher's controls (``protocol.study.StudyStatus``): open, paused
or closed, journaled as ``["status", status, at]``.

Paused, the study's URL admits no new label (``study_paused``, 503); everyone already in goes
on, matched and paid as before, and resuming opens the URL again. Closed is for good: the URL
admits nobody new (``study_closed``, 410), and the reaper ends every part that is not over as
``closed`` once it has no open negotiation (a negotiation under way is played to its end, so
nobody's partner is left alone): those who took part are paid by the rule for what they
finished and get the completion code; those who never consented are shown that the study is
closed and have no payment line.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from dealroom.protocol.study import StudyStatus
from dealroom.server.journal import Op


class StudyControl:
    """A study's status and since when (Unix time; None: open since its creation)."""

    def __init__(self, log: Callable[[Op], None]) -> None:
        self.status: StudyStatus = "open"
        self.since: float | None = None
        self._log = log

    @property
    def admits(self) -> bool:
        """Whether the study's URL admits a new label now."""
        return self.status == "open"

    def set(self, status: StudyStatus) -> str | None:
        """Change the status (journaled; the same status again changes nothing); a refusal in
        words when it cannot change: a closed study stays closed."""
        if status == self.status:
            return None
        if self.status == "closed":
            return "a closed study stays closed"
        self.replay(status, round(time.time(), 3))
        self._log(["status", status, self.since])
        return None

    def replay(self, status: StudyStatus, at: float) -> None:
        """Set the status (new, or replayed from the journal)."""
        self.status, self.since = status, at

"""A room's side of experiments: the consent its client seats are asked for, what an experiment
records with each negotiation, and the hook a study implements to hear of each result.

The room knows no study: it calls ``StudyHook.recorded`` (``dealroom.server.studies.Studies``
implements it) and records the ``Experiment`` of its settings.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from dealroom.protocol import Role
from dealroom.server.negotiation import Negotiation
from dealroom.server.room_settings import Experiment

if TYPE_CHECKING:
    from dealroom.server.room import Room


class StudyHook(Protocol):
    """Told of each negotiation of a study's room as it is recorded, replays included."""

    def recorded(self, room: Room, negotiation: Negotiation) -> None:
        """A negotiation of ``room`` has ended (each negotiation once per process)."""
        ...


class Consent:
    """The consent line the room asks its client seats' people to agree to, and who agreed when
    (UTC, ISO 8601; the first time counts). ``on_agree`` journals an agreement as it is given,
    so that a restarted server does not ask again (``restore`` takes it back)."""

    def __init__(self, text: str | None, *, on_agree: Callable[[Role, str], None]) -> None:
        self.text = text
        self.agreed: dict[Role, str] = {}
        """When each seat's person agreed, in the order they did."""
        self._on_agree = on_agree

    def needed(self, role: Role) -> bool:
        """True while the room asks for consent and the seat's person has not agreed yet."""
        return self.text is not None and role not in self.agreed

    def agree(self, role: Role, when: str | None = None) -> None:
        """The seat's person agreed, now or ``when`` (the first time counts; journaled)."""
        if role not in self.agreed:
            self.agreed[role] = when or datetime.now(UTC).isoformat(timespec="seconds")
            self._on_agree(role, self.agreed[role])

    def restore(self, role: Role, when: str) -> None:
        """An agreement read back from the journal (not journaled again)."""
        self.agreed.setdefault(role, when)


def experiment_extra(experiment: Experiment, consent: Consent) -> dict[str, Any]:
    """What an experiment adds to each stored negotiation's extra (nothing outside one)."""
    extra: dict[str, Any] = {}
    if experiment.participant is not None:
        extra["participant"] = experiment.participant
    if consent.text is not None:
        extra["consent"] = {"text": consent.text, "agreed": dict(consent.agreed)}
    if experiment.study is not None:
        extra["study"] = experiment.study.model_dump(mode="json")
    return extra

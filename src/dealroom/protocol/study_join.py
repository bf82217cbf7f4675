"""One study URL that a recruitment platform hands out (pure, no I/O).

A study open for self-enrolment (``StudyRequest.join``) admits whoever visits
``/web/study/<id>/join?<label>=<their label>`` (``dealroom.server.web.study``), once per label
and up to its ``capacity``: Prolific puts ``PROLIFIC_PID={{%PROLIFIC_PID%}}`` in the URL, oTree's
rooms call it ``participant_label``. The query parameters named in ``ids`` are recorded with the
label (Prolific's ``STUDY_ID`` and ``SESSION_ID``); any other parameter is ignored, never stored.
Labels and ids are private data: the study's journal and exports hold them, nothing a
participant reads shows another's, and the server does not log them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import quote

from pydantic import Field, field_validator, model_validator

from dealroom.protocol._base import Model

PARAM = r"^[A-Za-z_][A-Za-z0-9_.-]{0,39}$"
"""A query parameter's name: a letter or ``_``, then letters, digits, ``_.-``; at most 40."""

JOIN_VALUE = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"
"""A label's or an id's value: letters, digits, ``_.:-``, at most 128 (Prolific's ids are 24 hex
digits; oTree's labels are letters and digits)."""

MAX_IDS = 8
"""Query parameters a study may record besides the label."""

PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
"""A placeholder of a completion URL: ``{label}``, or ``{NAME}`` of a recorded id."""


class JoinRefusal(StrEnum):
    """Why a visit to a study's URL admitted nobody: each a one-line answer with this code,
    and nothing changed."""

    NO_STUDY = "no_study"
    """No study of that id on this server (404)."""
    NOT_RESTORED = "study_not_restored"
    """The study's journal could not be restored at start (410)."""
    NOT_OPEN = "study_not_open"
    """The study admits invited participants only, through their own links (403)."""
    BAD_LABEL = "bad_label"
    """The label parameter is missing, repeated or malformed (400)."""
    BAD_ID = "bad_platform_id"
    """A recorded id parameter is repeated or malformed (400)."""
    FULL = "study_full"
    """Every place of the study is taken (410): nobody was admitted."""
    PAUSED = "study_paused"
    """The researcher paused the study (503): no new label is admitted for now."""
    CLOSED = "study_closed"
    """The researcher closed the study (410): no new label is admitted."""


class StudyJoin(Model):
    """A study's self-enrolment through its one URL (see the module docstring)."""

    capacity: int = Field(ge=1, le=2000)
    """How many participants the URL admits, one per label."""
    label: str = Field(default="label", pattern=PARAM)
    """The query parameter that carries a participant's label (``PROLIFIC_PID`` on Prolific)."""
    ids: tuple[str, ...] = Field(default=(), max_length=MAX_IDS)
    """Further query parameters recorded with the label (``STUDY_ID``, ``SESSION_ID``), when the
    visit carries them."""

    @field_validator("ids")
    @classmethod
    def _names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        bad = next((name for name in names if re.fullmatch(PARAM, name) is None), None)
        if bad is not None:
            raise ValueError(
                f"query parameter {bad[:50]!r}: a letter or _, then letters, digits, _.-"
            )
        if len(set(names)) != len(names):
            raise ValueError("query parameters must be unique")
        return names

    @model_validator(mode="after")
    def _label_not_an_id(self) -> StudyJoin:
        if self.label in self.ids:
            raise ValueError(f"{self.label!r} is the label's parameter, not an id's")
        return self

    def url(self, study: str) -> str:
        """The study's URL (path and query), each parameter's value shown as ``<NAME>``."""
        names = (self.label, *self.ids)
        return f"/web/study/{study}/join?" + "&".join(f"{name}=<{name}>" for name in names)


@dataclass(frozen=True, slots=True)
class JoinVisit:
    """What a visit to a study's URL carries that the study keeps."""

    label: str
    ids: dict[str, str]


@dataclass(frozen=True, slots=True)
class JoinRefused:
    """Why a visit admits nobody, with its code."""

    code: JoinRefusal
    message: str
    """One sentence."""


def join_values(study: StudyJoin, query: Mapping[str, list[str]]) -> JoinVisit | JoinRefused:
    """A visit's label and recorded ids from its query (each parameter's values, in order), or
    why it admits nobody."""
    labels = query.get(study.label, [])
    if len(labels) != 1 or re.fullmatch(JOIN_VALUE, labels[0]) is None:
        said = "given once" if len(labels) > 1 else "letters, digits, _.:- (at most 128)"
        return JoinRefused(
            JoinRefusal.BAD_LABEL, f"this link needs its {study.label} parameter, {said}"
        )
    ids: dict[str, str] = {}
    for name in study.ids:
        values = query.get(name, [])
        if len(values) > 1 or (values and re.fullmatch(JOIN_VALUE, values[0]) is None):
            return JoinRefused(
                JoinRefusal.BAD_ID,
                f"the {name} parameter: given once, letters, digits, _.:- (at most 128)",
            )
        if values:
            ids[name] = values[0]
    return JoinVisit(labels[0], ids)


def placeholders(url: str) -> list[str]:
    """The placeholders a completion URL names, in order."""
    return PLACEHOLDER.findall(url)


def completion_link(url: str, label: str, ids: Mapping[str, str]) -> str:
    """A completion URL with its placeholders filled for one participant, URL-encoded:
    ``{label}`` their label, ``{NAME}`` their id of that name (empty if their visit had none)."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        return quote(label if name == "label" else ids.get(name, ""), safe="")

    return PLACEHOLDER.sub(value, url)

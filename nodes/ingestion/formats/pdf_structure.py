"""A PDF's structure: the font size of its text, its headings — from the outline (bookmarks) or,
without one, from font sizes larger than the body text — and the section spans they open; a title
from the first page's largest line when the metadata's is junk. The structural half of reading a
PDF (`nodes.ingestion.formats.pdf`); page labels (the numbers the document prints: «vii», «12») are read
there.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nodes.ingestion.formats.pdf_layout import PAGE_SEPARATOR
from grove.core.ingest_types import Section

HEADING_SIZE_RATIO = 1.15
"""A line set at least this much larger than the body text is a heading (PDFs without an outline)."""
TITLE_SIZE_RATIO = 1.3
MAX_HEADING_CHARS = 150
_SPACES = re.compile(r"\s+")

# --- font sizes and outline ---------------------------------------------------------


@dataclass
class Run:
    """A piece of text drawn with one font size (PDFium's size of its characters)."""

    text: str
    size: float


def body_size(pages: Sequence[Sequence[Run]]) -> float:
    """The font size most characters are set in."""
    sizes: Counter[float] = Counter()
    for runs in pages:
        for run in runs:
            sizes[round(run.size, 1)] += len(run.text.strip())
    return sizes.most_common(1)[0][0] if sizes else 0.0


def _large_lines(runs: Sequence[Run], threshold: float) -> list[tuple[str, float]]:
    """Consecutive runs at or above `threshold`, merged into lines: (text, size)."""
    lines: list[tuple[str, float]] = []
    current: list[str] = []
    size = 0.0
    for run in [*runs, Run("", 0.0)]:
        if run.size >= threshold and run.text.strip():
            current.append(run.text)
            size = max(size, run.size)
            if not run.text.endswith("\n"):
                continue
        if current:
            text = _SPACES.sub(" ", "".join(current)).strip()
            if text and len(text) <= MAX_HEADING_CHARS and any(ch.isalpha() for ch in text):
                lines.append((text, size))
            current, size = [], 0.0
    return lines


def title_from_fonts(first_page: Sequence[Run], body: float) -> str | None:
    """The largest line on the first page, when it is clearly larger than the body text."""
    if body <= 0:
        return None
    lines = _large_lines(first_page, body * TITLE_SIZE_RATIO)
    if not lines:
        return None
    largest = max(size for _, size in lines)
    return " ".join(text for text, size in lines if size == largest)[:MAX_HEADING_CHARS]


@dataclass(frozen=True)
class Heading:
    title: str
    page: int  # 0-based physical index
    level: int  # 1 = outermost


def font_headings(pages: Sequence[Sequence[Run]], body: float) -> list[Heading]:
    """Headings of a PDF without an outline: lines set larger than the body text, levels by size."""
    if body <= 0:
        return []
    found = [(index, text, size) for index, runs in enumerate(pages)
             for text, size in _large_lines(runs, body * HEADING_SIZE_RATIO)]
    sizes = sorted({round(size, 1) for _, _, size in found}, reverse=True)
    return [Heading(text, index, sizes.index(round(size, 1)) + 1) for index, text, size in found]


def outline_headings(pdf: Any) -> list[Heading]:
    """The PDF's outline (bookmarks) as headings, in document order (a pypdfium2 document,
    under the PDFium lock)."""
    headings: list[Heading] = []
    try:
        for bookmark in pdf.get_toc():
            destination = bookmark.get_dest()  # PDFium follows a GoTo action too
            page = destination.get_index() if destination is not None else None
            title = _SPACES.sub(" ", bookmark.get_title() or "").strip()
            if title and page is not None and page >= 0:
                headings.append(Heading(title, page, bookmark.level + 1))
    except Exception:  # a malformed outline is not worth failing the document for
        return []
    return headings


# --- sections ----------------------------------------------------------------------


def _heading_pattern(title: str) -> re.Pattern[str]:
    """The heading as printed: its letters in order, any whitespace between them (outline titles
    are often written without the spaces the page prints: «MacOSX» for «Mac OS X»), any case,
    optionally after a number («3.1 »), at the start of a line."""
    letters = [re.escape(char) for char in title if not char.isspace()]
    return re.compile(r"(?m)^[ \t]*(?:[\dA-Za-zА-Яа-я]{1,3}(?:\.\d+)*\.?[ \t]+)?" + r"\s*".join(letters),
                      re.I)


def locate_sections(pages: Sequence[str], headings: Sequence[Heading]) -> list[Section]:
    """Section spans over `PAGE_SEPARATOR.join(pages)` for headings placed on their pages.

    Each heading is looked for on its page, after the previous heading found
    there; one that is not printed (or printed as an image) starts at the top
    of its page. The path of a heading is its chain of enclosing levels.
    """
    offsets, position = [], 0
    for page in pages:
        offsets.append(position)
        position += len(page) + len(PAGE_SEPARATOR)
    total = max(0, position - len(PAGE_SEPARATOR))
    starts: list[tuple[int, list[str]]] = []
    stack: list[tuple[int, str]] = []
    cursor = 0
    for heading in headings:
        if not 0 <= heading.page < len(pages):
            continue
        page_start = offsets[heading.page]
        search_from = max(cursor - page_start, 0)
        match = _heading_pattern(heading.title).search(pages[heading.page], search_from)
        start = page_start + (match.start() if match else search_from)
        if match:
            start += len(match.group(0)) - len(match.group(0).lstrip())
        if start < cursor:
            start = cursor
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        stack.append((heading.level, heading.title))
        starts.append((start, [title for _, title in stack]))
        cursor = start
    sections: list[Section] = []
    if starts and starts[0][0] > 0:
        sections.append(Section(start=0, end=starts[0][0], path=[]))
    for i, (start, path) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else total
        if end > start:
            sections.append(Section(start=start, end=end, path=path))
        elif sections and i + 1 < len(starts):
            continue  # two headings at one place: the deeper one (next) wins
    return sections

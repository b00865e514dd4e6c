"""Paragraph + overlap chunking over character spans.

A chunk may be embedded by pooling the whole document's token embeddings over its tokens (late chunking),
so it is first a character span ``[start, end)`` that a tokenizer's offset mapping turns into tokens.
Whole paragraphs are packed while the chunk stays within ``target_chars``; a paragraph that does not fit
is split at sentences (:mod:`chunking.sentences`); a sentence over ``max_chars`` is cut at whitespace, so
no chunk exceeds ``max_chars``. Each chunk after the first starts with whole trailing sentences of the
previous one, up to ``overlap_chars`` (never mid-word), which give way when its own start would not fit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .paragraphs import paragraph_bounds
from .sentences import sentence_bounds
from .spans import tight_bounds

__all__ = [
    "PAGE_SEPARATOR",
    "Chunk",
    "chunk_pages",
    "chunk_text",
    "join_pages",
]

PAGE_SEPARATOR = "\n\n"
"""What :func:`chunk_pages` puts between pages to form the document text."""

_WHITESPACE_RUN = re.compile(r"\s+")

MAX_BARE_HEADING_CHARS = 150
"""A region that is one line at most this long and starts a section is a bare heading."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrieval chunk, as a tight character span into the document text.

    ``text == document[start:end]``. ``[start, overlap_start)`` repeats the
    end of the previous chunk (context only); ``[overlap_start, end)`` is new
    content, and these new parts tile the document's non-whitespace text
    exactly once. ``page`` is 1-based in :func:`chunk_pages`, ``None`` from
    :func:`chunk_text`. ``section`` is the heading path the chunk sits under
    (:func:`chunk_regions`), outermost first.
    """

    start: int
    end: int
    text: str
    position: int
    overlap_start: int
    page: int | None = None
    section: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Unit:
    """The smallest packable piece: a sentence, or a piece of a huge one.

    Only whole sentences may be repeated as overlap.
    """

    start: int
    end: int
    whole_sentence: bool


@dataclass(frozen=True, slots=True)
class _Bounds:
    start: int
    end: int
    overlap_start: int


def join_pages(pages: Sequence[str]) -> str:
    """The document text whose offsets :func:`chunk_pages` reports."""
    return PAGE_SEPARATOR.join(pages)


def resolve_sizes(
    target_chars: int, overlap_chars: int, max_chars: int | None
) -> tuple[int, int, int]:
    """Validate the size knobs; bad values would silently break invariants."""
    if max_chars is None:
        max_chars = 2 * target_chars
    if target_chars < 1:
        raise ValueError(f"target_chars must be positive, got {target_chars}")
    if not 0 <= overlap_chars < target_chars:
        raise ValueError(
            f"overlap_chars must be in [0, target_chars), got {overlap_chars}"
        )
    if max_chars < target_chars:
        raise ValueError(
            f"max_chars ({max_chars}) must be >= target_chars ({target_chars})"
        )
    return target_chars, overlap_chars, max_chars


def _split_at_whitespace(text: str, start: int, end: int, limit: int) -> list[_Unit]:
    """Cut an over-long sentence into near-equal pieces of at most ``limit``.

    Cuts fall on whitespace; only a run with no whitespace for ``limit``
    characters (a URL, a base64 blob) is cut mid-run, since there is no
    better place.
    """
    gaps = [m.span() for m in _WHITESPACE_RUN.finditer(text, start, end)]
    pieces: list[_Unit] = []
    pos = start
    gap_index = 0
    while end - pos > limit:
        remaining = end - pos
        ideal = pos + math.ceil(remaining / math.ceil(remaining / limit))
        while gap_index < len(gaps) and gaps[gap_index][0] <= pos:
            gap_index += 1
        best: tuple[int, int] | None = None
        i = gap_index
        while i < len(gaps) and gaps[i][0] <= pos + limit:
            if best is None or gaps[i][0] <= ideal:
                best = gaps[i]
            if gaps[i][0] > ideal:
                break
            i += 1
        if best is None:
            pieces.append(_Unit(pos, pos + limit, False))
            pos += limit
        else:
            pieces.append(_Unit(pos, best[0], False))
            pos = best[1]
    pieces.append(_Unit(pos, end, False))
    return pieces


def _paragraph_units(
    text: str, start: int, end: int, max_chars: int, target_chars: int
) -> list[_Unit]:
    units: list[_Unit] = []
    for s, e in sentence_bounds(text, start, end):
        if e - s > max_chars:
            units.extend(_split_at_whitespace(text, s, e, target_chars))
        else:
            units.append(_Unit(s, e, True))
    return units


def _overlap_candidates(units: list[_Unit], overlap_chars: int) -> list[_Unit]:
    """Trailing whole sentences of a chunk spanning at most ``overlap_chars``."""
    if not units:
        return []
    end = units[-1].end
    i = len(units)
    while (
        i > 0
        and units[i - 1].whole_sentence
        and end - units[i - 1].start <= overlap_chars
    ):
        i -= 1
    return units[i:]


def _paragraphs(text: str, heading_first: bool) -> list[tuple[int, int]]:
    """Paragraph bounds; with ``heading_first``, short leading paragraphs (the section's
    heading, or a chapter's heading and its first section's) are glued to the paragraph
    after them, so a heading never ends up a chunk on its own."""
    bounds = paragraph_bounds(text)
    while heading_first and len(bounds) >= 2 and bounds[0][1] - bounds[0][0] <= MAX_BARE_HEADING_CHARS:
        bounds[:2] = [(bounds[0][0], bounds[1][1])]
    return bounds


def chunk_bounds(
    text: str, target_chars: int, overlap_chars: int, max_chars: int, heading_first: bool = False
) -> list[_Bounds]:
    """Pack ``text`` into chunk bounds (see the module docstring)."""
    result: list[_Bounds] = []
    carry: list[_Unit] = []  # overlap candidates for the next chunk
    overlap: list[_Unit] = []
    new: list[_Unit] = []

    def chunk_start() -> int:
        return (overlap or new)[0].start

    def flush() -> None:
        nonlocal carry, overlap, new
        result.append(_Bounds(chunk_start(), new[-1].end, new[0].start))
        carry = _overlap_candidates(overlap + new, overlap_chars)
        overlap, new = [], []

    def open_chunk(first: list[_Unit]) -> None:
        """Start a chunk with ``first``, keeping as much overlap as fits."""
        nonlocal overlap, new
        block_start, block_end = first[0].start, first[-1].end
        limit = target_chars if block_end - block_start <= target_chars else max_chars
        i = 0
        while i < len(carry) and block_end - carry[i].start > limit:
            i += 1
        overlap, new = carry[i:], list(first)

    for p_start, p_end in _paragraphs(text, heading_first):
        units = _paragraph_units(text, p_start, p_end, max_chars, target_chars)
        if new and p_end - chunk_start() <= target_chars:
            new.extend(units)
            continue
        if p_end - p_start <= target_chars:
            if new:
                flush()
            open_chunk(units)
            continue
        for unit in units:
            if new and unit.end - chunk_start() <= target_chars:
                new.append(unit)
                continue
            if new:
                flush()
            open_chunk([unit])
    if new:
        flush()
    return result


def build_chunks(
    text: str, bounds: list[_Bounds], offset: int, first_position: int, page: int | None,
    section: tuple[str, ...] = (),
) -> list[Chunk]:
    return [
        Chunk(
            start=b.start + offset,
            end=b.end + offset,
            text=text[b.start : b.end],
            position=first_position + i,
            overlap_start=b.overlap_start + offset,
            page=page,
            section=section,
        )
        for i, b in enumerate(bounds)
    ]


def chunk_text(
    text: str,
    *,
    target_chars: int = 1000,
    overlap_chars: int = 200,
    max_chars: int | None = None,
) -> list[Chunk]:
    """Chunk a document in "paragraph + overlap" mode.

    ``max_chars`` defaults to ``2 * target_chars``. Offsets refer to ``text``;
    empty or whitespace-only text gives ``[]``.
    """
    target_chars, overlap_chars, max_chars = resolve_sizes(
        target_chars, overlap_chars, max_chars
    )
    if tight_bounds(text, 0, len(text)) is None:
        return []
    return build_chunks(text, chunk_bounds(text, target_chars, overlap_chars, max_chars), 0, 0, None)


def chunk_pages(
    pages: Sequence[str],
    *,
    target_chars: int = 1000,
    overlap_chars: int = 200,
    max_chars: int | None = None,
) -> list[Chunk]:
    """Chunk a paged document (e.g. a PDF) without crossing page boundaries.

    Offsets refer to ``join_pages(pages)`` (pages joined with
    ``PAGE_SEPARATOR``), so the whole document can still be encoded at once
    for late chunking. ``page`` is 1-based; the first chunk of every page has
    no overlap (it would have to reach into the previous page). Positions
    run across the whole document.
    """
    target_chars, overlap_chars, max_chars = resolve_sizes(
        target_chars, overlap_chars, max_chars
    )
    chunks: list[Chunk] = []
    offset = 0
    for page_number, page in enumerate(pages, start=1):
        if tight_bounds(page, 0, len(page)) is not None:
            bounds = chunk_bounds(page, target_chars, overlap_chars, max_chars)
            chunks.extend(build_chunks(page, bounds, offset, len(chunks), page_number))
        offset += len(page) + len(PAGE_SEPARATOR)
    return chunks

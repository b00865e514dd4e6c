"""Character spans into a source text.

Chunks are embedded with late chunking: the whole document is encoded once and
each chunk's vector is pooled from the token embeddings that fall inside its
character span. Every splitter here therefore reports exact ``(start, end)``
offsets into the text it was given rather than copies of the text alone.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Span", "tight_bounds"]


@dataclass(frozen=True, slots=True)
class Span:
    """A piece of a source text: ``source[start:end] == text``.

    Spans are *tight*: they neither start nor end with whitespace, so the
    offsets map to the tokens that actually carry the content.
    """

    start: int
    end: int
    text: str


def tight_bounds(text: str, start: int, end: int) -> tuple[int, int] | None:
    """Shrink ``text[start:end]`` to exclude surrounding whitespace.

    Returns ``None`` when the range holds only whitespace, so callers can drop
    it; whitespace is defined by :py:meth:`str.isspace` (also what ``re``'s
    ``\\s`` matches), which covers NBSP and the other Unicode spaces common in
    converted documents.
    """
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start == end:
        return None
    return start, end

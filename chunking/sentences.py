"""Russian-aware sentence splitting with exact offsets.

Boundaries come from razdel's rule-based ``sentenize``, which knows Russian abbreviations, initials,
decimals, direct speech and ellipses. On top: sentences never cross a paragraph (:mod:`chunking.paragraphs`),
and a line break ends one before a list item or in text laid out one item per line, where razdel would glue
the lines. razdel's own driver loop is quadratic on long runs without boundaries, so its splitter and rules
run here with offsets tracked; the tests check the output is identical to ``razdel.sentenize``, which is
used instead if razdel's internals ever change shape.
Speed: bench/README.md, «Benches with no figures here» (bench.chunking_speed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from razdel import sentenize as _razdel_sentenize

from .paragraphs import (
    continues_line,
    line_bounds,
    paragraph_bounds,
    starts_list_item,
)
from .spans import Span, tight_bounds

try:  # razdel internals, used only to avoid razdel's quadratic driver loop.
    from razdel.segmenters.sentenize import BULLET_SIZE as _BULLET_SIZE
    from razdel.segmenters.sentenize import SentSplit as _SentSplit

    _SPLIT_PATTERN = _razdel_sentenize.split.re
    _SPLIT_WINDOW: int = _razdel_sentenize.split.window
    _JOIN: Callable[[object], bool] | None = _razdel_sentenize.join
    # The skip in _razdel_bounds_fast relies on these two rules coming first.
    if [rule.name for rule in _razdel_sentenize.rules[:2]] != [
        "empty_side",
        "no_space_prefix",
    ]:  # pragma: no cover - razdel changed
        _JOIN = None
except (ImportError, AttributeError):  # pragma: no cover - razdel changed
    _JOIN = None

__all__ = ["split_sentences"]

# Line endings that make a break before an uppercase line look like a wrapped
# sentence rather than a new item ("..., \nМосква", "раз-\nбить").
_CONTINUING_LINE_ENDINGS = ",-(\u00ad"


def _razdel_bounds_fast(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """razdel's sentence decisions for ``text[start:end]``, in linear time.

    Mirrors ``razdel.segmenters.base.Segmenter.segment``: each delimiter match
    becomes a ``SentSplit`` with the same left/right context windows, and the
    rules decide whether to join. Only the ``buffer`` (the text since the last
    boundary) differs: rules only look at it when it is at most
    ``BULLET_SIZE`` characters long, so a slice of ``BULLET_SIZE + 1``
    characters gives identical decisions without copying the whole buffer.

    razdel's first two rules join whenever nothing but whitespace follows the
    delimiter (``empty_side``) or it is not followed by whitespace
    (``no_space_prefix``: "3.5", "т.е.", the first dots of "..."); those
    delimiters - most of them in real text - are skipped without building a
    ``SentSplit``.
    """
    assert _JOIN is not None
    segment = text[start:end]
    window = _SPLIT_WINDOW
    limit = _BULLET_SIZE + 1
    buffer_start = 0
    for match in _SPLIT_PATTERN.finditer(segment):
        d_start, d_end = match.span()
        if d_end == len(segment) or not segment[d_end].isspace():
            continue
        split = _SentSplit(
            segment[max(0, d_start - window) : d_start],
            match.group(1),
            segment[d_end : d_end + window],
        )
        split.buffer = segment[buffer_start : min(d_start, buffer_start + limit)]
        if not _JOIN(split):
            yield start + buffer_start, start + d_end
            buffer_start = d_end
    yield start + buffer_start, end


def _razdel_bounds_plain(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Fallback: razdel's public API (quadratic on long boundary-free runs)."""
    for sentence in _razdel_sentenize(text[start:end]):
        yield start + sentence.start, start + sentence.stop


def _segment_bounds(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Split a paragraph into stretches that no sentence may cross.

    Every line break before a list item is a boundary. When most line breaks
    in the paragraph do not look like wrapped prose (the next line starts
    lowercase, or the line ends with a comma/hyphen), the paragraph is laid
    out one item per line and all its non-wrapping breaks are boundaries.
    """
    if text.find("\n", start, end) < 0:
        return [(start, end)]
    lines = line_bounds(text, start, end)
    junctions = list(zip(lines, lines[1:]))
    soft = [
        continues_line(text, nxt[0]) or text[prev[1] - 1] in _CONTINUING_LINE_ENDINGS
        for prev, nxt in junctions
    ]
    one_per_line = 2 * sum(soft) < len(junctions)
    segments: list[tuple[int, int]] = []
    seg_start = lines[0][0]
    for (prev, nxt), is_soft in zip(junctions, soft):
        if starts_list_item(text, nxt[0], nxt[1]) or (one_per_line and not is_soft):
            segments.append((seg_start, prev[1]))
            seg_start = nxt[0]
    segments.append((seg_start, lines[-1][1]))
    return segments


def sentence_bounds(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Tight bounds of the sentences of the paragraph ``text[start:end]``."""
    razdel_bounds = _razdel_bounds_fast if _JOIN is not None else _razdel_bounds_plain
    result: list[tuple[int, int]] = []
    for seg_start, seg_end in _segment_bounds(text, start, end):
        for s, e in razdel_bounds(text, seg_start, seg_end):
            bounds = tight_bounds(text, s, e)
            if bounds is not None:
                result.append(bounds)
    return result


def split_sentences(text: str) -> list[Span]:
    """Split ``text`` into tight sentence spans, in order, never overlapping.

    ``text[s.start:s.end] == s.text`` for every span; together the spans cover
    every non-whitespace character of ``text`` exactly once.
    """
    return [
        Span(s, e, text[s:e])
        for p_start, p_end in paragraph_bounds(text)
        for s, e in sentence_bounds(text, p_start, p_end)
    ]

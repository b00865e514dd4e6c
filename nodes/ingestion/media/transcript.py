"""A transcript as chunkable text, and the way back from its characters to media time.

`render_transcript(segments)` is deterministic and returns the text plus one
`SegmentSpan(char_start, char_end, start, end)` per segment, so a caller that chunks the text
gets the media time of a chunk with `segment_times_for_span(spans, chunk.start, chunk.end)`.
Nothing here decodes media (chunking a document does not load PyAV).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import NamedTuple

from grove.core.ingest_types import Segment

# ----------------------------------------------------------------------------- text layout


class SegmentSpan(NamedTuple):
    """Segment text occupies `text[char_start:char_end]` and the media from `start` to `end`."""

    char_start: int
    char_end: int
    start: float
    end: float


class TimedTranscript(NamedTuple):
    text: str
    spans: list[SegmentSpan]  # one per segment, in text order


def format_timestamp(seconds: float) -> str:
    """`mm:ss`, or `h:mm:ss` from one hour on."""
    total = max(0, math.floor(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def render_transcript(
    segments: Sequence[Segment],
    *,
    min_paragraph_seconds: float = 30.0,
    max_paragraph_seconds: float = 60.0,
) -> TimedTranscript:
    """Paragraphs `[mm:ss] text text …` separated by blank lines, plus each segment's span.

    A new paragraph starts once the current one covers `min_paragraph_seconds` and the
    previous segment ends a sentence or a pause (≥ 2 s) follows, and always once it
    covers `max_paragraph_seconds`. Deterministic: the same segments give the same text.
    """
    parts: list[str] = []
    spans: list[SegmentSpan] = []
    length = 0
    para_start: float | None = None
    prev: Segment | None = None
    for seg in segments:
        text = " ".join(seg.text.split())
        if not text:
            continue
        new_paragraph = para_start is None
        if para_start is not None and prev is not None:
            covered = seg.start - para_start
            sentence_end = prev.text.rstrip().endswith((".", "!", "?", "…"))
            pause = seg.start - prev.end >= 2.0
            new_paragraph = covered >= max_paragraph_seconds or (
                covered >= min_paragraph_seconds and (sentence_end or pause)
            )
        if new_paragraph:
            prefix = ("\n\n" if parts else "") + f"[{format_timestamp(seg.start)}] "
            para_start = seg.start
        else:
            prefix = " "
        parts.append(prefix)
        length += len(prefix)
        spans.append(SegmentSpan(length, length + len(text), seg.start, seg.end))
        parts.append(text)
        length += len(text)
        prev = seg
    return TimedTranscript("".join(parts), spans)


def transcript_with_timestamps(segments: Sequence[Segment]) -> str:
    """The transcript as chunkable text: paragraphs of ~30-60 s, each led by `[mm:ss]`."""
    return render_transcript(segments).text


def segment_times_for_span(
    spans: Sequence[SegmentSpan], start: int, end: int
) -> tuple[float, float] | None:
    """Media time (ts_start, ts_end) of the characters `text[start:end]` of a rendered transcript.

    Covers every segment whose text overlaps the span; a span touching only separators or
    a `[mm:ss]` label maps to the next segment (else the previous). None if no segments.
    """
    if not spans:
        return None
    ends = [s.char_end for s in spans]
    first = bisect.bisect_right(ends, start)  # first segment ending after `start`
    hit = [s for s in spans[first:] if s.char_start < end] if end > start else []
    hit = [s for s in hit if s.char_end > start]
    if hit:
        return min(s.start for s in hit), max(s.end for s in hit)
    near = spans[first] if first < len(spans) else spans[-1]
    return near.start, near.end

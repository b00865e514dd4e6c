"""A transcript as chunkable text (`nodes.ingestion.media.transcript`): `[mm:ss]` paragraphs of
30-60 s broken at sentence ends or pauses, and the way back from characters to media time."""

from __future__ import annotations

from grove.core.ingest_types import Segment
from nodes.ingestion.media.transcript import (
    SegmentSpan,
    format_timestamp,
    render_transcript,
    segment_times_for_span,
    transcript_with_timestamps,
)


def test_timestamps_are_mm_ss_until_an_hour_then_h_mm_ss() -> None:
    assert [format_timestamp(s) for s in (0, 59.99, 61, 3599.5, 3600, 36000 + 62, -5)] == [
        "00:00", "00:59", "01:01", "59:59", "1:00:00", "10:01:02", "00:00"]


def test_a_paragraph_breaks_after_30_s_only_at_a_sentence_end_or_a_pause() -> None:
    segments = [
        Segment(start=0, end=10, text="Сначала копаем яму"),
        Segment(start=10, end=31, text="глубиной в сорок сантиметров"),   # no sentence end at 31 s
        Segment(start=31, end=40, text="и кладём дренаж."),
        Segment(start=40, end=45, text="Потом сажаем."),                    # 40 s, after a sentence end
        Segment(start=45, end=50, text="Поливаем"),
        Segment(start=80, end=85, text="после паузы"),                      # a pause of 30 s: 40 s covered
    ]
    assert render_transcript(segments).text == (
        "[00:00] Сначала копаем яму глубиной в сорок сантиметров и кладём дренаж.\n\n"
        "[00:40] Потом сажаем. Поливаем\n\n"
        "[01:20] после паузы")


def test_a_paragraph_always_breaks_at_60_s_and_blank_segments_vanish() -> None:
    segments = [Segment(start=t, end=t + 20, text=f"слово{t}") for t in (0, 20, 40, 60, 80)]
    segments.insert(2, Segment(start=30, end=31, text="  \n "))
    timed = render_transcript(segments, min_paragraph_seconds=30, max_paragraph_seconds=60)
    assert timed.text == "[00:00] слово0 слово20 слово40\n\n[01:00] слово60 слово80"
    assert len(timed.spans) == 5  # the blank segment has no span


def test_spans_locate_each_segments_text_and_time() -> None:
    segments = [Segment(start=1.5, end=3.0, text="  Раз,   два "), Segment(start=3.0, end=4.0, text="три.")]
    timed = render_transcript(segments)
    assert timed.text == "[00:01] Раз, два три."
    assert timed.spans == [SegmentSpan(8, 16, 1.5, 3.0), SegmentSpan(17, 21, 3.0, 4.0)]
    assert transcript_with_timestamps(segments) == timed.text
    assert render_transcript([]).text == "" and render_transcript([]).spans == []


def test_a_span_maps_to_the_time_of_the_segments_it_touches() -> None:
    spans = [SegmentSpan(8, 16, 1.5, 3.0), SegmentSpan(17, 21, 3.0, 4.0), SegmentSpan(31, 40, 40.0, 44.0)]
    assert segment_times_for_span(spans, 10, 12) == (1.5, 3.0)
    assert segment_times_for_span(spans, 15, 18) == (1.5, 4.0)
    assert segment_times_for_span(spans, 16, 17) == (3.0, 4.0)   # only the space between: the next segment
    assert segment_times_for_span(spans, 22, 30) == (40.0, 44.0)  # a label: the segment after it
    assert segment_times_for_span(spans, 41, 50) == (40.0, 44.0)  # past the end: the last segment
    assert segment_times_for_span(spans, 12, 12) == (1.5, 3.0)    # empty: the segment it sits in
    assert segment_times_for_span([], 0, 5) is None

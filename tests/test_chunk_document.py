"""Chunks carry the page they came from, or the media time they cover."""

from __future__ import annotations

from nodes.chunk_document import chunk
from nodes.ingest_types import ExtractedDocument, Segment
from nodes.transcribe import render_transcript


def test_transcript_chunks_carry_the_time_they_cover(env) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_CHUNK_TARGET_CHARS="300", GROVE_CHUNK_OVERLAP_CHARS="0")
    segments = [Segment(start=10.0 * n, end=10.0 * n + 8, text=f"Фраза номер {n} о посадке малины весной.")
                for n in range(30)]
    text = render_transcript(segments).text
    result = chunk(ExtractedDocument(source_type="voice", source_identifier="v.ogg", text=text,
                                     segments=segments))
    assert len(result.records) > 2
    for record in result.records:
        numbers = [int(w) for w in record.text.replace(".", " ").split() if w.isdigit()]
        assert record.ts_start is not None and record.ts_end is not None
        assert record.ts_start <= 10.0 * min(numbers) and record.ts_end >= 10.0 * max(numbers) + 8
    assert result.records[-1].ts_end == 298.0


def test_pdf_chunks_carry_their_page(env) -> None:  # type: ignore[no-untyped-def]
    pages = ["Первая страница про смородину.", "Вторая страница про крыжовник."]
    result = chunk(ExtractedDocument(source_type="pdf", source_identifier="a.pdf",
                                     text="\n\n".join(pages), pages=pages))
    assert [(r.page, r.text) for r in result.records] == [(1, pages[0]), (2, pages[1])]

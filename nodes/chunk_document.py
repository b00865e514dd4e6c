"""Cut an extracted document into chunks (paragraph + overlap) with page / time metadata."""

from __future__ import annotations

import logging

from grove.observe import task
from pydantic import BaseModel, ConfigDict

from chunking import Chunk, chunk_pages, chunk_text, join_pages
from grove.settings import get_settings
from nodes.document_store import ChunkRecord
from nodes.ingest_types import ExtractedDocument, IngestError, Segment
from nodes.transcribe import SegmentSpan, render_transcript, segment_times_for_span

log = logging.getLogger(__name__)


class ChunkedDocument(BaseModel):
    """`text` is what the chunk offsets point into (and what late chunking embeds)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    text: str
    chunks: list[Chunk]
    records: list[ChunkRecord]


def _transcript_spans(text: str, segments: list[Segment]) -> list[SegmentSpan]:
    """Each segment's place in the transcript, as the transcribe node rendered it."""
    rendered = render_transcript(segments)
    if rendered.text != text:  # not a transcript we rendered: keep the text, lose only the times
        log.warning("transcript text does not match its segments; chunks get no timestamps")
        return []
    return rendered.spans


def chunk(document: ExtractedDocument) -> ChunkedDocument:
    settings = get_settings()
    sizes = {"target_chars": settings.chunk_target_chars, "overlap_chars": settings.chunk_overlap_chars}
    if document.pages:
        text = join_pages(document.pages)
        chunks = chunk_pages(document.pages, **sizes)
    else:
        text = document.text
        chunks = chunk_text(text, **sizes)
    if not chunks:
        raise IngestError("В документе не нашлось текста для индексации.", "no chunks produced")
    spans = _transcript_spans(text, document.segments) if document.segments else []
    records = []
    for item in chunks:
        ts_start, ts_end = segment_times_for_span(spans, item.start, item.end) or (None, None)
        records.append(ChunkRecord(position=item.position, text=item.text, page=item.page,
                                   ts_start=ts_start, ts_end=ts_end))
    return ChunkedDocument(text=text, chunks=chunks, records=records)


@task(name="chunk")
def chunk_document(document: ExtractedDocument) -> ChunkedDocument:
    return chunk(document)

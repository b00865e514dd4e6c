"""Cut an extracted document into chunks (paragraph + overlap) with page / time metadata."""

from __future__ import annotations

from prefect import task
from pydantic import BaseModel, ConfigDict

from chunking import Chunk, chunk_pages, chunk_text, join_pages
from grove.settings import get_settings
from nodes.document_store import ChunkRecord
from nodes.ingest_types import ExtractedDocument, IngestError, Segment


class ChunkedDocument(BaseModel):
    """`text` is what the chunk offsets point into (and what late chunking embeds)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    text: str
    chunks: list[Chunk]
    records: list[ChunkRecord]


def _segment_spans(text: str, segments: list[Segment]) -> list[tuple[int, int, Segment]]:
    """Where each transcript segment sits in the rendered transcript text."""
    spans, cursor = [], 0
    for segment in segments:
        piece = segment.text.strip()
        if not piece:
            continue
        found = text.find(piece, cursor)
        if found < 0:
            continue
        spans.append((found, found + len(piece), segment))
        cursor = found + len(piece)
    return spans


def _times(chunk: Chunk, spans: list[tuple[int, int, Segment]]) -> tuple[float | None, float | None]:
    inside = [seg for start, end, seg in spans if start < chunk.end and end > chunk.start]
    if not inside:
        return None, None
    return min(s.start for s in inside), max(s.end for s in inside)


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
    spans = _segment_spans(text, document.segments) if document.segments else []
    records = []
    for item in chunks:
        ts_start, ts_end = _times(item, spans) if spans else (None, None)
        records.append(ChunkRecord(position=item.position, text=item.text, page=item.page,
                                   ts_start=ts_start, ts_end=ts_end))
    return ChunkedDocument(text=text, chunks=chunks, records=records)


@task(name="chunk")
def chunk_document(document: ExtractedDocument) -> ChunkedDocument:
    return chunk(document)

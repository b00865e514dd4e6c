"""Cut an extracted document into chunks with page, section and time metadata.

Chunks stay inside pages and inside sections (`chunking.plan_regions`): a chunk
about «Установка → Windows» does not run on into «Установка → macOS», so it can
be embedded with, and shown under, the one heading path it belongs to. Sections
too short to stand alone share a chunk with a short neighbour
(`chunk_merge_chars`); a heading with nothing under it on its page joins the
text that follows it.
"""

from __future__ import annotations

import logging

from grove.core.observe import task
from pydantic import BaseModel, ConfigDict

from chunking import PAGE_SEPARATOR, Chunk, chunk_regions, join_pages, plan_regions
from grove.core.settings import Settings
from nodes.store.document_store import ChunkRecord
from grove.core.ingest_types import ExtractedDocument, IngestError, Segment
from nodes.ingestion.media.transcript import SegmentSpan, render_transcript, segment_times_for_span

log = logging.getLogger(__name__)

SECTION_SEPARATOR = " → "
"""Between the headings of a path when it is shown or stored («Установка → Windows»)."""


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


def _page_spans(pages: list[str]) -> list[tuple[int, int]]:
    spans, offset = [], 0
    for page in pages:
        spans.append((offset, offset + len(page)))
        offset += len(page) + len(PAGE_SEPARATOR)
    return spans


def section_path(path: list[str] | tuple[str, ...], title: str | None) -> tuple[str, ...]:
    """The heading path without a first heading that only repeats the document title."""
    def same(a: str, b: str) -> bool:
        return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()

    path = tuple(path)
    if title and path and same(path[0], title):
        return path[1:]
    return path


def section_label(path: tuple[str, ...] | list[str]) -> str | None:
    return SECTION_SEPARATOR.join(path) if path else None


def chunk(document: ExtractedDocument, settings: Settings) -> ChunkedDocument:
    """The document's chunks and their records, by the sizes the settings give."""
    sizes = {"target_chars": settings.chunk_target_chars, "overlap_chars": settings.chunk_overlap_chars}
    if document.pages:
        text = join_pages(document.pages)
        pages = _page_spans(document.pages)
    else:
        text, pages = document.text, None
    sections = [(s.start, s.end, section_path(s.path, document.title)) for s in document.sections]
    if sections and text != document.text:  # section offsets point into document.text
        log.warning("document text differs from its pages; sections are not used")
        sections = []
    regions = plan_regions(text, pages=pages, sections=sections, merge_chars=settings.chunk_merge_chars,
                           target_chars=settings.chunk_target_chars)
    chunks = chunk_regions(text, regions, **sizes)
    if not chunks:
        raise IngestError("В документе не нашлось текста для индексации.", "no chunks produced")
    spans = _transcript_spans(text, document.segments) if document.segments else []
    labels = document.page_labels or []
    records = []
    for item in chunks:
        ts_start, ts_end = segment_times_for_span(spans, item.start, item.end) or (None, None)
        label = labels[item.page - 1] if item.page is not None and item.page <= len(labels) else None
        records.append(ChunkRecord(position=item.position, text=item.text, page=item.page,
                                   page_label=label, section=section_label(item.section),
                                   ts_start=ts_start, ts_end=ts_end))
    return ChunkedDocument(text=text, chunks=chunks, records=records)


@task(name="chunk")
def chunk_document(document: ExtractedDocument, settings: Settings) -> ChunkedDocument:
    return chunk(document, settings)

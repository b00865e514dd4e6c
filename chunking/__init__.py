"""Text side of the ingestion chunker: paragraph + overlap chunks as exact
character spans into the document, ready for late-chunking pooling.

Public API: :func:`chunk_text` / :func:`chunk_pages` (the chunker, :class:`Chunk`); :func:`plan_regions` /
:func:`chunk_regions` (the same kept inside pages and sections, :class:`Region`, with heading paths);
:func:`split_paragraphs` / :func:`split_sentences` (:class:`Span`); :func:`join_pages` /
:data:`PAGE_SEPARATOR` (the text :func:`chunk_pages` offsets refer to); :func:`late_chunk_embeddings` /
:func:`naive_chunk_embeddings` (chunk vectors from a sentence-transformers model passed in).
"""

from .chunker import PAGE_SEPARATOR, Chunk, chunk_pages, chunk_text, join_pages
from .late import LateChunkingError, late_chunk_embeddings, naive_chunk_embeddings
from .paragraphs import split_paragraphs
from .regions import Region, chunk_regions, plan_regions
from .sentences import split_sentences
from .spans import Span

__all__ = [
    "PAGE_SEPARATOR",
    "Chunk",
    "LateChunkingError",
    "Region",
    "Span",
    "chunk_pages",
    "chunk_regions",
    "chunk_text",
    "join_pages",
    "late_chunk_embeddings",
    "naive_chunk_embeddings",
    "plan_regions",
    "split_paragraphs",
    "split_sentences",
]

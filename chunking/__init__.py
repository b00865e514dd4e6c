"""Text side of the ingestion chunker: paragraph + overlap chunks as exact
character spans into the document, ready for late-chunking pooling.

Public API:

* :func:`chunk_text` / :func:`chunk_pages` - the chunker (:class:`Chunk`);
* :func:`split_paragraphs` / :func:`split_sentences` - the splitters it is
  built on (:class:`Span`);
* :func:`join_pages` / :data:`PAGE_SEPARATOR` - the document text that
  :func:`chunk_pages` offsets refer to.
"""

from .chunker import PAGE_SEPARATOR, Chunk, chunk_pages, chunk_text, join_pages
from .paragraphs import split_paragraphs
from .sentences import split_sentences
from .spans import Span

__all__ = [
    "PAGE_SEPARATOR",
    "Chunk",
    "Span",
    "chunk_pages",
    "chunk_text",
    "join_pages",
    "split_paragraphs",
    "split_sentences",
]

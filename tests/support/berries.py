"""The berry library of `tests/fixtures/berries/library.yaml` in the shared library (owner 0), as
`grove ingest --user 0 --culture …` would leave it: one chunk per paragraph, real EmbeddingGemma vectors."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel

LIBRARY = Path(__file__).resolve().parent.parent / "fixtures" / "berries" / "library.yaml"


class BerryDocument(BaseModel):
    file: str
    culture: str
    paragraphs: list[str]


def berry_documents() -> list[BerryDocument]:
    raw = yaml.safe_load(LIBRARY.read_text(encoding="utf-8"))
    return [BerryDocument.model_validate(d) for d in raw["documents"]]


def store_berry_library() -> list[int]:
    """Every document into the shared library under its culture; the stored documents' ids."""
    from grove.core.ingest_types import ExtractedDocument
    from nodes.embedding.embedder import get_embedder
    from nodes.retrieval.unified_retrieve import LIBRARY_OWNER
    from nodes.store.document_store import ChunkRecord, store_document

    ids = []
    for doc in berry_documents():
        vectors = get_embedder().embed_documents(doc.paragraphs)
        document = ExtractedDocument(source_type="pdf", source_identifier=doc.file, title=None,
                                     text="\n\n".join(doc.paragraphs))
        chunks = [ChunkRecord(position=i, text=t, page=i + 1) for i, t in enumerate(doc.paragraphs)]
        ids.append(store_document.fn(LIBRARY_OWNER, document, chunks, vectors, doc.culture).document_id)
    return ids

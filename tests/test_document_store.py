"""A document is stored whole or not at all; re-sent content is stored once."""

from __future__ import annotations

import math

import numpy as np
import psycopg
import pytest

from nodes.store.document_store import ChunkRecord, content_hash, delete_user_documents, store_document
from grove.core.ingest_types import ExtractedDocument

DOC = ExtractedDocument(source_type="txt", source_identifier="заметки.txt", title="Заметки",
                        text="Первый абзац.\n\nВторой абзац.\n\nТретий абзац.")
CHUNKS = [ChunkRecord(position=i, text=t) for i, t in enumerate(DOC.text.split("\n\n"))]


def _vectors(n: int) -> np.ndarray:
    vectors = np.random.default_rng(3).standard_normal((n, 768)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _counts(url: str, owner: int) -> tuple[int, int]:
    with psycopg.connect(url) as conn:
        docs = conn.execute("select count(*) from documents where owner_id = %s", (owner,)).fetchone()[0]
        chunks = conn.execute("select count(*) from document_chunks where owner_id = %s", (owner,)).fetchone()[0]
    return docs, chunks


def test_a_crash_midway_leaves_nothing_half_written(pg_url: str, user_id: int) -> None:
    vectors = _vectors(3)
    vectors[2, 5] = math.nan  # the third chunk fails after the row and two chunks were sent
    with pytest.raises(ValueError, match="NaN"):
        store_document.fn(user_id, DOC, CHUNKS, vectors)
    assert _counts(pg_url, user_id) == (0, 0)


def test_same_content_is_stored_once(pg_url: str, user_id: int, other_user_id: int) -> None:
    first = store_document.fn(user_id, DOC, CHUNKS, _vectors(3))
    respaced = DOC.model_copy(update={"text": DOC.text.replace("\n\n", "\n\n\n  ")})
    again = store_document.fn(user_id, respaced, CHUNKS, _vectors(3))
    theirs = store_document.fn(other_user_id, DOC, CHUNKS, _vectors(3))
    assert not first.duplicate and again.duplicate and again.document_id == first.document_id
    assert not theirs.duplicate  # another user's copy is theirs
    assert content_hash(DOC.text) == content_hash(respaced.text)
    assert _counts(pg_url, user_id) == (1, 3)
    assert delete_user_documents.fn(user_id) == (1, 3)
    assert _counts(pg_url, user_id) == (0, 0) and _counts(pg_url, other_user_id) == (1, 3)

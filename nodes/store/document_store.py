"""Documents and their chunks in Postgres + pgvector.

A document is written in one transaction — its row and all its chunks, or
nothing — so a crash midway never leaves a half-indexed document. The same
content (same hash) for the same owner is stored once.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

import numpy as np
from grove.core.observe import task
from pydantic import BaseModel

from grove.store.db import Connection, transaction
from grove.core.ingest_types import ExtractedDocument

_SPACES = re.compile(r"\s+")


def content_hash(text: str) -> str:
    """sha256 of the text with whitespace collapsed: re-sent content hashes the same."""
    return hashlib.sha256(_SPACES.sub(" ", text).strip().encode("utf-8")).hexdigest()


class ChunkRecord(BaseModel):
    """One chunk as stored: `page` is the physical page (1-based), `page_label` the number the
    document prints on it («vii»), `section` its heading path («Установка → Windows»)."""

    position: int
    text: str
    page: int | None = None
    page_label: str | None = None
    section: str | None = None
    ts_start: float | None = None
    ts_end: float | None = None


class StoredDocument(BaseModel):
    document_id: int
    title: str | None
    chunk_count: int
    duplicate: bool
    job_id: int | None = None  # the background job that stored it (a resumed job knows its own work)


def _existing(conn: Connection, owner_id: int, digest: str) -> StoredDocument | None:
    row = conn.execute(
        "select id, title, chunk_count, job_id from documents"
        " where owner_id = %s and content_hash = %s and is_active",
        (owner_id, digest),
    ).fetchone()
    if row is None:
        return None
    return StoredDocument(document_id=row["id"], title=row["title"],
                          chunk_count=row["chunk_count"], duplicate=True, job_id=row["job_id"])


@task(name="find-document", retries=2, retry_delay_seconds=1)
def find_document(owner_id: int, digest: str) -> StoredDocument | None:
    """The owner's active document with this content hash, if already indexed."""
    with transaction() as conn:
        return _existing(conn, owner_id, digest)


@task(name="store-document", retries=2, retry_delay_seconds=[1, 4])
def store_document(
    owner_id: int,
    document: ExtractedDocument,
    chunks: Sequence[ChunkRecord],
    embeddings: Sequence[Sequence[float]] | np.ndarray,
    subcategory: str | None = None,
    job_id: int | None = None,
    *,
    pending: bool = False,
) -> StoredDocument:
    """Insert the document row and every chunk in one transaction.

    A `pending` document is stored unsearchable (not active) until `activate_documents`: the new
    version of an edited message, which takes the old version's place in one transaction.

    A concurrent insert of the same content loses the race on the unique index
    and is reported as a duplicate instead of storing it twice.
    """
    if len(chunks) != len(embeddings):
        raise ValueError(f"{len(chunks)} chunks but {len(embeddings)} embeddings")
    if not chunks:
        raise ValueError("a document needs at least one chunk")
    digest = content_hash(document.text)
    meta = {k: v for k, v in document.meta.items() if v is not None}
    with transaction() as conn:
        row = conn.execute(
            """
            insert into documents (owner_id, source_type, source_identifier, title, author,
                                   published_at, subcategory, content_hash, char_count,
                                   chunk_count, duration_seconds, meta, job_id, is_active)
            values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s)
            on conflict (owner_id, content_hash) where is_active do nothing
            returning id
            """,
            (owner_id, document.source_type, document.source_identifier, document.title,
             document.author, document.published_at, subcategory, digest, len(document.text),
             len(chunks), document.duration_seconds, _json(meta), job_id, not pending),
        ).fetchone()
        if row is None:
            existing = _existing(conn, owner_id, digest)
            assert existing is not None
            return existing
        document_id = row["id"]
        with conn.cursor().copy(
            "copy document_chunks (document_id, owner_id, source_type, source_identifier, title,"
            " subcategory, page, page_label, section, ts_start, ts_end, position, chunk_text,"
            " content_hash, embedding, is_active)"
            " from stdin"
        ) as copy:
            for chunk, vector in zip(chunks, embeddings):
                copy.write_row((
                    document_id, owner_id, document.source_type, document.source_identifier,
                    document.title, subcategory, chunk.page, chunk.page_label, chunk.section,
                    chunk.ts_start, chunk.ts_end,
                    chunk.position, chunk.text, content_hash(chunk.text), vector_text(vector), not pending,
                ))
    return StoredDocument(document_id=document_id, title=document.title,
                          chunk_count=len(chunks), duplicate=False, job_id=job_id)


@task(name="delete-user-documents", retries=2, retry_delay_seconds=1)
def delete_user_documents(owner_id: int) -> tuple[int, int]:
    """"Clean base": this owner's documents and chunks, and nobody else's. Returns (docs, chunks)."""
    if owner_id == 0:
        raise ValueError("owner 0 is the shared library; it is not cleaned from a chat")
    with transaction() as conn:
        chunks = conn.execute("delete from document_chunks where owner_id = %s", (owner_id,)).rowcount
        docs = conn.execute("delete from documents where owner_id = %s", (owner_id,)).rowcount
    return docs, chunks


class ListedDocument(BaseModel):
    """One searchable document of a user's base, as /base lists it."""

    title: str | None
    source_type: str
    source_identifier: str
    chunk_count: int


def user_documents(owner_id: int, limit: int = 20) -> tuple[list[ListedDocument], int]:
    """This owner's searchable documents, newest first (at most `limit`), and how many there are."""
    with transaction() as conn:
        rows = conn.execute(
            "select title, source_type, source_identifier, chunk_count, count(*) over () as total"
            "  from documents where owner_id = %s and is_active order by id desc limit %s",
            (owner_id, limit)).fetchall()
    total = int(rows[0]["total"]) if rows else 0
    return [ListedDocument(title=r["title"], source_type=r["source_type"], source_identifier=r["source_identifier"],
                           chunk_count=r["chunk_count"]) for r in rows], total


def message_documents(owner_id: int, chat_id: int, message_id: int, before_job: int) -> list[int]:
    """The documents earlier jobs indexed from one message (edited since), this owner's only."""
    with transaction() as conn:
        rows = conn.execute(
            "select id from documents where owner_id = %s and job_id in ("
            "  select id from jobs where user_id = %s and chat_id = %s and id < %s"
            "     and payload ->> 'message_id' = %s) order by id",
            (owner_id, owner_id, chat_id, before_job, str(message_id))).fetchall()
    return [row["id"] for row in rows]


def activate_documents(owner_id: int, document_ids: Sequence[int]) -> int:
    """Make these pending documents of this owner searchable; returns how many were pending."""
    if not document_ids:
        return 0
    with transaction() as conn:
        ids = [row["id"] for row in conn.execute(
            "update documents set is_active = true where owner_id = %s and id = any(%s) and not is_active"
            " returning id", (owner_id, list(document_ids))).fetchall()]
        if ids:
            conn.execute("update document_chunks set is_active = true where owner_id = %s and document_id = any(%s)",
                         (owner_id, ids))
    return len(ids)


def discard_pending(owner_id: int) -> int:
    """What an earlier job of this owner stored but never activated (it failed or was cut short).

    Only a job of this owner leaves pending documents, and an owner's jobs run one at a time in
    order, so at the start of a job every pending document of the owner is left over.
    """
    with transaction() as conn:
        return conn.execute("delete from documents where owner_id = %s and not is_active", (owner_id,)).rowcount


def delete_documents(owner_id: int, document_ids: Sequence[int]) -> int:
    """These documents of this owner, with their chunks (cascade); returns how many went."""
    if not document_ids:
        return 0
    with transaction() as conn:
        return conn.execute("delete from documents where owner_id = %s and id = any(%s)",
                            (owner_id, list(document_ids))).rowcount


def vector_text(vector: Sequence[float] | np.ndarray) -> str:
    values = np.asarray(vector, dtype=np.float32)
    if not np.all(np.isfinite(values)):
        raise ValueError("embedding has NaN or infinite values")
    return "[" + ",".join(f"{v:.7g}" for v in values) + "]"


def _json(value: Mapping[str, object]) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)

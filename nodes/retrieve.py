"""Vector search over one user's chunks (pgvector HNSW, cosine).

A WHERE filter on an HNSW scan is applied after the index returns its
ef_search candidates, so a user who owns 1 % of the table would get almost
nothing back. pgvector 0.8's iterative index scan keeps scanning until the
filtered LIMIT is met; `relaxed_order` may return rows slightly out of order,
so the outer query sorts them again — by `distance + 0`, because Postgres 18 knows the
CTE is "ordered by distance" and would skip a plain `order by distance` (pgvector's README
uses the same expression).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import psycopg
from grove.observe import task
from pydantic import BaseModel

from grove.db import transaction
from grove.settings import get_settings


class Fragment(BaseModel):
    """A retrieved chunk with where it came from, as the agent and the user see it."""

    chunk_id: int
    document_id: int
    text: str
    source_type: str
    source_identifier: str
    title: str | None = None
    page: int | None = None
    page_label: str | None = None
    section: str | None = None
    ts_start: float | None = None
    ts_end: float | None = None
    distance: float
    score: float | None = None

    def source_label(self) -> str:
        """`pdf: report.pdf, с. vii, раздел «Установка → Windows»` — type + file name / URL,
        the page as the document prints it (or the time), and the section, for the source block."""
        kind = {"url": "ссылка", "voice": "голосовое", "audio": "аудио", "video": "видео",
                "text": "текст"}.get(self.source_type, self.source_type)
        label = f"{kind}: {self.source_identifier}"
        if self.title and self.title not in self.source_identifier:
            label += f" («{self.title}»)"
        if self.page_label or self.page is not None:
            label += f", с. {self.page_label or self.page}"
        elif self.ts_start is not None:
            minutes, seconds = divmod(int(self.ts_start), 60)
            label += f", {minutes}:{seconds:02d}"
        if self.section:
            label += f", раздел «{self.section}»"
        return label


_SEARCH = """
with candidates as materialized (
    select id, document_id, chunk_text, source_type, source_identifier, title, page,
           page_label, section, ts_start, ts_end, embedding <=> %(query)s as distance
      from document_chunks
     where owner_id = %(owner)s and is_active
     order by embedding <=> %(query)s
     limit %(k)s
)
select * from candidates order by distance + 0
"""


def set_hnsw_scan(conn: psycopg.Connection, ef_search: int | None,
                  iterative_scan: Literal["off", "relaxed_order", "strict_order"]) -> None:
    """pgvector's scan settings for this transaction only (ef_search from settings when None)."""
    conn.execute("select set_config('hnsw.ef_search', %s, true)",
                 (str(ef_search or get_settings().hnsw_ef_search),))
    conn.execute("select set_config('hnsw.iterative_scan', %s, true)", (iterative_scan,))


def search_in(conn: psycopg.Connection, owner_id: int, query_vector: Sequence[float] | np.ndarray,
              k: int, *, iterative: bool = True, ef_search: int | None = None) -> list[Fragment]:
    """The search on a given connection, inside its transaction (settings are transaction-local).

    For a very selective owner the planner may prefer the owner index and an exact sort,
    which is exact anyway; when it takes the HNSW index, the iterative scan keeps the LIMIT.
    """
    vector = np.asarray(query_vector, dtype=np.float32)
    set_hnsw_scan(conn, ef_search, "relaxed_order" if iterative else "off")
    rows = conn.execute(_SEARCH, {"query": vector, "owner": owner_id, "k": k}, prepare=False).fetchall()
    return [
        Fragment(chunk_id=r["id"], document_id=r["document_id"], text=r["chunk_text"],
                 source_type=r["source_type"], source_identifier=r["source_identifier"],
                 title=r["title"], page=r["page"], page_label=r.get("page_label"),
                 section=r.get("section"), ts_start=r["ts_start"], ts_end=r["ts_end"],
                 distance=float(r["distance"]))
        for r in rows
    ]


def search(owner_id: int, query_vector: Sequence[float] | np.ndarray, k: int) -> list[Fragment]:
    """The k nearest active chunks of this owner."""
    with transaction() as conn:
        return search_in(conn, owner_id, query_vector, k)


@task(name="vector-search", retries=2, retry_delay_seconds=1)
def vector_search(owner_id: int, query_vector: list[float], k: int) -> list[Fragment]:
    return search(owner_id, query_vector, k)

"""Three-tier retrieval for consultations (seed 002): approved Q&A, then the culture's documents.

Tier 1: `knowledge_base` pairs of the category and culture (falling back to the
category alone), cosine distance below `qa_distance_threshold`. Tier 2: chunks of
the shared library (owner 0) tagged with the exact culture, below
`doc_distance_threshold`, falling back to the crop's general culture. Results are
merged and sorted by (tier, distance).

The seed takes the index's top N and filters in Python, so a culture owning a
small share of the table gets fewer rows than exist. Here the culture filter sits
in the WHERE clause of an HNSW scan with pgvector's iterative scan switched on,
which keeps walking the graph until the LIMIT is met; the distance threshold is
applied outside a materialised CTE (pgvector's documented pattern), so the
result is every row under the threshold up to the limit. The scan keeps strict order here,
so the limit taken under a threshold is exactly the nearest rows.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

import numpy as np
import psycopg
from grove.observe import run_logger, task
from pydantic import BaseModel

from grove.db import transaction
from grove.settings import get_settings
from nodes.retrieve import set_hnsw_scan

log = logging.getLogger(__name__)

LIBRARY_OWNER = 0  # the shared domain library, filled with `grove ingest --user 0 --culture …`


class Snippet(BaseModel):
    """One fragment for the consultation prompt, with its tier and where it came from."""

    source_type: Literal["qa", "document"]
    priority_level: int
    content: str
    distance: float
    id: int
    subcategory: str | None = None
    category: str | None = None
    question: str | None = None
    document_id: int | None = None
    source_identifier: str | None = None
    title: str | None = None
    page: int | None = None
    page_label: str | None = None
    section: str | None = None

    def source_label(self) -> str:
        if self.source_type == "qa":
            return f"одобренный ответ базы знаний: «{self.question}»"
        label = f"документ: {self.source_identifier}"
        if self.title and self.title not in (self.source_identifier or ""):
            label += f" («{self.title}»)"
        if self.page_label or self.page is not None:
            label += f", с. {self.page_label or self.page}"
        if self.section:
            label += f", раздел «{self.section}»"
        return label


_KB_SEARCH = """
with nearest as materialized (
    select id, category, subcategory, question, answer, embedding <=> %(query)s as distance
      from knowledge_base
     where category = %(category)s
       and (%(subcategory)s::text is null or subcategory = %(subcategory)s)
       and is_active
     order by embedding <=> %(query)s
     limit %(limit)s
)
select * from nearest where distance < %(threshold)s order by distance
"""

_CHUNKS_SEARCH = """
with nearest as materialized (
    select id, document_id, chunk_text, page, page_label, section, subcategory, source_identifier,
           title, embedding <=> %(query)s as distance
      from document_chunks
     where owner_id = %(owner)s and subcategory = %(subcategory)s and is_active
     order by embedding <=> %(query)s
     limit %(limit)s
)
select * from nearest where distance < %(threshold)s order by distance
"""


def kb_search(conn: psycopg.Connection, category: str, subcategory: str | None,
              query: np.ndarray, limit: int, threshold: float, *, iterative: bool = True,
              ef_search: int | None = None) -> list[Snippet]:
    set_hnsw_scan(conn, ef_search, "strict_order" if iterative else "off")
    rows = conn.execute(_KB_SEARCH, {"query": query, "category": category, "subcategory": subcategory,
                                     "limit": limit, "threshold": threshold}, prepare=False).fetchall()
    return [Snippet(source_type="qa", priority_level=1, content=r["answer"], distance=float(r["distance"]),
                    id=r["id"], category=r["category"], subcategory=r["subcategory"],
                    question=r["question"]) for r in rows]


def chunks_search(conn: psycopg.Connection, subcategory: str, query: np.ndarray, limit: int,
                  threshold: float, *, owner_id: int = LIBRARY_OWNER, iterative: bool = True,
                  ef_search: int | None = None) -> list[Snippet]:
    set_hnsw_scan(conn, ef_search, "strict_order" if iterative else "off")
    rows = conn.execute(_CHUNKS_SEARCH, {"query": query, "owner": owner_id, "subcategory": subcategory,
                                         "limit": limit, "threshold": threshold}, prepare=False).fetchall()
    return [Snippet(source_type="document", priority_level=2, content=r["chunk_text"],
                    distance=float(r["distance"]), id=r["id"], document_id=r["document_id"],
                    subcategory=r["subcategory"], source_identifier=r["source_identifier"],
                    title=r["title"], page=r["page"], page_label=r.get("page_label"),
                    section=r.get("section")) for r in rows]


class Retrieval(BaseModel):
    snippets: list[Snippet]
    trace: list[str]


def unified_snippets(category: str, subcategory: str | None, general_subcategory: str | None,
                     query_vector: Sequence[float] | np.ndarray) -> Retrieval:
    """Both tiers with their fallbacks; `trace` says what was searched and found (seed 002's log)."""
    settings = get_settings()
    query = np.asarray(query_vector, dtype=np.float32)
    trace: list[str] = []
    with transaction() as conn:
        qa = kb_search(conn, category, subcategory, query, settings.qa_limit, settings.qa_distance_threshold)
        trace.append(f"уровень 1: category={category} subcategory={subcategory}: {len(qa)}")
        if not qa and subcategory is not None:
            qa = kb_search(conn, category, None, query, settings.qa_limit, settings.qa_distance_threshold)
            trace.append(f"уровень 1, без subcategory: {len(qa)}")
        documents: list[Snippet] = []
        if subcategory:
            documents = chunks_search(conn, subcategory, query, settings.doc_limit,
                                      settings.doc_distance_threshold)
            trace.append(f"уровень 2: subcategory={subcategory}: {len(documents)}")
            if not documents and general_subcategory and general_subcategory != subcategory:
                documents = chunks_search(conn, general_subcategory, query, settings.doc_limit,
                                          settings.doc_distance_threshold)
                trace.append(f"уровень 2, общая культура {general_subcategory}: {len(documents)}")
    snippets = sorted(qa + documents, key=lambda s: (s.priority_level, s.distance))
    if not snippets:
        log.warning("nothing found in the knowledge base for %s / %s", category, subcategory)
        trace.append("ничего не найдено: ответ из общих знаний")
    return Retrieval(snippets=snippets, trace=trace)


@task(name="retrieve-unified-snippets", retries=2, retry_delay_seconds=1)
def retrieve_unified_snippets(category: str, subcategory: str | None, general_subcategory: str | None,
                              query_vector: list[float]) -> Retrieval:
    """Tier 1 then tier 2, each with its fallback; the trace goes to the run's log."""
    result = unified_snippets(category, subcategory, general_subcategory, query_vector)
    logger = run_logger()
    for line in result.trace:
        logger.info(line)
    return result

"""Three-tier retrieval for consultations (seed 002): approved Q&A, then the culture's documents.

Tier 1 is `knowledge_base` pairs of the category and culture under `qa_distance_threshold`; the seed's
fallback to the category alone is kept to the same crop (its `family`) and to pairs without a culture,
never another crop's. Tier 2 is the shared library's chunks of the exact culture and of the crop's general
culture, under `doc_distance_threshold`, competing on distance. Tiers merge distance first, the tier only
breaking ties; the template tells the model an approved answer takes precedence. The culture filter sits in
an HNSW scan with pgvector's iterative scan, the threshold outside a materialised CTE, so a small culture
gets every row under the threshold up to the limit, where the seed's top N filtered in Python got fewer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

import numpy as np
from grove.core.observe import task
from grove.core.runs import run_logger
from pydantic import BaseModel

from grove.store.db import Connection, transaction
from grove.core.settings import Settings
from nodes.retrieval.retrieve import EF_SEARCH, set_hnsw_scan
from nodes.retrieval.sources import document_label

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

    @property
    def text(self) -> str:
        """The words a citation is checked against (`Citable`)."""
        return self.content

    def with_text(self, text: str) -> Snippet:
        return self.model_copy(update={"content": text})

    def source_label(self) -> str:
        if self.source_type == "qa":
            return f"одобренный ответ базы знаний: «{self.question}»"
        return document_label("document", self.source_identifier, title=self.title, page=self.page,
                              page_label=self.page_label, section=self.section)


_KB_SEARCH = """
with nearest as materialized (
    select id, category, subcategory, question, answer, embedding <=> %(query)s as distance
      from knowledge_base
     where category = %(category)s
       and (%(subcategory)s::text is null or subcategory = %(subcategory)s)
       and (%(family)s::text[] is null or subcategory is null or subcategory = any(%(family)s))
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


def kb_search(conn: Connection, category: str, subcategory: str | None,
              query: np.ndarray, limit: int, threshold: float, *, family: Sequence[str] | None = None,
              iterative: bool = True, ef_search: int = EF_SEARCH) -> list[Snippet]:
    """Pairs of the category: of `subcategory` when given; of `family` or of no culture when given."""
    set_hnsw_scan(conn, ef_search, "strict_order" if iterative else "off")
    rows = conn.execute(_KB_SEARCH, {"query": query, "category": category, "subcategory": subcategory,
                                     "family": list(family) if family is not None else None,
                                     "limit": limit, "threshold": threshold}, prepare=False).fetchall()
    return [Snippet(source_type="qa", priority_level=1, content=r["answer"], distance=float(r["distance"]),
                    id=r["id"], category=r["category"], subcategory=r["subcategory"],
                    question=r["question"]) for r in rows]


def chunks_search(conn: Connection, subcategory: str, query: np.ndarray, limit: int,
                  threshold: float, *, owner_id: int = LIBRARY_OWNER, iterative: bool = True,
                  ef_search: int = EF_SEARCH) -> list[Snippet]:
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
                     query_vector: Sequence[float] | np.ndarray, settings: Settings,
                     family: Sequence[str] = ()) -> Retrieval:
    """Both tiers, merged by the module's rule; `trace` says what was searched and found (seed 002's log).

    `family`: the labels of the question's crop (general culture, varieties) whose pairs the
    tier-1 fallback may use besides pairs without a culture. With no `subcategory` at all the
    seed's fallback is the whole category and so is this search.
    """
    scan = settings.hnsw_ef_search
    query = np.asarray(query_vector, dtype=np.float32)
    trace: list[str] = []
    with transaction() as conn:
        qa = kb_search(conn, category, subcategory, query, settings.qa_limit, settings.qa_distance_threshold,
                       ef_search=scan)
        trace.append(f"уровень 1: category={category} subcategory={subcategory}: {len(qa)}")
        if not qa and subcategory is not None:
            kin = [label for label in family if label != subcategory]
            qa = kb_search(conn, category, None, query, settings.qa_limit, settings.qa_distance_threshold,
                           family=kin, ef_search=scan)
            trace.append(f"уровень 1, та же культура ({', '.join(kin) or '—'}) или без subcategory: {len(qa)}")
        documents: list[Snippet] = []
        if subcategory:
            exact = chunks_search(conn, subcategory, query, settings.doc_limit, settings.doc_distance_threshold,
                                  ef_search=scan)
            trace.append(f"уровень 2: subcategory={subcategory}: {len(exact)}")
            general: list[Snippet] = []
            if general_subcategory and general_subcategory != subcategory:
                general = chunks_search(conn, general_subcategory, query, settings.doc_limit,
                                        settings.doc_distance_threshold, ef_search=scan)
                trace.append(f"уровень 2, общая культура {general_subcategory}: {len(general)}")
            ranked = sorted([(s.distance, 0, s) for s in exact] + [(s.distance, 1, s) for s in general],
                            key=lambda item: item[:2])
            documents = [s for *_, s in ranked[:settings.doc_limit]]
    snippets = sorted(qa + documents, key=lambda s: (s.distance, s.priority_level))
    if not snippets:
        log.warning("nothing found in the knowledge base for %s / %s", category, subcategory)
        trace.append("ничего не найдено: ответ из общих знаний")
    return Retrieval(snippets=snippets, trace=trace)


@task(name="retrieve-unified-snippets", retries=2, retry_delay_seconds=1)
def retrieve_unified_snippets(category: str, subcategory: str | None, general_subcategory: str | None,
                              query_vector: list[float], settings: Settings,
                              family: list[str] | None = None) -> Retrieval:
    """Tier 1 and tier 2 with their fallbacks; the trace goes to the run's log."""
    result = unified_snippets(category, subcategory, general_subcategory, query_vector, settings, family or ())
    logger = run_logger()
    for line in result.trace:
        logger.info(line)
    return result

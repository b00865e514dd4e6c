"""The first stage of retrieval over one user's chunks: vector search, or vector + full text.

Vector search is pgvector HNSW (cosine) with the iterative index scan, since a WHERE filter applied after
the index's candidates would leave a small owner almost nothing; the outer query sorts again by
`distance + 0`, which Postgres cannot skip as already ordered. Hybrid (`GROVE_RETRIEVAL_FIRST_STAGE=hybrid`)
adds full-text search for the exact terms a vector blurs, in one statement, merged by reciprocal rank
fusion; its text branch ranks by the summed rarity (IDF) of the question's terms, which ts_rank ignores.
Each branch takes `pool` rows of the owner, so the fused list is full whenever the owner has k chunks.
Figures: bench/README.md, «Retrieval defaults on the product's sets» (bench.retrieval_eval).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel

from grove.store.db import Connection, transaction
from grove.core.observe import task
from grove.core.settings import DEFAULTS, Settings
from nodes.retrieval.sources import document_label


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
        return document_label(self.source_type, self.source_identifier, title=self.title, page=self.page,
                              page_label=self.page_label, ts_start=self.ts_start, section=self.section)

    def with_text(self, text: str) -> Fragment:
        return self.model_copy(update={"text": text})


EF_SEARCH = DEFAULTS.hnsw_ef_search
"""pgvector's `hnsw.ef_search` where a search is handed none: the settings' default (a turn hands its own)."""

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


def set_hnsw_scan(conn: Connection, ef_search: int,
                  iterative_scan: Literal["off", "relaxed_order", "strict_order"]) -> None:
    """pgvector's scan settings for this transaction only."""
    conn.execute("select set_config('hnsw.ef_search', %s, true)", (str(ef_search),))
    conn.execute("select set_config('hnsw.iterative_scan', %s, true)", (iterative_scan,))


def search_in(conn: Connection, owner_id: int, query_vector: Sequence[float] | np.ndarray,
              k: int, *, iterative: bool = True, ef_search: int = EF_SEARCH) -> list[Fragment]:
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


# --------------------------------------------------------------------------- hybrid

FirstStage = Literal["hybrid", "vector"]

# Reciprocal rank fusion: score = w_vector / (RRF_K + rank_vector) + w_text / (RRF_K + rank_text),
# a row missing from a branch adding nothing for it. 60 is the constant of the RRF paper; the
# weights were chosen on the bench sets (bench/retrieval_eval.py --sweep, bench/README.md).
RRF_K = 60
VECTOR_WEIGHT = 1.0
TEXT_WEIGHT = 1.0
# Rows each branch contributes before fusion (at least k): a plan step asking for 5 still fuses
# two lists of 30, so a chunk ranked 8th by both branches can beat one only the vector list has.
POOL = 30

_HYBRID_SEARCH = """
with
-- The question's terms: its words as the `russian` configuration stems them (stop words gone),
-- and its technical tokens as `simple` keeps them; each term its own one-lexeme tsquery.
terms as (
    select row_number() over () as i, config, quote_literal(lexeme)::tsquery as query
      from (select 'russian' as config, lexeme
              from unnest(tsvector_to_array(to_tsvector('russian', %(russian)s))) as lexeme
            union all
            select 'simple', lexeme
              from unnest(tsvector_to_array(to_tsvector('simple', %(simple)s))) as lexeme) listed
     where strpos(lexeme, E'\\\\') = 0  -- quote_literal would write E'..' syntax tsquery cannot read
),
-- Any term matches (a question's words are rarely all in the passage that answers it).
queries as (
    select coalesce((select string_agg(query::text, ' | ') from terms where config = 'russian'),
                    '')::tsquery as russian,
           coalesce((select string_agg(query::text, ' | ') from terms where config = 'simple'),
                    '')::tsquery as simple
),
-- Vector branch: the production HNSW query (the iterative scan keeps the owner's LIMIT).
vector_hits as materialized (
    select id, embedding <=> %(query)s as distance
      from document_chunks
     where owner_id = %(owner)s and is_active
     order by embedding <=> %(query)s
     limit %(pool)s
),
vector_ranked as (
    select id, row_number() over (order by distance + 0, id) as rank from vector_hits
),
-- Text branch: this owner's chunks matching any term, with the terms each one holds.
text_matches as materialized (
    select c.id,
           array(select t.i from terms t
                  where case t.config when 'russian' then c.fts_russian @@ t.query
                                      else c.fts_simple @@ t.query end) as matched
      from document_chunks c, queries q
     where c.owner_id = %(owner)s and c.is_active
       and (c.fts_russian @@ q.russian or c.fts_simple @@ q.simple)
),
-- A term's weight is its rarity among this owner's chunks (BM25's IDF): ts_rank has no
-- corpus statistics, so "установка" in every chunk would count as much as "fc-cache" in one.
owned as (
    select count(*) as n from document_chunks where owner_id = %(owner)s and is_active
),
idf as (
    select i, ln(1 + (min(o.n) - count(*) + 0.5) / (count(*) + 0.5)) as weight
      from text_matches m cross join lateral unnest(m.matched) as i, owned o
     group by i
),
text_ranked as (
    select id, row_number() over (order by lexical desc, id) as rank
      from (select m.id, sum(idf.weight) as lexical
              from text_matches m cross join lateral unnest(m.matched) as i join idf using (i)
             group by m.id
             order by lexical desc, m.id
             limit %(pool)s) best
),
-- Reciprocal rank fusion of the two lists; the k best go on.
fused as (
    select id,
           coalesce(%(vector_weight)s / (%(rrf_k)s + v.rank), 0)
             + coalesce(%(text_weight)s / (%(rrf_k)s + t.rank), 0) as score
      from vector_ranked v full join text_ranked t using (id)
     order by score desc, id
     limit %(k)s
)
select c.id, c.document_id, c.chunk_text, c.source_type, c.source_identifier, c.title, c.page,
       c.page_label, c.section, c.ts_start, c.ts_end, c.embedding <=> %(query)s as distance, f.score
  from fused f
  join document_chunks c on c.id = f.id
 where c.owner_id = %(owner)s  -- both branches filter already; kept so no edit can leak rows
 order by f.score desc, distance
"""

_TECHNICAL = re.compile(r"[A-Za-z0-9]")


def text_queries(question: str) -> tuple[str, str]:
    """The text each configuration parses: the whole question, and its technical tokens.

    `simple` gets only the whitespace-separated tokens with a Latin letter or a digit (commands,
    options, paths, versions, hotkeys): Cyrillic words are matched stemmed through `russian`, and
    unstemmed, with no stop list, they would add nothing but noise.
    """
    return question, " ".join(token for token in question.split() if _TECHNICAL.search(token))


def hybrid_search_in(conn: Connection, owner_id: int, query_text: str,
                     query_vector: Sequence[float] | np.ndarray, k: int, *, pool: int | None = None,
                     iterative: bool = True, ef_search: int = EF_SEARCH,
                     rrf_k: float = RRF_K, vector_weight: float = VECTOR_WEIGHT,
                     text_weight: float = TEXT_WEIGHT) -> list[Fragment]:
    """The hybrid query on a given connection, inside its transaction.

    `pool` rows per branch (default POOL, never fewer than k); `score` on each fragment is the
    fused score, which a rerank stage takes as the first stage's order.
    """
    vector = np.asarray(query_vector, dtype=np.float32)
    russian, simple = text_queries(query_text)
    set_hnsw_scan(conn, ef_search, "relaxed_order" if iterative else "off")
    params = {"query": vector, "owner": owner_id, "k": k, "pool": max(pool or POOL, k),
              "russian": russian, "simple": simple, "rrf_k": float(rrf_k),
              "vector_weight": float(vector_weight), "text_weight": float(text_weight)}
    rows = conn.execute(_HYBRID_SEARCH, params, prepare=False).fetchall()
    return [
        Fragment(chunk_id=r["id"], document_id=r["document_id"], text=r["chunk_text"],
                 source_type=r["source_type"], source_identifier=r["source_identifier"],
                 title=r["title"], page=r["page"], page_label=r["page_label"], section=r["section"],
                 ts_start=r["ts_start"], ts_end=r["ts_end"], distance=float(r["distance"]),
                 score=float(r["score"]))
        for r in rows
    ]


def first_stage(owner_id: int, query_text: str, query_vector: Sequence[float] | np.ndarray, k: int,
                settings: Settings, mode: FirstStage | None = None) -> list[Fragment]:
    """This owner's k candidates for the question, by the first stage the settings name (or `mode`)."""
    mode = mode or settings.retrieval_first_stage
    with transaction() as conn:
        if mode == "hybrid":
            return hybrid_search_in(conn, owner_id, query_text, query_vector, k, ef_search=settings.hnsw_ef_search)
        if mode == "vector":
            return search_in(conn, owner_id, query_vector, k, ef_search=settings.hnsw_ef_search)
    raise ValueError(f"unknown first stage {mode!r} (expected 'hybrid' or 'vector')")


@task(name="candidate-search", retries=2, retry_delay_seconds=1)
def candidate_search(owner_id: int, query_text: str, query_vector: list[float], k: int,
                     settings: Settings) -> list[Fragment]:
    """The first stage of rag-db-query: the k candidates a rerank stage then orders."""
    return first_stage(owner_id, query_text, query_vector, k, settings)

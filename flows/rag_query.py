"""`rag-db-query` (seed 001 §4.2 step 4): embed the query, first stage top 30, rerank to the top 10.

The first stage is HNSW fused with full-text search, or HNSW alone (`GROVE_RETRIEVAL_FIRST_STAGE`,
nodes/retrieval/retrieve.py); the rerank stage is `GROVE_RERANKER` (nodes/retrieval/rerank_fragments.py).

A sub-flow of its own so ops see each search, its query and its timings in the UI.
"""

from __future__ import annotations

from grove.core.observe import flow

from grove.core.settings import Settings, get_settings
from nodes.embedding.embedder import embed_query
from nodes.retrieval.rerank_fragments import rerank_fragments
from nodes.retrieval.retrieve import Fragment, candidate_search


@flow(name="rag-db-query", flow_run_name="rag-db-query-user{owner_id}")
def rag_db_query(query: str, owner_id: int, settings: Settings | None = None) -> list[Fragment]:
    """This user's best fragments for the query, as data with their sources; `settings` the turn's (None:
    the process's, as a run Prefect starts has)."""
    settings = settings or get_settings()
    vector = embed_query(query)
    candidates = candidate_search(owner_id, query, vector, settings.retrieval_candidates, settings)
    if not candidates:
        return []
    return rerank_fragments(query, candidates, settings.retrieval_top_k, settings.reranker)

"""The rerank stage of rag-db-query: 30 first-stage candidates in, the best 10 out.

Which stage runs is a setting (`GROVE_RERANKER`): the measured offline default,
or a CrossEncoder hub model for users with internet (see nodes/retrieval/rerankers/ and
bench/README.md for the measurement that chose the default).
"""

from __future__ import annotations

import threading
from functools import lru_cache

from grove.core.observe import task

from nodes.retrieval.rerankers import Candidate, Reranker, get_reranker
from nodes.retrieval.retrieve import Fragment

_lock = threading.Lock()


@lru_cache(maxsize=4)
def _reranker(name: str) -> Reranker:
    """The stage, loaded once per process."""
    return get_reranker(name)


def rerank(query: str, fragments: list[Fragment], top_k: int, name: str) -> list[Fragment]:
    """The top_k fragments in the order of the stage `name` (the settings' `reranker`), each with its stage score."""
    with _lock:  # one load per process, even when branches race
        stage = _reranker(name)
    by_id = {str(f.chunk_id): f for f in fragments}
    ranked = stage.rerank(query, [Candidate(str(f.chunk_id), f.text, f.distance, f.score) for f in fragments], top_k)
    return [by_id[r.id].model_copy(update={"score": r.score}) for r in ranked]


@task(name="rerank")
def rerank_fragments(query: str, fragments: list[Fragment], top_k: int, reranker: str) -> list[Fragment]:
    return rerank(query, fragments, top_k, reranker)

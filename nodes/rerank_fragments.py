"""The rerank stage of rag-db-query: 30 first-stage candidates in, the best 10 out.

Which stage runs is a setting (`GROVE_RERANKER`): the measured offline default,
or a CrossEncoder hub model for users with internet (see nodes/rerank.py and
bench/README.md for the measurement that chose the default).
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, nullcontext
from functools import lru_cache

from grove.observe import task

from grove.settings import get_settings
from nodes.rerank import Candidate, Reranker, get_reranker
from nodes.retrieve import Fragment

_lock = threading.Lock()


@lru_cache(maxsize=4)
def _reranker(name: str) -> tuple[Reranker, AbstractContextManager[object]]:
    """The stage, loaded once, and the lock its calls need (the embedder's, if it shares its model)."""
    if name.strip().lower() == "late-interaction":
        from nodes.embedder import get_embedder

        embedder = get_embedder()
        return get_reranker(name, embedding_model=embedder.model), embedder.lock
    return get_reranker(name), nullcontext()


def rerank(query: str, fragments: list[Fragment], top_k: int, name: str | None = None) -> list[Fragment]:
    """The top_k fragments in the stage's order, each with its stage score."""
    with _lock:  # one load per process, even when branches race
        stage, model_lock = _reranker(name or get_settings().reranker)
    by_id = {str(f.chunk_id): f for f in fragments}
    with model_lock:  # a fast tokenizer shared between threads is not reentrant
        ranked = stage.rerank(query, [Candidate(str(f.chunk_id), f.text, f.distance, f.score) for f in fragments],
                              top_k)
    return [by_id[r.id].model_copy(update={"score": r.score}) for r in ranked]


@task(name="rerank")
def rerank_fragments(query: str, fragments: list[Fragment], top_k: int) -> list[Fragment]:
    return rerank(query, fragments, top_k)

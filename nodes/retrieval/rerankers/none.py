"""``none``: keep the first stage's order (the vector order, or the hybrid stage's fused score)."""

from __future__ import annotations

from collections.abc import Sequence

from nodes.retrieval.rerankers.base import DEFAULT_TOP_K, Candidate, Ranked, take


class NoRerank:
    """The first stage's order: cosine similarity (1 - distance) for vector hits, else the prior."""

    name = "none"

    def rerank(self, query: str, candidates: Sequence[Candidate], top_k: int = DEFAULT_TOP_K) -> list[Ranked]:
        return take(candidates, [c.first_stage_score for c in candidates], top_k)



RERANKER = NoRerank

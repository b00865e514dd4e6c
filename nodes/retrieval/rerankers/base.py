"""What every rerank stage shares: the candidates it gets, what it returns, the Protocol it meets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

DEFAULT_TOP_K = 10


@dataclass(frozen=True)
class Candidate:
    """One first-stage hit: ``distance`` is the cosine distance (pgvector ``<=>``), lower = closer.

    ``prior`` is the first stage's own score when it is not the vector order (the hybrid stage's
    fused rank score, higher = better); stages that keep or fuse with "the first stage's order"
    read :attr:`first_stage_score`, so a rerank never silently undoes the fusion.
    """

    id: str
    text: str
    distance: float
    prior: float | None = None

    @property
    def first_stage_score(self) -> float:
        """Higher = better: the first stage's score, or the cosine similarity for plain vector hits."""
        return self.prior if self.prior is not None else 1.0 - self.distance


@dataclass(frozen=True)
class Ranked:
    """A reranked candidate; ``score`` is the stage's own score (higher = better)."""

    id: str
    text: str
    score: float
    distance: float


@runtime_checkable
class Reranker(Protocol):
    """A rerank stage: query + candidates in, at most ``top_k`` candidates out, best first."""

    name: str

    def rerank(self, query: str, candidates: Sequence[Candidate], top_k: int = DEFAULT_TOP_K) -> list[Ranked]:
        ...



def take(candidates: Sequence[Candidate], scores: Sequence[float] | np.ndarray, top_k: int) -> list[Ranked]:
    """Sort by score (desc), ties broken by vector order, and keep ``top_k``."""
    order = sorted(range(len(candidates)), key=lambda i: (-float(scores[i]), candidates[i].distance, i))
    return [
        Ranked(candidates[i].id, candidates[i].text, float(scores[i]), candidates[i].distance)
        for i in order[: max(top_k, 0)]
    ]


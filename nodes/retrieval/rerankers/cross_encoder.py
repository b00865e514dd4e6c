"""Any other name: a ``sentence_transformers.CrossEncoder`` (hub id or local folder) — for users
who name a multilingual reranker. No cross-encoder weights ship in a package reachable offline, so
it runs only when a user supplies a model; it is the fallback of `get_reranker`, not registered."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from nodes.retrieval.rerankers.base import DEFAULT_TOP_K, Candidate, Ranked, take

if TYPE_CHECKING:  # heavy imports stay lazy: the bot process must start fast
    from sentence_transformers import CrossEncoder


class CrossEncoderReranker:
    """A ``sentence_transformers.CrossEncoder`` (hub id or local folder) scores each (query, passage).

    The model loads on first use, so naming one costs nothing until a question is asked. With
    HF_HUB_OFFLINE=1 only local folders or already-cached models load.
    """

    def __init__(
        self,
        model_name: str,
        *,
        device: str = "cpu",
        max_length: int | None = 512,
        batch_size: int = 16,
        model: CrossEncoder | None = None,
    ) -> None:
        self.name = model_name
        self.model_name = model_name
        self.device = device
        self.max_length = max_length
        self.batch_size = batch_size
        self._model = model

    @property
    def model(self) -> CrossEncoder:
        if self._model is None:
            from sentence_transformers import CrossEncoder

            self._model = CrossEncoder(self.model_name, device=self.device, max_length=self.max_length)
        return self._model

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """One relevance score per text (the last logit when the head has several labels)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        raw = self.model.predict(
            [(query, text) for text in texts], batch_size=self.batch_size, show_progress_bar=False
        )
        out = np.asarray(raw, dtype=np.float32)
        return out[:, -1] if out.ndim == 2 else out

    def rerank(self, query: str, candidates: Sequence[Candidate], top_k: int = DEFAULT_TOP_K) -> list[Ranked]:
        return take(candidates, self.scores(query, [c.text for c in candidates]), top_k)

"""Late interaction, a rerank stage measured and not shipped: ColBERT-style MaxSim over
EmbeddingGemma's token embeddings. It ties the vector order at best (nDCG@10 0.683 vs 0.69) at
5-28 s per query on 2 cores, so it lives with the benches that measured it
(`bench/rerank_eval.py`), not in the product.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from nodes.retrieval.rerankers.base import DEFAULT_TOP_K, Candidate, Ranked, take
from nodes.retrieval.rerankers.bm25_fusion import fuse

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

QUERY_PROMPT = "task: search result | query: "
DOCUMENT_PROMPT = "title: none | text: "

# --------------------------------------------------------------------------- late interaction


def load_embedding_model(path: str | None = None) -> SentenceTransformer:
    """EmbeddingGemma (or the model named in settings) in bf16 on CPU, offline.

    Kept here rather than borrowed from the embedder node so that this module stands alone; a
    caller that already holds the embedder's model should pass it in instead (no second copy).
    """
    import os

    import torch
    from sentence_transformers import SentenceTransformer

    if path is None:
        from grove.core.settings import get_settings

        settings = get_settings()
        path = settings.model_path(settings.embedding_model)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return SentenceTransformer(path, device="cpu", model_kwargs={"torch_dtype": torch.bfloat16})


class LateInteractionReranker:
    """ColBERT-style MaxSim over EmbeddingGemma's contextual token embeddings.

    score(q, d) = mean over query tokens of max over passage tokens of cos(q_i, d_j), with
    prompt and special tokens removed on both sides. The passage tokens are encoded at rerank
    time (one forward pass over the candidates), so nothing is stored per chunk — the price is
    latency, measured in ``bench/rerank_eval.py``.

    ``project=True`` maps each token through the model's Dense layers (both are linear, so the
    sentence embedding is exactly the mean of the projected tokens, normalised); ``False`` uses
    the transformer's token states as they are — measured equal (nDCG@10 0.594 vs 0.588 held-out).
    ``vector_weight`` > 0 fuses MaxSim with the vector score (min-max normalised, linear). MaxSim
    alone is clearly worse than the vector order here (0.59 vs 0.69: EmbeddingGemma was trained
    for pooled vectors, not token matching); the tuned fusion (raw tokens, vector_weight 0.8)
    ties it (0.683) at ~5-8 s per query on 2 cores, because 30 passages are re-encoded.
    """

    name = "late-interaction"

    def __init__(
        self,
        model: SentenceTransformer | str | None = None,
        *,
        project: bool = False,
        vector_weight: float = 0.8,
        batch_size: int = 8,
        query_prompt: str = QUERY_PROMPT,
        document_prompt: str = DOCUMENT_PROMPT,
    ) -> None:
        self._model = model if not isinstance(model, str) else None
        self._model_path = model if isinstance(model, str) else None
        self.project = project
        self.vector_weight = vector_weight
        self.batch_size = batch_size
        self.query_prompt = query_prompt
        self.document_prompt = document_prompt
        self._projection: np.ndarray | None = None
        self._prompt_tokens: dict[str, int] = {}

    @property
    def model(self) -> SentenceTransformer:
        if self._model is None:
            self._model = load_embedding_model(self._model_path)
        return self._model

    def _projection_matrix(self) -> np.ndarray | None:
        """Product of the Dense layers after pooling (768 -> 3072 -> 768, no bias, identity
        activation); None when the model has none (then tokens are used as they are)."""
        if self._projection is None:
            matrix = None
            for module in list(self.model)[2:]:
                linear = getattr(module, "linear", None)
                if linear is None:
                    continue
                if getattr(linear, "bias", None) is not None:
                    raise ValueError("late interaction projection expects bias-free Dense layers")
                weight = linear.weight.detach().float()
                matrix = weight if matrix is None else weight @ matrix
            if matrix is None:
                return None
            self._projection = matrix.T.contiguous().numpy()
        return self._projection

    def _prompt_token_count(self, prompt: str) -> int:
        """Tokens a prompt occupies at the start of a sequence (bos included, eos not).

        The prompt's trailing space merges into the first word ("▁Как"), so the prompt is
        counted without it; counting it (as sentence-transformers' prompt_length does) would
        drop the first real word.
        """
        if prompt not in self._prompt_tokens:
            tokenizer = self.model.tokenizer
            ids = list(tokenizer(prompt.rstrip())["input_ids"])
            if ids and ids[-1] == tokenizer.eos_token_id:
                ids = ids[:-1]
            self._prompt_tokens[prompt] = len(ids)
        return self._prompt_tokens[prompt]

    def content_tokens(self, texts: Sequence[str], prompt: str) -> list[np.ndarray]:
        """Raw contextual token embeddings per text (float32, tokens x 768), prompt/special tokens cut."""
        if not texts:
            return []
        outputs = self.model.encode(
            list(texts), prompt=prompt, output_value=None, batch_size=self.batch_size,
            show_progress_bar=False, convert_to_numpy=False,
        )
        skip = self._prompt_token_count(prompt)
        tokenizer = self.model.tokenizer
        special = {tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id}
        result: list[np.ndarray] = []
        for out in outputs:
            ids = out["input_ids"].tolist()
            mask = out["attention_mask"].bool().tolist()
            keep = [i for i in range(skip, len(ids)) if mask[i] and ids[i] not in special]
            result.append(out["token_embeddings"][keep].float().numpy())
        return result

    def prepare(self, tokens: np.ndarray, project: bool | None = None) -> np.ndarray:
        """Optionally project through the Dense layers, then scale every token to unit length."""
        projection = self._projection_matrix() if (self.project if project is None else project) else None
        if projection is not None:
            tokens = tokens @ projection
        norms = np.linalg.norm(tokens, axis=1, keepdims=True)
        return tokens / np.maximum(norms, 1e-12)

    def token_vectors(self, texts: Sequence[str], prompt: str) -> list[np.ndarray]:
        """Unit-length (optionally projected) content-token vectors per text."""
        return [self.prepare(tokens) for tokens in self.content_tokens(texts, prompt)]

    @staticmethod
    def maxsim(query_tokens: np.ndarray, doc_tokens: np.ndarray) -> float:
        if query_tokens.size == 0 or doc_tokens.size == 0:
            return 0.0
        return float((query_tokens @ doc_tokens.T).max(axis=1).mean())

    def scores(self, query: str, candidates: Sequence[Candidate]) -> np.ndarray:
        query_tokens = self.token_vectors([query], self.query_prompt)[0]
        docs = self.token_vectors([c.text for c in candidates], self.document_prompt)
        late = np.array([self.maxsim(query_tokens, d) for d in docs])
        if self.vector_weight <= 0:
            return late
        vector = [c.first_stage_score for c in candidates]
        return fuse(vector, late, method="linear", weight=1.0 - self.vector_weight)

    def rerank(self, query: str, candidates: Sequence[Candidate], top_k: int = DEFAULT_TOP_K) -> list[Ranked]:
        if not candidates:
            return []
        return take(candidates, self.scores(query, candidates), top_k)

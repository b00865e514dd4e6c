"""Rerank stages: reorder the ~30 vector-search candidates and keep the best 10.

Retrieval is "embed query -> HNSW top 30 -> rerank -> top 10". The vector search is cheap and
recalls well, but a single 768-d vector per chunk blurs exact terms (a package name, a command, an
inflected Russian word), so a second look at the 30 candidates can pay off. What can run here:

* ``NoRerank`` — keep the vector order. The baseline, and the right choice when nothing beats it.
* ``CrossEncoderReranker`` — a real ``sentence_transformers.CrossEncoder`` for users who name a hub
  model in settings (e.g. a multilingual reranker). No cross-encoder weights ship in any package
  reachable offline, so this is plumbing until a user supplies a model.
* ``BM25FusionReranker`` — lexical evidence over Russian *lemmas* (pymorphy3: "малину" and
  "малина" are one term), BM25-scored over the candidate set and fused with the vector score.
* ``LateInteractionReranker`` — ColBERT-style MaxSim over EmbeddingGemma token embeddings, computed
  on the fly for the candidates (nothing is precomputed or stored).

Which offline stage is the default is measured by ``bench/retrieval_eval.py`` through the production
ingest and query path (figures in ``bench/README.md``). On the Debian FAQ set alone neither stage beat
the vector order (``bench/rerank_eval.py``); on natural questions over real manuals BM25 fusion does
(TeX Live, GIMP; confirmed on a LibreOffice set written after the choice), and it ties on Debian, so
``DEFAULT_OFFLINE_RERANKER`` is "bm25-fusion". Late interaction is no default at ~5-28 s per query.

This module holds no database code: a caller passes candidates it already has.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:  # heavy imports stay lazy: the bot process must start fast
    from sentence_transformers import CrossEncoder, SentenceTransformer

DEFAULT_TOP_K = 10

# The offline default: the stage with the best mean MRR@10 over the sets of bench/retrieval_eval.py.
DEFAULT_OFFLINE_RERANKER = "bm25-fusion"

QUERY_PROMPT = "task: search result | query: "
DOCUMENT_PROMPT = "title: none | text: "


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


def _take(candidates: Sequence[Candidate], scores: Sequence[float] | np.ndarray, top_k: int) -> list[Ranked]:
    """Sort by score (desc), ties broken by vector order, and keep ``top_k``."""
    order = sorted(range(len(candidates)), key=lambda i: (-float(scores[i]), candidates[i].distance, i))
    return [
        Ranked(candidates[i].id, candidates[i].text, float(scores[i]), candidates[i].distance)
        for i in order[: max(top_k, 0)]
    ]


# --------------------------------------------------------------------------- no rerank


class NoRerank:
    """The first stage's order: cosine similarity (1 - distance) for vector hits, else the prior."""

    name = "none"

    def rerank(self, query: str, candidates: Sequence[Candidate], top_k: int = DEFAULT_TOP_K) -> list[Ranked]:
        return _take(candidates, [c.first_stage_score for c in candidates], top_k)


# --------------------------------------------------------------------------- cross-encoder


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
        return _take(candidates, self.scores(query, [c.text for c in candidates]), top_k)


# --------------------------------------------------------------------------- Russian analysis

_WORD = re.compile(r"[0-9a-zа-яё]+", re.IGNORECASE)

# Parts of speech that carry no topic (pymorphy3 OpenCorpora tags): prepositions, conjunctions,
# particles, interjections, pronouns-nouns. Dropping them beats a hand-made stop list.
_FUNCTION_POS = frozenset({"PREP", "CONJ", "PRCL", "INTJ", "NPRO"})

# Used only by the Snowball analyser, which has no part-of-speech information.
_RU_STOPWORDS = frozenset(
    "и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее её мне "
    "было вот от меня еще ещё нет о из ему теперь когда даже ну вдруг ли если уже или ни быть был него "
    "до вас нибудь опять уж вам ведь там потом себя ничего ей может они тут где есть надо ней для мы "
    "тебя их чем была сам чтоб без будто чего раз тоже себе под будет ж тогда кто этот того потому "
    "этого какой совсем ним здесь этом один почти мой тем чтобы нее неё сейчас были куда зачем всех "
    "никогда можно при наконец два об другой хоть после над больше тот через эти нас про всего них "
    "какая много разве три эту моя впрочем хорошо свою этой перед иногда лучше чуть том нельзя такой "
    "им более всегда конечно всю между это".split()
)


@lru_cache(maxsize=1)
def _morph():  # noqa: ANN202 - pymorphy3.MorphAnalyzer
    try:
        import pymorphy3
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "bm25-fusion lemmatises Russian with pymorphy3: pip install pymorphy3 pymorphy3-dicts-ru"
        ) from exc

    return pymorphy3.MorphAnalyzer(lang="ru")


@lru_cache(maxsize=500_000)
def _lemma(word: str) -> str | None:
    """Normal form of a Russian word, None for function words; other tokens pass unchanged."""
    if not re.search("[а-яё]", word):
        return word
    parse = _morph().parse(word)[0]
    if parse.tag.POS in _FUNCTION_POS:
        return None
    return parse.normal_form.replace("ё", "е")


@lru_cache(maxsize=1)
def _snowball():  # noqa: ANN202 - snowballstemmer stemmer
    import snowballstemmer

    return snowballstemmer.stemmer("russian")


@lru_cache(maxsize=500_000)
def _stem(word: str) -> str | None:
    if word in _RU_STOPWORDS:
        return None
    if not re.search("[а-яё]", word):
        return word
    return _snowball().stemWord(word)


Analyzer = Literal["pymorphy", "snowball", "lower"]


def analyze(text: str, analyzer: Analyzer = "pymorphy") -> list[str]:
    """Terms of a text: lower-cased words, ё→е, lemmatised (pymorphy3) or stemmed (Snowball).

    Lemmas are cached per word form, so after warm-up a candidate set costs dictionary lookups.
    """
    words = [w.replace("ё", "е") for w in _WORD.findall(text.lower())]
    if analyzer == "lower":
        return words
    fn = _lemma if analyzer == "pymorphy" else _stem
    return [term for term in map(fn, words) if term]


# --------------------------------------------------------------------------- BM25


@dataclass(frozen=True)
class TermStats:
    """Corpus-level document frequencies for BM25 IDF (optional; default is the candidate set).

    IDF from 30 candidates is noisy but self-contained; a caller that can count over the whole
    knowledge base may pass these instead. ``bench/rerank_eval.py`` measures both.
    """

    n_docs: int
    avg_len: float
    df: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def from_texts(cls, texts: Iterable[str], analyzer: Analyzer = "pymorphy") -> TermStats:
        df: Counter[str] = Counter()
        n, total = 0, 0
        for text in texts:
            terms = analyze(text, analyzer)
            df.update(set(terms))
            total += len(terms)
            n += 1
        return cls(n, total / max(n, 1), dict(df))


def bm25_scores(
    query_terms: Sequence[str],
    docs_terms: Sequence[Sequence[str]],
    *,
    k1: float = 1.2,
    b: float = 0.75,
    stats: TermStats | None = None,
) -> np.ndarray:
    """Okapi BM25 of each document for the query; IDF = ln(1 + (N - df + 0.5) / (df + 0.5))."""
    if not docs_terms:
        return np.zeros(0)
    if stats is None:
        n_docs = len(docs_terms)
        avg_len = sum(len(d) for d in docs_terms) / n_docs or 1.0
        df: Mapping[str, int] = Counter(t for d in docs_terms for t in set(d))
    else:
        n_docs, avg_len, df = stats.n_docs, stats.avg_len or 1.0, stats.df
    unique_query = list(dict.fromkeys(query_terms))
    idf = {t: math.log(1.0 + (n_docs - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in unique_query}
    scores = np.zeros(len(docs_terms))
    for i, terms in enumerate(docs_terms):
        tf = Counter(terms)
        norm = k1 * (1.0 - b + b * len(terms) / avg_len)
        scores[i] = sum(idf[t] * tf[t] * (k1 + 1.0) / (tf[t] + norm) for t in unique_query if tf[t])
    return scores


def ranks_desc(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """1-based ranks by descending score; tied scores share their average rank (no tie = no signal)."""
    values = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-values, kind="stable")
    ranks = np.empty(len(values))
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def rrf(rank_lists: Sequence[np.ndarray], weights: Sequence[float], k: float = 60.0) -> np.ndarray:
    """Weighted reciprocal rank fusion: sum_i w_i / (k + rank_i)."""
    return sum(w / (k + np.asarray(r, dtype=np.float64)) for r, w in zip(rank_lists, weights, strict=True))


def minmax(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Scale to [0, 1] over the candidate set; a constant list maps to zeros (carries no signal)."""
    arr = np.asarray(values, dtype=np.float64)
    span = arr.max() - arr.min() if arr.size else 0.0
    return (arr - arr.min()) / span if span > 0 else np.zeros_like(arr)


Fusion = Literal["rrf", "linear"]


def fuse(
    vector_similarity: Sequence[float] | np.ndarray,
    other: Sequence[float] | np.ndarray,
    *,
    method: Fusion,
    weight: float,
    rrf_k: float = 60.0,
) -> np.ndarray:
    """Combine the vector similarity with a second score; ``weight`` is the second score's share.

    rrf: (1 - w) / (k + rank_vector) + w / (k + rank_other), scale-free;
    linear: (1 - w) * minmax(vector) + w * minmax(other), keeps score margins.
    """
    if method == "rrf":
        return rrf([ranks_desc(vector_similarity), ranks_desc(other)], [1.0 - weight, weight], rrf_k)
    return (1.0 - weight) * minmax(vector_similarity) + weight * minmax(other)


class BM25FusionReranker:
    """BM25 over Russian lemmas, computed on the candidate set and fused with the vector score.

    Why: the embedding already ranks by meaning; what it can miss is exact lexical agreement
    (package names, commands, the specific noun of the question). Russian inflects heavily, so
    terms are lemmas: "малину"/"малины" -> "малина", "подкормку"/"подкормки" -> "подкормка",
    "подкормите" -> "подкормить" (derivation is not merged: the verb "подкормить" and the noun
    "подкормка" stay two terms, as they do under Snowball). IDF comes from the 30 candidates
    (self-contained; a corpus-level ``stats`` measured no better). The fusion is linear over
    min-max normalised scores with BM25's share 0.4: the best mean MRR@10 of the grid in
    ``bench/retrieval_eval.py --rerank-sweep`` on the TeX Live, GIMP and Debian sets (0.742 vs
    0.731 for the earlier weighted RRF at 0.25), and no worse on the LibreOffice set written
    afterwards to check it (0.796 vs 0.793). Cost: ~3 ms per query once word forms are cached.
    """

    name = "bm25-fusion"

    def __init__(
        self,
        *,
        analyzer: Analyzer = "pymorphy",
        fusion: Fusion = "linear",
        weight: float = 0.4,
        k1: float = 1.2,
        b: float = 0.75,
        rrf_k: float = 60.0,
        stats: TermStats | None = None,
    ) -> None:
        self.analyzer = analyzer
        self.fusion = fusion
        self.weight = weight
        self.k1 = k1
        self.b = b
        self.rrf_k = rrf_k
        self.stats = stats

    def lexical_scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        return bm25_scores(
            analyze(query, self.analyzer),
            [analyze(t, self.analyzer) for t in texts],
            k1=self.k1,
            b=self.b,
            stats=self.stats,
        )

    def scores(self, query: str, candidates: Sequence[Candidate]) -> np.ndarray:
        lexical = self.lexical_scores(query, [c.text for c in candidates])
        vector = [c.first_stage_score for c in candidates]
        return fuse(vector, lexical, method=self.fusion, weight=self.weight, rrf_k=self.rrf_k)

    def rerank(self, query: str, candidates: Sequence[Candidate], top_k: int = DEFAULT_TOP_K) -> list[Ranked]:
        if not candidates:
            return []
        return _take(candidates, self.scores(query, candidates), top_k)


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
        from grove.settings import get_settings

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
        return _take(candidates, self.scores(query, candidates), top_k)


# --------------------------------------------------------------------------- factory


def get_reranker(
    name: str,
    *,
    embedding_model: SentenceTransformer | str | None = None,
    device: str = "cpu",
) -> Reranker:
    """A stage by name: "none", "bm25-fusion", "late-interaction", "default" (the measured offline
    default, ``DEFAULT_OFFLINE_RERANKER``), or anything else = a CrossEncoder hub id or folder.

    ``embedding_model`` lets late interaction share the embedder's already-loaded model.
    """
    key = name.strip()
    if key.lower() == "default":
        key = DEFAULT_OFFLINE_RERANKER
    lowered = key.lower()
    if lowered in {"none", ""}:
        return NoRerank()
    if lowered == "bm25-fusion":
        return BM25FusionReranker()
    if lowered == "late-interaction":
        return LateInteractionReranker(embedding_model)
    return CrossEncoderReranker(key, device=device)


RERANKER_NAMES: tuple[str, ...] = ("none", "bm25-fusion", "late-interaction")

__all__: list[str] = [
    "BM25FusionReranker",
    "Candidate",
    "CrossEncoderReranker",
    "DEFAULT_OFFLINE_RERANKER",
    "LateInteractionReranker",
    "NoRerank",
    "RERANKER_NAMES",
    "Ranked",
    "Reranker",
    "TermStats",
    "analyze",
    "bm25_scores",
    "fuse",
    "get_reranker",
    "load_embedding_model",
    "minmax",
    "ranks_desc",
    "rrf",
]

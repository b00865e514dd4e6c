"""``bm25-fusion``, the measured offline default: BM25 over Russian lemmas on the candidate set,
fused with the first stage's score. The analysers, IDF sources and fusions it can be built with
are the ones `bench/retrieval_eval.py --rerank-sweep` and `bench/rerank_eval.py` compare."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from nodes.retrieval.rerankers.base import DEFAULT_TOP_K, Candidate, Ranked, take

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
def _morph() -> Any:  # pymorphy3.MorphAnalyzer (untyped)
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
    return str(parse.normal_form).replace("ё", "е")


@lru_cache(maxsize=1)
def _snowball() -> Any:  # a snowballstemmer stemmer (untyped)
    import snowballstemmer

    return snowballstemmer.stemmer("russian")


@lru_cache(maxsize=500_000)
def _stem(word: str) -> str | None:
    if word in _RU_STOPWORDS:
        return None
    if not re.search("[а-яё]", word):
        return word
    return str(_snowball().stemWord(word))


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
    total = np.zeros(len(rank_lists[0]) if rank_lists else 0)
    for ranks, weight in zip(rank_lists, weights, strict=True):
        total += weight / (k + np.asarray(ranks, dtype=np.float64))
    return total


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
        return take(candidates, self.scores(query, candidates), top_k)


RERANKER = BM25FusionReranker

"""nodes/retrieval/rerankers/bm25_fusion.py on hand-made retrieval fragments: exact rare words of the
question lift their fragment; without such words the first stage's order stands.

(tests/test_rerank.py holds the lemma merging, the BM25 / RRF arithmetic and the lemmas-vs-surface case.)
"""

from __future__ import annotations

import pytest

from nodes.retrieval.rerankers import get_reranker
from nodes.retrieval.rerankers.base import Candidate
from nodes.retrieval.rerankers.bm25_fusion import RERANKER, BM25FusionReranker, TermStats, analyze
from nodes.retrieval.retrieve import Fragment

MULCH = "Чем мульчировать малину, опилками или соломой?"
TEXTS = [
    "Малину весной подкармливают азотом, а осенью калием и фосфором.",
    "Кусты малины обрезают после плодоношения, удаляя отплодоносившие побеги.",
    "Малина любит солнечное место и рыхлую плодородную почву.",
    "Молодые саженцы малины поливают раз в неделю в сухую погоду.",
    "Малину мульчируют перепревшими опилками или соломой, чтобы сохранить влагу.",
    "Ремонтантную малину скашивают под корень поздней осенью.",
]


def fragments(texts: list[str], scores: list[float] | None = None) -> list[Fragment]:
    """Fragments in the first stage's order: distances 0.20, 0.21, …; `scores` as a hybrid stage's."""
    return [Fragment(chunk_id=100 + i, document_id=7, text=t, source_type="pdf", source_identifier="малина.pdf",
                     distance=0.20 + 0.01 * i, score=scores[i] if scores else None)
            for i, t in enumerate(texts)]


def order(stage: BM25FusionReranker, query: str, frags: list[Fragment], top_k: int = 10) -> list[int]:
    """The chunk ids as the stage ranks the fragments (each passed as the rerank step passes it)."""
    cands = [Candidate(str(f.chunk_id), f.text, f.distance, f.score) for f in frags]
    return [int(r.id) for r in stage.rerank(query, cands, top_k)]


def test_it_is_the_registered_default_stage() -> None:
    assert RERANKER is BM25FusionReranker and isinstance(get_reranker("default"), BM25FusionReranker)
    stage = BM25FusionReranker()
    assert (stage.analyzer, stage.fusion, stage.weight, stage.stats) == ("pymorphy", "linear", 0.4, None)


def test_the_fragment_with_the_questions_rare_words_moves_up_the_rest_keep_their_order() -> None:
    # «малина» is in every fragment (worth nearly nothing); «мульчировать», «опилки», «солома» only in
    # the fifth, in other word forms than the question's.
    out = order(BM25FusionReranker(), MULCH, fragments(TEXTS))
    assert out == [100, 104, 101, 102, 103, 105]


def test_a_question_sharing_no_word_with_the_fragments_leaves_the_order_alone() -> None:
    assert order(BM25FusionReranker(), "Когда пересаживать жимолость?", fragments(TEXTS)) == \
        [100, 101, 102, 103, 104, 105]


def test_a_hybrid_first_stage_is_fused_by_its_own_score_not_the_distance() -> None:
    # The hybrid stage's fused scores rank the fragments against their distances: last is best.
    frags = fragments(TEXTS[:4], scores=[0.010, 0.020, 0.030, 0.040])
    assert order(BM25FusionReranker(), "Когда пересаживать жимолость?", frags) == [103, 102, 101, 100]


@pytest.mark.parametrize(("weight", "expected"), [
    (0.0, [100, 101, 102, 103, 104, 105]),  # the vector order alone
    (1.0, [104, 105, 100, 101, 102, 103]),  # BM25 alone: ties (same lexical score) keep vector order
])
def test_the_weight_is_bm25s_share(weight: float, expected: list[int]) -> None:
    assert order(BM25FusionReranker(weight=weight), MULCH, fragments(TEXTS)) == expected


def test_top_k_cuts_after_the_fusion_and_empty_input_is_empty() -> None:
    assert order(BM25FusionReranker(), MULCH, fragments(TEXTS), top_k=2) == [100, 104]
    assert BM25FusionReranker().rerank(MULCH, [], top_k=5) == []


def test_scores_are_the_fused_scores_in_zero_one() -> None:
    frags = fragments(TEXTS)
    cands = [Candidate(str(f.chunk_id), f.text, f.distance) for f in frags]
    out = BM25FusionReranker().rerank(MULCH, cands)
    assert out[0].score == pytest.approx(0.6, abs=0.001)  # the closest vector hit, with almost no lexical share
    assert out[1].score == pytest.approx(0.6 * 0.2 + 0.4)  # 5th of 6 by distance, best by BM25
    assert all(0.0 <= r.score <= 1.0 for r in out)


def test_corpus_statistics_decide_which_word_is_rare() -> None:
    texts = ["Мульчировать соломой грядку.", "Подкормить азотом грядку."]
    query = "солома или азот?"
    in_set = BM25FusionReranker().lexical_scores(query, texts)
    assert in_set[0] == pytest.approx(in_set[1])  # within the two candidates, both words are equally rare
    corpus = TermStats(n_docs=1000, avg_len=3.0, df={"солома": 900, "азот": 3, "грядка": 500})
    with_stats = BM25FusionReranker(stats=corpus).lexical_scores(query, texts)
    assert with_stats[1] > 10 * with_stats[0]  # «азот» is the rare one across the whole library


def test_term_stats_count_documents_lengths_and_lemmas() -> None:
    stats = TermStats.from_texts(["Малина весной", "малину осенью поливают", ""])
    assert (stats.n_docs, stats.avg_len) == (3, pytest.approx(5 / 3))
    assert stats.df == {"малина": 2, "весна": 1, "осень": 1, "поливать": 1}
    assert TermStats.from_texts([]) == TermStats(0, 0.0, {})


def test_the_other_analysers() -> None:
    assert analyze("Ёлка и её иголки", "lower") == ["елка", "и", "ее", "иголки"]
    assert analyze("Ёлка и её иголки", "snowball") == ["елк", "иголк"]  # stop words dropped, stems kept
    assert analyze("apt-mark hold 2.0") == ["apt", "mark", "hold", "2", "0"]  # Latin and digits pass as they are

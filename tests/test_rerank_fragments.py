"""nodes/retrieval/rerank_fragments.py: the rerank step over retrieved fragments, by the stage the settings name."""

from __future__ import annotations

from grove.core.settings import get_settings
import pytest

from nodes.retrieval import rerank_fragments as step
from nodes.retrieval.rerankers.bm25_fusion import BM25FusionReranker
from nodes.retrieval.rerankers.none import NoRerank
from nodes.retrieval.retrieve import Fragment

QUESTION = "Чем мульчировать малину, опилками или соломой?"
TEXTS = [
    "Малину весной подкармливают азотом, а осенью калием и фосфором.",
    "Кусты малины обрезают после плодоношения, удаляя отплодоносившие побеги.",
    "Малина любит солнечное место и рыхлую плодородную почву.",
    "Малину мульчируют перепревшими опилками или соломой, чтобы сохранить влагу.",
]


def fragments(scores: list[float | None] | None = None) -> list[Fragment]:
    return [Fragment(chunk_id=500 + i, document_id=40 + i, text=t, source_type="pdf",
                     source_identifier=f"часть-{i}.pdf", page=i + 1, section="Уход", distance=0.30 + 0.02 * i,
                     score=(scores or [None] * len(TEXTS))[i])
            for i, t in enumerate(TEXTS)]


def test_the_named_stage_orders_and_cuts_and_each_fragment_carries_its_stage_score() -> None:
    frags = fragments()
    out = step.rerank(QUESTION, frags, top_k=2, name="bm25-fusion")
    assert [f.chunk_id for f in out] == [500, 503]  # the mulch passage jumps from last to second
    assert out[0].score == pytest.approx(0.6, abs=0.01)  # closest by vector (1) at the vector's share 0.6
    assert out[1].score == pytest.approx(0.4)  # farthest by vector (0), best by BM25 (1) at BM25's share 0.4
    # Everything else about a fragment is kept; the caller's fragments are not changed.
    assert out[1].model_dump(exclude={"score"}) == frags[3].model_dump(exclude={"score"})
    assert [f.score for f in frags] == [None] * 4


def test_a_hybrid_score_is_the_first_stages_order_for_the_none_stage() -> None:
    out = step.rerank(QUESTION, fragments(scores=[0.01, 0.04, 0.03, 0.02]), top_k=10, name="none")
    assert [(f.chunk_id, f.score) for f in out] == [(501, 0.04), (502, 0.03), (503, 0.02), (500, 0.01)]


def test_the_stage_the_settings_name_is_the_one_that_orders(env) -> None:  # type: ignore[no-untyped-def]
    """rag-db-query hands the settings' `reranker` (flows/rag_query.py)."""
    env(GROVE_RERANKER="none")
    assert [f.chunk_id for f in step.rerank(QUESTION, fragments(), 10, get_settings().reranker)] == [500, 501, 502, 503]
    env(GROVE_RERANKER="bm25-fusion")
    assert [f.chunk_id for f in step.rerank(QUESTION, fragments(), 10, get_settings().reranker)] == [500, 503, 501, 502]


def test_a_stage_is_built_once_per_process() -> None:
    first = step._reranker("bm25-fusion")
    assert isinstance(first, BM25FusionReranker) and step._reranker("bm25-fusion") is first
    assert isinstance(step._reranker("none"), NoRerank)


def test_no_fragments_give_no_fragments() -> None:
    assert step.rerank(QUESTION, [], top_k=10, name="bm25-fusion") == []


def test_the_task_reranks_with_the_stage_it_is_handed() -> None:
    out = step.rerank_fragments(QUESTION, fragments(), 3, "bm25-fusion")
    assert [f.chunk_id for f in out] == [500, 503, 501]

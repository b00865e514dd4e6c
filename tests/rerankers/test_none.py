"""nodes/retrieval/rerankers/none.py: the first stage's order, whatever the question says."""

from __future__ import annotations

import pytest

from nodes.retrieval.rerankers.base import Candidate
from nodes.retrieval.rerankers.none import RERANKER, NoRerank


def test_it_is_the_registered_stage_called_none() -> None:
    assert RERANKER is NoRerank and NoRerank.name == "none"


def test_hybrid_priors_are_kept_not_undone_by_distance() -> None:
    # The hybrid first stage's fused score put "b" first although "a" is the closer vector hit.
    cands = [Candidate("a", "полив малины", 0.10, prior=0.020), Candidate("b", "малина", 0.40, prior=0.033),
             Candidate("c", "голубика", 0.20, prior=0.016)]
    out = NoRerank().rerank("малина", cands, top_k=3)
    assert [r.id for r in out] == ["b", "a", "c"]
    assert [r.score for r in out] == pytest.approx([0.033, 0.020, 0.016])
    assert [r.distance for r in out] == pytest.approx([0.40, 0.10, 0.20])  # distances travel unchanged


def test_the_question_changes_nothing() -> None:
    cands = [Candidate(f"c{i}", text, 0.2 + 0.05 * i) for i, text in
             enumerate(["обрезка смородины", "подкормка малины азотом", "полив голубики"])]
    orders = {tuple(r.id for r in NoRerank().rerank(q, cands)) for q in
              ("подкормка малины азотом", "голубика", "")}
    assert orders == {("c0", "c1", "c2")}


def test_the_default_top_k_is_ten() -> None:
    cands = [Candidate(f"c{i}", "", 0.01 * i) for i in range(15)]
    assert [r.id for r in NoRerank().rerank("q", cands)] == [f"c{i}" for i in range(10)]

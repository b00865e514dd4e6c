"""nodes/retrieval/rerankers/cross_encoder.py without any model download: which model is loaded, when,
how its scores become an order, and that a model that is not there is a clear error.

(tests/test_rerank.py runs a tiny random BERT through the real CrossEncoder.)
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nodes.retrieval.rerankers import get_reranker
from nodes.retrieval.rerankers.base import Candidate
from nodes.retrieval.rerankers.cross_encoder import CrossEncoderReranker


class FakeModel:
    """A CrossEncoder's `predict`: fixed scores per passage, every call recorded."""

    def __init__(self, scores: dict[str, Any]) -> None:
        self.scores = scores
        self.calls: list[tuple[list[tuple[str, str]], dict[str, Any]]] = []

    def predict(self, pairs: Sequence[tuple[str, str]], **options: Any) -> np.ndarray:
        self.calls.append((list(pairs), options))
        return np.array([self.scores[text] for _, text in pairs])


def cands(*texts: str) -> list[Candidate]:
    return [Candidate(f"c{i}", t, 0.1 + 0.01 * i) for i, t in enumerate(texts)]


def test_naming_a_model_loads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[tuple[str, dict[str, Any]]] = []
    fake = types.ModuleType("sentence_transformers")
    fake.CrossEncoder = lambda name, **kw: loads.append((name, kw)) or FakeModel({})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)

    stage = get_reranker("org/reranker-base", device="cuda:0")
    assert isinstance(stage, CrossEncoderReranker) and loads == []  # nothing until a question is asked
    first = stage.model
    assert stage.model is first  # loaded once
    assert loads == [("org/reranker-base", {"device": "cuda:0", "max_length": 512})]


def test_predict_is_asked_once_per_query_in_batches_without_a_progress_bar() -> None:
    model = FakeModel({"полив": 0.1, "подкормка азотом": 2.5, "обрезка": -1.0})
    stage = CrossEncoderReranker("local", batch_size=4, model=model)  # type: ignore[arg-type]
    out = stage.rerank("чем подкормить малину", cands("полив", "подкормка азотом", "обрезка"), top_k=2)
    assert [(r.id, r.score) for r in out] == [("c1", 2.5), ("c0", pytest.approx(0.1))]
    assert model.calls == [([("чем подкормить малину", "полив"), ("чем подкормить малину", "подкормка азотом"),
                             ("чем подкормить малину", "обрезка")], {"batch_size": 4, "show_progress_bar": False})]


def test_a_head_with_several_labels_scores_by_its_last_logit() -> None:
    model = FakeModel({"a": [5.0, -2.0], "b": [-5.0, 3.0], "c": [0.0, 0.0]})
    stage = CrossEncoderReranker("two-labels", model=model)  # type: ignore[arg-type]
    assert stage.scores("q", ["a", "b", "c"]).tolist() == [-2.0, 3.0, 0.0]
    assert [r.id for r in stage.rerank("q", cands("a", "b", "c"))] == ["c1", "c2", "c0"]


def test_no_passages_cost_no_model_call() -> None:
    model = FakeModel({})
    stage = CrossEncoderReranker("x", model=model)  # type: ignore[arg-type]
    assert stage.scores("q", []).shape == (0,) and stage.rerank("q", []) == []
    assert model.calls == []


def test_a_missing_model_folder_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing = tmp_path / "no-such-reranker"
    stage = get_reranker(str(missing))
    assert isinstance(stage, CrossEncoderReranker)  # naming it is fine …
    with pytest.raises(FileNotFoundError, match="no-such-reranker"):  # … using it says what is missing
        stage.rerank("q", cands("a"))

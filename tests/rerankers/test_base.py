"""nodes/retrieval/rerankers/base.py and the package's registry: what every stage shares, how stages are found."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import nodes.retrieval.rerankers as rerankers
from nodes.retrieval.rerankers import DEFAULT_OFFLINE_RERANKER, CrossEncoderReranker, get_reranker
from nodes.retrieval.rerankers.base import DEFAULT_TOP_K, Candidate, Ranked, Reranker, take
from nodes.retrieval.rerankers.bm25_fusion import BM25FusionReranker
from nodes.retrieval.rerankers.none import NoRerank


def test_first_stage_score_is_the_prior_or_the_cosine_similarity() -> None:
    assert Candidate("a", "t", distance=0.25).first_stage_score == pytest.approx(0.75)
    assert Candidate("b", "t", distance=0.25, prior=0.031).first_stage_score == pytest.approx(0.031)
    assert Candidate("c", "t", distance=0.9, prior=0.0).first_stage_score == 0.0  # a zero prior is still a prior


def test_take_sorts_by_score_and_keeps_top_k() -> None:
    cands = [Candidate(f"c{i}", f"text {i}", 0.1 * i) for i in range(5)]
    out = take(cands, [0.2, 0.9, -1.0, 0.5, 0.9], top_k=3)
    # Equal scores: the closer vector hit (lower distance) first.
    assert [r.id for r in out] == ["c1", "c4", "c3"]
    assert (out[0].id, out[0].text, out[0].score) == ("c1", "text 1", 0.9)
    assert out[0].distance == pytest.approx(0.1) and isinstance(out[0], Ranked)
    assert all(isinstance(r.score, float) for r in out)


def test_take_ties_on_score_and_distance_keep_the_input_order() -> None:
    cands = [Candidate(name, name, 0.3) for name in ("x", "y", "z")]
    assert [r.id for r in take(cands, np.array([1.0, 1.0, 1.0]), top_k=10)] == ["x", "y", "z"]


@pytest.mark.parametrize(("top_k", "count"), [(0, 0), (-4, 0), (2, 2), (99, 3)])
def test_take_never_returns_more_than_asked_or_available(top_k: int, count: int) -> None:
    cands = [Candidate(f"c{i}", "", 0.1) for i in range(3)]
    assert len(take(cands, [3.0, 2.0, 1.0], top_k)) == count


def test_every_registered_stage_meets_the_protocol_under_its_own_name() -> None:
    assert DEFAULT_TOP_K == 10
    assert set(rerankers.RERANKERS) == set(rerankers.RERANKER_NAMES)
    for name, make in rerankers.RERANKERS.items():
        stage = make()  # a constructor without arguments
        assert isinstance(stage, Reranker) and stage.name == name
    assert isinstance(CrossEncoderReranker("some/model"), Reranker)
    assert DEFAULT_OFFLINE_RERANKER in rerankers.RERANKERS


@pytest.mark.parametrize(("name", "kind"), [
    ("  NONE ", NoRerank), ("BM25-Fusion", BM25FusionReranker), ("   ", NoRerank),
    ("Default", BM25FusionReranker), ("DEFAULT", BM25FusionReranker)])
def test_names_are_trimmed_and_case_blind(name: str, kind: type) -> None:
    assert type(get_reranker(name)) is kind


def test_any_other_name_is_a_cross_encoder_on_the_device_asked_for() -> None:
    stage = get_reranker("  Org/Multilingual-Reranker ", device="cuda:1")
    assert isinstance(stage, CrossEncoderReranker)
    assert (stage.model_name, stage.name, stage.device) == ("Org/Multilingual-Reranker",) * 2 + ("cuda:1",)


@pytest.mark.parametrize("typo", ["bm25fusion", "cross-encoder", "bge-reranker-v2-m3"])
def test_a_name_that_is_no_stage_hub_id_or_folder_is_refused_with_the_choices(typo: str) -> None:
    """A typo in GROVE_RERANKER is said at start (`grove up`), not looked up on the hub at the
    first question."""
    with pytest.raises(ValueError, match=r"unknown reranker .*bm25-fusion, none"):
        get_reranker(typo)


def test_a_folder_is_a_cross_encoder(tmp_path: Path) -> None:
    assert rerankers.check_reranker(str(tmp_path)) == str(tmp_path)


@pytest.fixture
def extra_stage_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A second folder on the package's path, as if one more module were added to it."""
    monkeypatch.setattr(rerankers, "__path__", [*rerankers.__path__, str(tmp_path)])
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("nodes.retrieval.rerankers."):
            del sys.modules[name]


STAGE = '''
from nodes.retrieval.rerankers.base import take


class Reverse:
    name = "{name}"

    def rerank(self, query, candidates, top_k=10):
        return take(candidates, [c.distance for c in candidates], top_k)


RERANKER = Reverse
'''


def test_a_new_module_with_a_reranker_is_a_new_stage(extra_stage_dir: Path) -> None:
    (extra_stage_dir / "reverse_stage.py").write_text(STAGE.format(name="reverse"), encoding="utf-8")
    (extra_stage_dir / "helpers_only.py").write_text("X = 1\n", encoding="utf-8")  # no RERANKER: not a stage
    found = rerankers._discover()
    assert sorted(found) == ["bm25-fusion", "none", "reverse"]
    cands = [Candidate("near", "", 0.1), Candidate("far", "", 0.8)]
    assert [r.id for r in found["reverse"]().rerank("q", cands)] == ["far", "near"]


def test_two_stages_with_one_name_are_refused(extra_stage_dir: Path) -> None:
    (extra_stage_dir / "another_none.py").write_text(STAGE.format(name="none"), encoding="utf-8")
    with pytest.raises(RuntimeError, match=r"two plug-ins share a name: \['none'\]"):
        rerankers._discover()

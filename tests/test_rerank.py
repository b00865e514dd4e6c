"""Rerank stages: CrossEncoder plumbing, BM25-over-lemmas fusion, and late interaction (kept in bench/).

Fast: the CrossEncoder is a tiny random BERT built in a temp folder (nothing from a hub); the
late-interaction test uses the real EmbeddingGemma only when its folder exists.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from bench.late_interaction import LateInteractionReranker
from nodes.retrieval.rerankers import RERANKER_NAMES, Candidate, CrossEncoderReranker, get_reranker
from nodes.retrieval.rerankers.bm25_fusion import BM25FusionReranker, analyze, bm25_scores, fuse, minmax, ranks_desc
from nodes.retrieval.rerankers.none import NoRerank
from tests.support.prerequisites import require

MODEL_DIR = Path(__file__).resolve().parent.parent / ".grove" / "models" / "embeddinggemma-300m"


def _candidates(texts: list[str]) -> list[Candidate]:
    """Candidates in vector order: distances 0.10, 0.11, ..."""
    return [Candidate(f"c{i}", text, 0.10 + 0.01 * i) for i, text in enumerate(texts)]


# --------------------------------------------------------------------------- factory, no rerank


def test_factory_names() -> None:
    assert isinstance(get_reranker("none"), NoRerank)
    assert isinstance(get_reranker("bm25-fusion"), BM25FusionReranker)
    assert isinstance(get_reranker(""), NoRerank)
    assert RERANKER_NAMES == ("bm25-fusion", "none")  # found by the package, one module each
    other = get_reranker("someone/multilingual-reranker")
    assert isinstance(other, CrossEncoderReranker) and other.model_name == "someone/multilingual-reranker"
    assert get_reranker("default").name in RERANKER_NAMES


def test_no_rerank_keeps_vector_order_and_top_k() -> None:
    cands = _candidates([f"текст {i}" for i in range(30)])
    shuffled = [cands[i] for i in np.random.default_rng(0).permutation(30)]
    out = NoRerank().rerank("вопрос", shuffled, top_k=10)
    assert [r.id for r in out] == [f"c{i}" for i in range(10)]
    assert out[0].score == pytest.approx(0.90)
    assert NoRerank().rerank("вопрос", [], top_k=10) == []


# --------------------------------------------------------------------------- CrossEncoder plumbing


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer BERT sequence classifier with random weights and a toy vocabulary, saved locally."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    words = "как подкормить малину весной удобрение азот кусты обрезка осенью полив вода почва".split()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, *"абвгдеёжзийклмнопрстуфхцчшщъыьэюя?.,"]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True).save_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=128, num_labels=1,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    return folder


def test_cross_encoder_order_matches_predict(tiny_cross_encoder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from sentence_transformers import CrossEncoder

    texts = [
        "кусты малины весной", "полив вода почва", "азот удобрение", "обрезка осенью",
        "как подкормить малину", "почва", "малину весной подкормить азот", "вода",
        "кусты", "удобрение весной", "осенью полив", "малину", "азот кусты почва",
    ]
    query = "как подкормить малину весной?"
    stage = get_reranker(str(tiny_cross_encoder))
    assert isinstance(stage, CrossEncoderReranker)
    out = stage.rerank(query, _candidates(texts), top_k=10)

    reference = CrossEncoder(str(tiny_cross_encoder), device="cpu").predict([(query, t) for t in texts])
    expected = [f"c{i}" for i in np.argsort(-np.asarray(reference), kind="stable")[:10]]
    assert len(out) == 10
    assert [r.id for r in out] == expected
    assert [r.score for r in out] == pytest.approx(sorted(np.asarray(reference).tolist(), reverse=True)[:10], rel=1e-4)


# --------------------------------------------------------------------------- BM25 fusion


def test_lemmas_merge_inflections() -> None:
    assert analyze("малину") == analyze("малины") == analyze("Малина") == ["малина"]
    assert analyze("подкормку") == analyze("подкормки") == ["подкормка"]
    assert analyze("подкормите") == analyze("подкормил") == ["подкормить"]
    # Function words (prepositions, conjunctions, particles, pronouns) carry no topic.
    assert analyze("Как и чем мне подкормить её?") == ["подкормить"]


def test_bm25_fusion_lemmas_move_relevant_passage_up() -> None:
    query = "Как подкормить малину весной?"
    texts = [
        "Клубнику поливают тёплой водой и рыхлят почву между рядами.",
        "Смородину обрезают поздней осенью, удаляя старые ветви у самой земли.",
        "Яблоня плохо переносит застой воды, поэтому её сажают на возвышении.",
        # Relevant: no surface form in common with the query, only lemmas (малина, подкормить).
        "Кусты малины отзывчивы на удобрения: подкормите их азотом сразу после схода снега.",
        "Огурцы в теплице подвязывают к шпалере и прищипывают боковые побеги.",
    ]
    cands = _candidates(texts)
    assert [r.id for r in NoRerank().rerank(query, cands)][3] == "c3"

    lemma_stage = BM25FusionReranker(analyzer="pymorphy", fusion="linear", weight=0.5)
    out = lemma_stage.rerank(query, cands, top_k=3)
    assert out[0].id == "c3"

    # Without lemmatisation the passage shares no term with the query: BM25 has nothing to say.
    surface = BM25FusionReranker(analyzer="lower", fusion="linear", weight=0.5)
    assert surface.lexical_scores(query, texts)[3] == 0.0
    assert surface.rerank(query, cands, top_k=5)[0].id != "c3"

    # RRF with equal weights also lifts it (rank 4 -> at least rank 2 of 5).
    rrf_stage = BM25FusionReranker(analyzer="pymorphy", fusion="rrf", weight=0.5)
    assert [r.id for r in rrf_stage.rerank(query, cands)].index("c3") <= 1


def test_bm25_arithmetic() -> None:
    scores = bm25_scores(["a"], [["a", "b"], ["a"], ["c"]], k1=1.2, b=0.75)
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    avgdl = 4 / 3
    expected0 = idf * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / avgdl))
    expected1 = idf * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 1 / avgdl))
    assert scores == pytest.approx([expected0, expected1, 0.0])


def test_rrf_and_linear_fusion_arithmetic() -> None:
    vector = [0.9, 0.8, 0.7]
    lexical = [0.0, 5.0, 1.0]
    assert ranks_desc(lexical).tolist() == [3.0, 1.0, 2.0]
    fused = fuse(vector, lexical, method="rrf", weight=0.5, rrf_k=60)
    expected = [0.5 / 61 + 0.5 / 63, 0.5 / 62 + 0.5 / 61, 0.5 / 63 + 0.5 / 62]
    assert fused == pytest.approx(expected)
    assert int(np.argmax(fused)) == 1

    # Ties share the average rank, so an all-zero lexical score leaves the vector order alone.
    assert ranks_desc([0.0, 0.0, 0.0]).tolist() == [2.0, 2.0, 2.0]
    tied = fuse(vector, [0.0, 0.0, 0.0], method="rrf", weight=0.5)
    assert list(np.argsort(-tied)) == [0, 1, 2]

    linear = fuse(vector, lexical, method="linear", weight=0.3)
    assert minmax(vector) == pytest.approx([1.0, 0.5, 0.0])
    assert linear == pytest.approx(0.7 * np.array([1.0, 0.5, 0.0]) + 0.3 * np.array([0.0, 1.0, 0.2]))
    assert minmax([2.0, 2.0]).tolist() == [0.0, 0.0]


# --------------------------------------------------------------------------- late interaction


@pytest.fixture(scope="module")
def gemma_stage() -> LateInteractionReranker:
    if not (MODEL_DIR / "model.safetensors").exists():
        require(f"EmbeddingGemma not assembled at {MODEL_DIR} (run `make models`)")
    from bench.late_interaction import load_embedding_model

    # Pure MaxSim (no fusion with the vector score), so the test sees late interaction alone.
    return LateInteractionReranker(load_embedding_model(str(MODEL_DIR)), vector_weight=0.0)


@pytest.mark.models
def test_late_interaction_prompt_tokens_are_cut_exactly(gemma_stage: LateInteractionReranker) -> None:
    query = "Как зафиксировать пакет?"
    tokens = gemma_stage.content_tokens([query], gemma_stage.query_prompt)[0]
    ids = gemma_stage.model.tokenizer(gemma_stage.query_prompt + query)["input_ids"]
    kept = ids[gemma_stage._prompt_token_count(gemma_stage.query_prompt) : -1]
    assert gemma_stage.model.tokenizer.decode(kept).strip() == query
    assert len(tokens) == len(kept)


@pytest.mark.models
def test_late_interaction_relevant_outranks_irrelevant(gemma_stage: LateInteractionReranker) -> None:
    query = "Как запретить обновление пакета, чтобы сохранить его текущую версию?"
    relevant = (
        "Чтобы пакет не обновлялся, его можно зафиксировать: apt-mark hold имя_пакета. "
        "Зафиксированный пакет остаётся в текущей версии, пока фиксацию не снимут командой apt-mark unhold."
    )
    irrelevant = (
        "Сигнал SIGINT посылается процессу при нажатии Ctrl+C; обработчик по умолчанию завершает процесс."
    )
    # Vector order puts the irrelevant passage first; MaxSim alone must reverse it, with the
    # tokens as they come from the transformer and projected through the Dense layers alike.
    cands = [Candidate("bad", irrelevant, 0.30), Candidate("good", relevant, 0.31)]
    for project in (False, True):
        gemma_stage.project = project
        out = gemma_stage.rerank(query, cands, top_k=2)
        assert [r.id for r in out] == ["good", "bad"], project
        assert out[0].score > out[1].score
